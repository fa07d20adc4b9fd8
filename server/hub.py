"""The hub: routes each client message to the pure race machines and the engine, persists,
then fans events out. It never decides a move's legality (the engine does) nor a race's
outcome (the race machine does); it moves data between them, the store and the sessions.

The hub keeps the sessions (their hello, which connection holds each player), answers the
lobby's commands and routes every message; it is also where a node's parts are wired
together, each with one job: the races this node holds (`RaceKeeper`, race_sync.py), the
moves (`MoveHandler`, hub_moves.py), who a hello is (`Identities`, identities.py), how many
races a player and the server may have (`RaceQuota`, race_quota.py), who watches which race
and catching sessions up (`Watching`, watching.py) and, on several nodes, the watch over
which nodes are alive (`NodePresence`, node_presence.py) and one connection per player
(`ClaimRelay`, claims.py). A new race's checks and record are race_setup.py's.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from solrace.server.broker import Broker
from solrace.server.claims import Claim, ClaimRelay
from solrace.server.hub_moves import MoveHandler
from solrace.server.identities import Identities, Identity, identity_of
from solrace.server.lobby import LobbyFeed, race_list
from solrace.server.metrics import Metrics
from solrace.server.node_presence import NodePresence
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    ClientMessage,
    CreateRace,
    Error,
    GetReplay,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    Ping,
    Pong,
    RaceEvent,
    RaceInfo,
    RaceList,
    RateBudgetInfo,
    Resign,
    StartRace,
    Sync,
    Unwatch,
    Watch,
    Welcome,
)
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    RaceRecord,
)
from solrace.server.race_changes import Change
from solrace.server.race_finish_hooks import RaceFinishedHook
from solrace.server.race_quota import RaceQuota
from solrace.server.race_setup import (
    check_create_race,
    game_number_of,
    new_race_record,
)
from solrace.server.race_sync import RaceKeeper
from solrace.server.replays import Replays
from solrace.server.routing import Handler, Routes
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session, holder_name, holder_of_session, node_of_holder
from solrace.server.settings import Settings
from solrace.server.store import Store, StoreError
from solrace.server.watching import WatchCheck, Watching

log = logging.getLogger("solrace.server.hub")

#: A player's ratings as a welcome shows them (the ratings service's), by game.
RatingsOf = Callable[[PlayerId], Awaitable[dict[str, float]]]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Hub:
    """Every client message of one node. The races it holds, their changes, storage and
    delivery (one node, or several sharing Redis) are its `keeper`'s (`RaceKeeper`); moves
    its `moves`' (`MoveHandler`); who says hello its `identities`' (`Identities`); race
    quotas its `quota`'s (`RaceQuota`); spectators and catching up its `watching`'s
    (`Watching`); which nodes are alive its `presence`'s (`NodePresence`)."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        secret: bytes,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        rng: random.Random | None = None,
        broker: Broker | None = None,
    ) -> None:
        self.store = store
        self.node_id = secrets.token_hex(3)
        self.settings = settings
        self.metrics = metrics
        self.secret = secret
        #: The server clock (ms), which every part of the hub reads (through `_now`).
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        #: This node's named players' sessions (the latest one of each player), once their
        #: hello is through: they get their races' events.
        self.players: dict[PlayerId, Session] = {}
        #: The session holding each player's claim: its latest from the moment its hello is
        #: checked (a newer one closes it with 4003); `players` follows once that hello is
        #: through. Several nodes: `claims` settles it across them.
        self._claimants: dict[PlayerId, Session] = {}
        #: Who each hello is: a player by token or by name, or an anonymous spectator.
        self.identities = Identities(store, secret)
        #: Finished races' replays as sent, the most recently asked (a replay never changes).
        self.replays = Replays(store)
        # Services plugged in by the composition root (app.py: tournaments and ratings),
        # through `plug_in`: the hooks called with each session that closed, and a player's
        # ratings for the welcome (None: no ratings shown).
        self._session_closed_hooks: list[Callable[[Session], None]] = []
        self._ratings_of: RatingsOf | None = None
        self.lobby = LobbyFeed(
            self._race_list,
            settings.lobby_push_s,
            settings.lobby_poll_s if broker is not None else None,
        )
        self.keeper = RaceKeeper(
            store,
            settings,
            metrics,
            self.lobby,
            self.players,
            clock=self._now,
            broker=broker,
        )
        self.moves = MoveHandler(self.keeper, store, settings, metrics, clock=self._now)
        #: The open and live races a player, and this node, may have.
        self.quota = RaceQuota(self.keeper, settings)
        #: Who watches which race here, and catching a session up on a race's events.
        self.watching = Watching(self.keeper, self.keeper.delivery, clock=self._now)
        #: Several nodes: this node's presence and its watch over the others'.
        self.presence = (
            None
            if broker is None
            else NodePresence(
                self.node_id,
                broker,
                store,
                settings,
                self.keeper,
                self.players,
                holder_of=self.holder_of,
                claimant_of=self.claimant_of,
                clock=self._now,
                secret=secret,
            )
        )
        #: Several nodes: one connection per player across them (4003 for the earlier).
        self.claims = (
            None
            if broker is None
            else ClaimRelay(
                broker,
                self.node_id,
                self.claimant_of,
                self._replaced_elsewhere,
                self._hold_races,
            )
        )
        #: The handler of each client message type: the hub's own, and services'.
        self._routes = Routes()
        self._routes.add(
            {
                ListRaces: self._list_races,
                CreateRace: self._create_race,
                JoinRace: self._join_race,
                LeaveRace: self._leave_race,
                StartRace: self._start_race,
                MakeMove: self.moves.handle,
                Resign: self._resign,
                Sync: self._sync,
                Watch: self._watch,
                Unwatch: self._unwatch,
                GetReplay: self._get_replay,
            }
        )

    def plug_in(
        self,
        *,
        handlers: Mapping[type[Any], Handler] | None = None,
        race_finished: RaceFinishedHook | None = None,
        watch_check: WatchCheck | None = None,
        session_closed: Callable[[Session], None] | None = None,
        ratings_of: RatingsOf | None = None,
    ) -> None:
        """Plug a service (tournaments, ratings) in, in one call: the message types it
        answers; what it does once this node finishes a race (the hooks run in the order
        plugged in); a check that may refuse a session a race to watch (`RaceError`); what it
        drops when a session closes; a player's ratings for the welcome. `ValueError`, and
        nothing plugged in, if a message type has a handler already (the hub's or another
        service's) or another service gives the ratings."""
        if ratings_of is not None and self._ratings_of is not None:
            raise ValueError("a service gives the ratings already")
        self._routes.add(handlers or {})
        if race_finished is not None:
            self.keeper.add_finish_hook(race_finished)
        if watch_check is not None:
            self.watching.add_check(watch_check)
        if session_closed is not None:
            self._session_closed_hooks.append(session_closed)
        if ratings_of is not None:
            self._ratings_of = ratings_of

    def _now(self) -> int:
        """The hub's clock as its parts read it: whatever `clock` is now (tests set it after
        construction, and every part follows)."""
        return self.clock()

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self.presence is not None:
            # Alive before any session of ours is a racer's holder (`NodePresence.watch`).
            await self.presence.watch(self.clock())
        await self.keeper.start()
        if self.presence is not None:
            self.presence.start()
        if self.claims is not None:
            await self.claims.start()
        self.lobby.start()

    async def stop(self) -> None:
        await self.lobby.stop()
        if self.claims is not None:
            await self.claims.stop()
        if self.presence is not None:
            await self.presence.stop()
        await self.keeper.stop()

    # --- plumbing --------------------------------------------------------------------------

    def _error(
        self,
        session: Session,
        code: ErrorCode,
        message: str,
        request: ClientMessage | None = None,
        race_id: RaceId | None = None,
    ) -> None:
        session.send(
            Error(
                code=code.value,
                message=message,
                request=None if request is None else request.type,
                race_id=race_id,
            )
        )

    async def _runtime(self, requested: str) -> RaceRuntime:
        """The race a client's request names (its id as sent: it becomes a `RaceId` here)."""
        race_id = RaceId(requested)
        runtime = await self.keeper.load_race(race_id)
        if runtime is None:
            raise RaceError(ErrorCode.UNKNOWN_RACE, f"no live race {race_id!r}")
        return runtime

    async def _change_each(
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

    # --- routing ---------------------------------------------------------------------------

    async def handle(self, session: Session, message: ClientMessage) -> None:
        """Answer one client message (already decoded and schema-checked)."""
        if isinstance(message, Ping):
            session.send(Pong(nonce=message.nonce, server_time_ms=self.clock()))
            return
        if isinstance(message, Hello):
            # A hello's refusals (`identify`) and store reads come before it changes anything:
            # one cut short by the store may be sent again.
            await self._answer(session, message, self._hello, "store unavailable; retry")
            return
        if not session.said_hello:
            self._error(session, ErrorCode.HELLO_REQUIRED, "say hello first", message)
            return
        handler = self._routes.handler_of(message)
        if handler is None:
            self._error(session, ErrorCode.INVALID_MESSAGE, "not served here", message)
            return
        await self._answer(session, message, handler, "store unavailable")

    async def _answer(
        self, session: Session, message: ClientMessage, handler: Handler, outage_text: str
    ) -> None:
        """Run `handler` on `message`. A refusal (`RaceError`) is sent as the error it carries;
        a store outage (`StoreError`) is logged and sent as an `unavailable` error saying
        `outage_text`. Either error names the request, and the race the request names if any."""
        race_id: RaceId | None = getattr(message, "race_id", None)
        try:
            await handler(session, message)
        except RaceError as exc:
            self._error(session, exc.code, exc.message, message, race_id)
        except StoreError as exc:
            log.warning("store unavailable for %s: %s", message.type, exc)
            self._error(session, ErrorCode.UNAVAILABLE, outage_text, message, race_id)

    # --- hello -----------------------------------------------------------------------------

    async def _hello(self, session: Session, message: Hello) -> None:
        """Answer a hello, in this order. Each `await` lets other messages run meanwhile, a
        later hello of the same player among them (here, or on another node through
        `claims`); the order is what keeps two such hellos from both holding the player.

        1. `_refuse_hello`: a second hello on the connection, or another protocol, is refused
           (nothing awaited, nothing changed).
        2. `Identities.identify` (await: the store; a new name's player is created): who the
           hello is; a bad token closes the connection (4001), a name refused is a
           `RaceError` (`_answer` sends it).
        3. `_read_for_welcome` (awaits: the store, the ratings service): the player's live
           races and ratings. Every await that may fail comes before anything changes, so a
           hello cut short by a store outage leaves no session half identified and may be
           sent again.
        4. `_identify_session` (no await): the session is identified, and the races the
           player still races in are noted for the welcome.
        5. `_take_claim`: the session becomes the player's connection before its first await
           (an earlier one here is replaced: 4003, after its own welcome if it has not had
           it yet), then (several nodes) announces its claim (await: the broker). While it
           is announced, a later hello of the player, here or on another node, may take the
           claim from this session.
        6. `_send_welcome` (no await): the welcome, sent even to a session replaced in step
           5, so its client learns who it is before it learns why it closes.
        7. A session replaced by then closes now (4003) and marks no race: they are the later
           connection's. Otherwise `_mark_back` (await: each race's change) marks the player
           connected in its races through this session, and a session that still holds the
           claim after that joins `players`, from when it gets its races' live events.
        """
        if self._refuse_hello(session, message):
            return
        now = self.clock()
        identity = await self.identities.identify(session, message, now)
        if identity is None:
            session.close(CloseCode.AUTH_FAILED, "bad token")
            return
        runtimes, ratings = await self._read_for_welcome(identity)
        active = self._identify_session(session, identity, runtimes)
        player = identity.player
        if player is not None:
            await self._take_claim(player.player_id, session)
        self._send_welcome(session, identity.token, ratings, active, now)
        if player is not None:
            if self._claimants.get(player.player_id) is not session:
                # A later hello (here, or on another node: its claim came back while this
                # one's was announced) replaced it before its welcome: it closes now, after
                # it, and marks no race (they are the later connection's).
                self._replace(session)
                return
            await self._mark_back(session, player.player_id, runtimes, now)
        log.info("hello from %s", session.name or "an anonymous spectator")

    def _refuse_hello(self, session: Session, message: Hello) -> bool:
        """Refuse a hello this connection may not say: a second one gets an error, one of
        another protocol closes the connection (4000). Whether it was refused."""
        if session.said_hello:
            self._error(session, ErrorCode.ALREADY_IDENTIFIED, "one hello per connection", message)
            return True
        if message.protocol != PROTOCOL_VERSION:
            session.close(CloseCode.UNSUPPORTED_PROTOCOL, f"protocol {PROTOCOL_VERSION} only")
            return True
        return False

    async def _read_for_welcome(
        self, identity: Identity
    ) -> tuple[list[RaceRuntime], dict[str, float]]:
        """The live races and the ratings of the hello's player, read before anything
        changes; none for an anonymous spectator, nor for a player just created: it has none,
        and a read failing after its name was made would leave a name whose token was never
        sent."""
        player = identity.player
        if player is None or identity.is_new:
            return [], {}
        runtimes = await self.keeper.load_live_races_of(player.player_id)
        ratings = {} if self._ratings_of is None else await self._ratings_of(player.player_id)
        return runtimes, ratings

    @staticmethod
    def _identify_session(
        session: Session, identity: Identity, runtimes: Sequence[RaceRuntime]
    ) -> list[RaceId]:
        """Mark `session` as having said hello, as `identity`'s player if any; the ids of the
        races of `runtimes` the player still races in (one it is out of: gone, resigned,
        finished, stuck, goes on without it, and taking it back would only be refused)."""
        player = identity.player
        session.said_hello = True
        active = [
            runtime.race_id
            for runtime in runtimes
            if player is not None and not runtime.race.racers[player.player_id].is_done
        ]
        if player is not None:
            session.player_id = player.player_id
            session.name = player.name
        return active

    def _send_welcome(
        self,
        session: Session,
        token: str | None,
        ratings: dict[str, float],
        active: list[RaceId],
        now: int,
    ) -> None:
        """Send `session` its welcome: who it is, its `token`, `ratings` and `active` races,
        the server time `now` and the rate budget; from then on it counts as welcomed."""
        session.send(
            Welcome(
                protocol=PROTOCOL_VERSION,
                player_id=session.player_id,
                name=session.name,
                token=token,
                ratings=ratings,
                active_races=active,
                server_time_ms=now,
                rate=RateBudgetInfo(
                    capacity=self.settings.rate_capacity,
                    refill_per_s=self.settings.rate_refill_per_s,
                ),
            )
        )
        session.welcomed = True

    async def _mark_back(
        self, session: Session, player_id: PlayerId, runtimes: Sequence[RaceRuntime], now: int
    ) -> None:
        """The player of a welcomed `session` is back: each race of `runtimes` marks it
        connected through the connection holding its claim when the change is applied. Then,
        if `session` still holds the claim, it joins `players`: only now does it get its
        races' live events, and what happened before (its own return included) comes in
        order with the `Sync` that follows a welcome."""
        await self._change_each(
            runtimes, self._connected_here(player_id, now), player_id, "marked back"
        )
        if self._claimants.get(player_id) is session:
            self.players[player_id] = session

    # --- sessions and claims ---------------------------------------------------------------

    async def _take_claim(self, player_id: PlayerId, session: Session) -> None:
        """`session` is now the player's connection: an earlier one here closes (4003), and
        other nodes hear of it (`ClaimRelay`)."""
        # Claimed before any await: of two hellos with one token, the later replaces the
        # earlier even while the earlier is still marking its races (`_claimants`).
        old = self._claimants.get(player_id)
        self._claimants[player_id] = session
        if old is not None and old is not session:
            self._replace(old)
            if self.players.get(player_id) is old:
                del self.players[player_id]
        if self.claims is not None:
            # Announced before the welcome: a hello the client sends elsewhere after reading
            # it claims later, and replaces this connection.
            await self.claims.claim(player_id, session)

    @staticmethod
    def _replace(session: Session) -> None:
        """Close `session`, replaced by a later connection of its player (4003): once its
        hello is answered (a client waiting for the welcome learns who it is, then why it
        closes); before, its hello closes it after the welcome."""
        if session.welcomed:
            session.close(CloseCode.REPLACED, "connected again elsewhere")

    def drained(self, session: Session) -> None:
        """`session`'s writes no longer back up: what it was passed over for meanwhile (the
        lobby list it follows) comes again, the newest."""
        self.lobby.drained(session)

    async def disconnected(self, session: Session) -> None:
        session.closed = True
        self.lobby.unfollow(session)
        for hook in self._session_closed_hooks:
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
        await self._change_each(
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
        self._replace(session)
        old, new = self.holder_of(session), holder_of_session(claim.node, claim.session)
        await self._change_each(
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
        back = self._connected_here(player_id, self.clock())
        await self._change_each(elsewhere, back, player_id, "marked back")

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

    def _connected_here(self, player_id: PlayerId, now: int) -> Change:
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

    def _claimant_holder(self, session: Session) -> str:
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

    # --- lobby -----------------------------------------------------------------------------

    async def _live_race_infos(self) -> list[RaceInfo]:
        if self.keeper.is_cluster:
            records = await self.store.list_races(LIVE_STATUSES)
            return [Race(r, "", 1).info() for r in records]
        return [rt.race.info() for rt in self.keeper.races.values() if rt.race.is_live]

    async def _race_list(self) -> RaceList:
        return race_list(await self._live_race_infos())

    async def _list_races(self, session: Session, message: ListRaces) -> None:
        races, frame = await self.lobby.current()
        session.send_frame(frame)
        if message.follow:
            self.lobby.follow(session, races)
        else:
            self.lobby.unfollow(session)

    async def _create_race(self, session: Session, message: CreateRace) -> None:
        player_id, name = identity_of(session)
        check_create_race(self.settings, message)
        with self.quota.reserve(player_id):
            await self._create_checked_race(session, message, player_id, name)

    async def _create_checked_race(
        self, session: Session, message: CreateRace, player_id: PlayerId, name: str
    ) -> None:
        number = game_number_of(message, self.rng)
        now = self.clock()
        record = new_race_record(
            self.settings,
            RaceId("r" + secrets.token_hex(5)),
            game=message.game,
            game_number=number,
            seats=message.seats,
            time_limit_s=message.time_limit_s,
            rated=message.rated,
            invite_code=message.invite_code,
            creator=player_id,
            now_ms=now,
            deal_chosen=message.game_number is not None,
        )
        await self.keeper.store_new_race(
            record,
            lambda race: race.join(
                player_id, name, message.invite_code, now, self._claimant_holder(session)
            ),
            created_by=player_id,
        )
        log.info("%s created race %s (%s)", name, record.race_id, record.game)

    async def _join_race(self, session: Session, message: JoinRace) -> None:
        player_id, name = identity_of(session)
        runtime = await self._runtime(message.race_id)
        if player_id not in runtime.race.racers:  # a seat already held is resumed, not taken
            self.quota.check_races_of(player_id)
        now = self.clock()
        await self.keeper.apply_to_race(
            runtime,
            lambda race: race.join(
                player_id, name, message.invite_code, now, self._claimant_holder(session)
            ),
        )
        # A racer does not watch its own race: one that watched it first stops watching.
        self.watching.unwatch(session, runtime)

    async def _leave_race(self, session: Session, message: LeaveRace) -> None:
        player_id, _ = identity_of(session)
        runtime = await self._runtime(message.race_id)
        now = self.clock()
        events = await self.keeper.apply_to_race(runtime, lambda race: race.leave(player_id, now))
        for event in events:
            session.send(event)  # no longer a racer, so not among the recipients
        session.versions.pop(runtime.race_id, None)  # nor does it follow the race any more

    async def _start_race(self, session: Session, message: StartRace) -> None:
        player_id, _ = identity_of(session)
        runtime = await self._runtime(message.race_id)
        now = self.clock()
        await self.keeper.apply_to_race(runtime, lambda race: race.request_start(player_id, now))

    async def open_seated_race(
        self, record: RaceRecord, seated: Sequence[tuple[PlayerId, str]]
    ) -> None:
        """Open a race whose seats the server fills (a tournament's): every (player id, name)
        is seated with the record's invite code, so the countdown starts at once; the grace of
        a seated player not connected here runs from now. An existing race id is left alone."""
        if record.race_id in self.keeper.races or await self.store.get_race(record.race_id):
            return
        now = self.clock()
        here = {p: self.holder_of(s) for p, s in self.players.items()}

        def seat(race: Race) -> list[RaceEvent]:
            events: list[RaceEvent] = []
            for player_id, name in seated:
                events += race.join(player_id, name, record.invite_code, now)
            for player_id, _ in seated:
                connected = player_id in here
                events += race.set_connected(player_id, connected, now, here.get(player_id))
            return events

        await self.keeper.store_new_race(record, seat)

    # --- racing (moves: MoveHandler) -------------------------------------------------------

    async def _resign(self, session: Session, message: Resign) -> None:
        player_id, _ = identity_of(session)
        runtime = await self._runtime(message.race_id)
        now = self.clock()
        await self.keeper.apply_to_race(runtime, lambda race: race.resign(player_id, now))

    # --- watching, resync and replays (Watching) -------------------------------------------

    async def _watch(self, session: Session, message: Watch) -> None:
        runtime = await self._runtime(message.race_id)
        await self.watching.watch(session, runtime, None, None)

    async def _unwatch(self, session: Session, message: Unwatch) -> None:
        runtime = await self._runtime(message.race_id)
        self.watching.unwatch(session, runtime)

    async def _sync(self, session: Session, message: Sync) -> None:
        runtime = await self._runtime(message.race_id)
        player_id = session.player_id
        if player_id is None or player_id not in runtime.race.racers:
            await self.watching.watch(session, runtime, message.epoch, message.since_version)
            return
        await self.watching.resync(session, runtime, message.epoch, message.since_version)
        # A racer resyncing here is connected here, even if no hello announced it to this race
        # (a tournament race opened on another node): otherwise its grace period would run out.
        connected = self._connected_here(player_id, self.clock())
        await self._change_each([runtime], connected, player_id, "marked connected")

    async def _get_replay(self, session: Session, message: GetReplay) -> None:
        session.send_frame(await self.replays.frame_of(RaceId(message.race_id)))

    # --- the keeper's, for tests and bench/ ---------------------------------------------------

    @property
    def races(self) -> dict[RaceId, RaceRuntime]:
        """The races this node holds (`RaceKeeper.races`)."""
        return self.keeper.races

    async def tick(self) -> None:
        """Apply the races' due transitions now (`RaceKeeper.tick`)."""
        await self.keeper.tick()


__all__ = ["Hub", "wall_clock_ms"]
