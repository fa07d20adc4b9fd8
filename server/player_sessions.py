"""Which session of this node holds each player, and what a session's coming and going does to
the player's races.

A player's latest hello claims the player (`take_claim`): an earlier connection here closes
with 4003, and on several nodes the claim is announced to the others (`ClaimRelay`), whose
later claims replace it in turn. A race names the connection that holds each racer
(`Racer.holder`, `holder_of`): the player is marked back through it after a hello
(`mark_back`) and away when it closes (`disconnected`); a change is built to read the claim
when it is applied, since a newer hello may take it while the change waits for the race.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solrace.server.broker import Broker
from solrace.server.claims import Claim, ClaimRelay
from solrace.server.lobby import LobbyFeed
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import RaceEvent
from solrace.server.protocol.race import Race
from solrace.server.race_changes import Change
from solrace.server.race_sync import RaceKeeper
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session, holder_name, holder_of_session, node_of_holder
from solrace.server.watching import Watching


class PlayerSessions:
    """The sessions of node `node_id`'s players: `players` (shared with the `keeper`, which
    sends them their races' events), the session holding each player's claim, and, on several
    nodes (a `broker`), the `claims` relay settling one connection per player across them. A
    closed session is dropped from the `lobby`, from `watching` and by each of `closed_hooks`
    (services', through `Hub.plug_in`)."""

    def __init__(
        self,
        node_id: str,
        keeper: RaceKeeper,
        lobby: LobbyFeed,
        watching: Watching,
        players: dict[PlayerId, Session],
        *,
        broker: Broker | None,
        clock: Callable[[], int],
    ) -> None:
        self.node_id = node_id
        self.keeper = keeper
        self.lobby = lobby
        self.watching = watching
        self.clock = clock
        #: This node's named players' sessions (the latest one of each player), once their
        #: hello is through: they get their races' events.
        self.players = players
        #: The session holding each player's claim: its latest from the moment its hello is
        #: checked (a newer one closes it with 4003); `players` follows once that hello is
        #: through. Several nodes: `claims` settles it across them.
        self._claimants: dict[PlayerId, Session] = {}
        #: What services drop when a session closes, called in the order plugged in.
        self.closed_hooks: list[Callable[[Session], None]] = []
        #: Several nodes: one connection per player across them (4003 for the earlier).
        self.claims = (
            None
            if broker is None
            else ClaimRelay(
                broker,
                node_id,
                self.claimant_of,
                self._replaced_elsewhere,
                self._hold_races,
            )
        )

    async def change_each(
        self,
        runtimes: Sequence[RaceRuntime],
        change: Change,
        player_id: PlayerId,
        what: str,
        *,
        away: bool = False,
        through: str | None = None,
    ) -> None:
        """Apply `change` to each race about `player_id` (`away`: it marks the player away,
        `through` the connection it marks away); a race that refuses it (the store away, the
        race ended meanwhile) is logged ("race R: P not <what>") and the others go on."""
        for runtime in runtimes:
            await self.keeper.apply_or_log(
                runtime, change, player_id, what, away=away, through=through
            )

    async def mark_back(
        self, session: Session, player_id: PlayerId, runtimes: Sequence[RaceRuntime], now: int
    ) -> None:
        """The player of a welcomed `session` is back: each race of `runtimes` marks it
        connected through the connection holding its claim when the change is applied. Then,
        if `session` still holds the claim, it joins `players`: only now does it get its
        races' live events, and what happened before (its own return included) comes in
        order with the `Sync` that follows a welcome."""
        await self.change_each(
            runtimes, self.connected_here(player_id, now), player_id, "marked back"
        )
        if self._claimants.get(player_id) is session:
            self.players[player_id] = session

    async def take_claim(self, player_id: PlayerId, session: Session) -> None:
        """`session` is now the player's connection: an earlier one here closes (4003), and
        other nodes hear of it (`ClaimRelay`)."""
        # Claimed before any await: of two hellos with one token, the later replaces the
        # earlier even while the earlier is still marking its races (`_claimants`).
        old = self._claimants.get(player_id)
        self._claimants[player_id] = session
        if old is not None and old is not session:
            self.replace(old)
            if self.players.get(player_id) is old:
                del self.players[player_id]
        if self.claims is not None:
            # Announced before the welcome: a hello the client sends elsewhere after reading
            # it claims later, and replaces this connection.
            await self.claims.claim(player_id, session)

    @staticmethod
    def replace(session: Session) -> None:
        """Close `session`, replaced by a later connection of its player (4003): once its
        hello is answered (a client waiting for the welcome learns who it is, then why it
        closes); before, its hello closes it after the welcome."""
        if session.welcomed:
            session.close(CloseCode.REPLACED, "connected again elsewhere")

    async def disconnected(self, session: Session) -> None:
        session.closed = True
        self.lobby.unfollow(session)
        for hook in self.closed_hooks:
            hook(session)
        self.watching.closed(session)
        player_id = session.player_id
        if player_id is None or self._claimants.get(player_id) is not session:
            return  # anonymous, or replaced by a newer connection
        del self._claimants[player_id]
        self.players.pop(player_id, None)
        if self.claims is not None:
            self.claims.forget(player_id)
        away = self._gone_from_here(player_id, session, self.clock())
        await self.change_each(
            self.keeper.live_races_of(player_id),
            away,
            player_id,
            "marked away",
            away=True,
            through=self.holder_of(session),
        )

    async def _replaced_elsewhere(
        self, player_id: PlayerId, session: Session, claim: Claim
    ) -> None:
        """A connection of the player on another node (`claim`'s) came after `session`
        (`ClaimRelay`): `session` closes (4003) without marking the player away, and the
        races it held are handed to the new one, so that its close marks the player away
        (this node's hold of them may have been stored after the other node's)."""
        del self._claimants[player_id]
        if self.players.get(player_id) is session:
            del self.players[player_id]
        self.replace(session)
        old, new = self.holder_of(session), holder_of_session(claim.node, claim.session)
        await self.change_each(
            self.keeper.live_races_of(player_id),
            lambda race: race.hand_over(player_id, old, new),
            player_id,
            "handed over",
        )

    async def _hold_races(self, player_id: PlayerId, session: Session) -> None:
        """`session` is the player's latest connection across the nodes (`ClaimRelay`): its
        races name it as their holder, even if a hello on another node, applied after its
        own, named that one."""
        holder = self.holder_of(session)
        elsewhere = [
            runtime
            for runtime in self.keeper.live_races_of(player_id)
            if (racer := runtime.race.racers.get(player_id)) is not None
            and not (racer.connected and racer.holder == holder)
        ]
        back = self.connected_here(player_id, self.clock())
        await self.change_each(elsewhere, back, player_id, "marked back")

    def _gone_from_here(self, player_id: PlayerId, session: Session, now: int) -> Change:
        """The change marking the player away as `session`, its connection holding its claim
        here, closes: held through `session`, or through an earlier connection of this node
        that `session` replaced (the change naming `session` instead, refused by the store,
        may come after this one: the race may name that one still). Not when the race names a
        connection of another node (a later one, whose node marks the player), nor when a
        newer connection here holds the claim by then (it marks the player back)."""
        closing = self.holder_of(session)

        def change(race: Race) -> list[RaceEvent]:
            racer = race.racers.get(player_id)
            holder = closing
            if (
                racer is not None
                and racer.holder is not None
                and node_of_holder(racer.holder) == self.node_id
                and self._claimants.get(player_id) is None
            ):
                holder = racer.holder  # no connection of the player is open here
            return race.set_connected(player_id, False, now, holder)

        return change

    def connected_here(self, player_id: PlayerId, now: int) -> Change:
        """The change marking the player connected, through the connection holding the
        player's claim on this node when it is applied; nothing if none holds it by then (it
        closed, or a later connection on another node replaced it: that one's node marks the
        player connected through it)."""

        def change(race: Race) -> list[RaceEvent]:
            claimant = self._claimants.get(player_id)
            if claimant is None:
                return []
            return race.set_connected(player_id, True, now, self.holder_of(claimant))

        return change

    def claimant_holder(self, session: Session) -> str:
        """The holder to record for `session`'s player when a change is applied: the
        connection that holds the player's claim by then (a newer hello may have replaced
        `session` while its request waited for the race), else `session`'s own."""
        player_id = session.player_id
        claimant = self.claimant_of(player_id) if player_id is not None else None
        return self.holder_of(session if claimant is None else claimant)

    def claimant_of(self, player_id: PlayerId) -> Session | None:
        """The session holding the player's claim on this node (its latest hello), if any."""
        return self._claimants.get(player_id)

    def holder_of(self, session: Session) -> str:
        """The name of `session`'s connection in its races (`Racer.holder`): this node and
        the session, so a racer who reconnected elsewhere is not marked away from here."""
        return holder_name(self.node_id, session)


__all__ = ["PlayerSessions"]
