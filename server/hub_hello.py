"""Answering a hello: who it is (`Identities`), the player's live races and ratings read before
anything changes, the session identified, the player's claim taken (`PlayerSessions`), the
welcome, and the player marked back in its races; in that order, so that two hellos of one
player, here or on two nodes, never both hold the player.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from solrace.server.identities import Identities, Identity
from solrace.server.player_sessions import PlayerSessions
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Hello,
    RateBudgetInfo,
    Welcome,
)
from solrace.server.race_sync import RaceKeeper
from solrace.server.request_errors import send_error
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings

log = logging.getLogger("solrace.server.hub_hello")

#: A player's ratings as a welcome shows them (the ratings service's), by game.
RatingsOf = Callable[[PlayerId], Awaitable[dict[str, float]]]


class HelloHandler:
    """Answers `hello`: who it is through `identities`, the player's live races through
    `keeper`, its connection through `sessions`; its `ratings_of` gives a player's ratings
    for the welcome (a service's, through `Hub.plug_in`; None: no ratings shown)."""

    def __init__(
        self,
        identities: Identities,
        keeper: RaceKeeper,
        sessions: PlayerSessions,
        settings: Settings,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.identities = identities
        self.keeper = keeper
        self.sessions = sessions
        self.settings = settings
        self.clock = clock
        self.ratings_of: RatingsOf | None = None

    async def handle(self, session: Session, message: Hello) -> None:
        """Answer a hello, in this order. Each `await` lets other messages run meanwhile, a
        later hello of the same player among them (here, or on another node through
        `PlayerSessions.claims`); the order is what keeps two such hellos from both holding
        the player.

        1. `_refuse_hello`: a second hello on the connection, or another protocol, is refused
           (nothing awaited, nothing changed).
        2. `Identities.identify` (await: the store; a new name's player is created): who the
           hello is; a bad token closes the connection (4001), a name refused is a
           `RaceError` (`Hub._answer` sends it).
        3. `_read_for_welcome` (awaits: the store, the ratings service): the player's live
           races and ratings. Every await that may fail comes before anything changes, so a
           hello cut short by a store outage leaves no session half identified and may be
           sent again.
        4. `_identify_session` (no await): the session is identified, and the races the
           player still races in are noted for the welcome.
        5. `PlayerSessions.take_claim`: the session becomes the player's connection before its
           first await (an earlier one here is replaced: 4003, after its own welcome if it has
           not had it yet), then (several nodes) announces its claim (await: the broker).
           While it is announced, a later hello of the player, here or on another node, may
           take the claim from this session.
        6. `_send_welcome` (no await): the welcome, sent even to a session replaced in step
           5, so its client learns who it is before it learns why it closes.
        7. A session replaced by then closes now (4003) and marks no race: they are the later
           connection's. Otherwise `PlayerSessions.mark_back` (await: each race's change)
           marks the player connected in its races through this session, and a session that
           still holds the claim after that joins `players`, from when it gets its races' live
           events.
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
            await self.sessions.take_claim(player.player_id, session)
        self._send_welcome(session, identity.token, ratings, active, now)
        if player is not None:
            if self.sessions.claimant_of(player.player_id) is not session:
                # A later hello (here, or on another node: its claim came back while this
                # one's was announced) replaced it before its welcome: it closes now, after
                # it, and marks no race (they are the later connection's).
                self.sessions.replace(session)
                return
            await self.sessions.mark_back(session, player.player_id, runtimes, now)
        log.info("%s: hello from %s", session.label, session.name or "an anonymous spectator")

    def _refuse_hello(self, session: Session, message: Hello) -> bool:
        """Refuse a hello this connection may not say: a second one gets an error, one of
        another protocol closes the connection (4000). Whether it was refused."""
        if session.said_hello:
            send_error(session, ErrorCode.ALREADY_IDENTIFIED, "one hello per connection", message)
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
        ratings = {} if self.ratings_of is None else await self.ratings_of(player.player_id)
        return runtimes, ratings

    @staticmethod
    def _identify_session(
        session: Session, identity: Identity, runtimes: Sequence[RaceRuntime]
    ) -> list[RaceId]:
        """Mark `session` as having said hello, as `identity`'s player if any; the ids of the
        races of `runtimes` the player still races in (one it is out of: gone, resigned,
        finished, stuck, goes on without it, and taking it back would only be refused; one it
        left while the hello read its ratings no longer seats it)."""
        player = identity.player
        session.said_hello = True
        active = []
        for runtime in runtimes:
            racer = None if player is None else runtime.race.racers.get(player.player_id)
            if racer is not None and not racer.is_done:
                active.append(runtime.race_id)
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


__all__ = ["HelloHandler", "RatingsOf"]
