"""The hub: routes each client message to the pure race machines and the engine, persists,
then fans events out. It never decides a move's legality (the engine does) nor a race's
outcome (the race machine does); it moves data between them, the store and the sessions.

The hub routes every message to the part that answers it and is where a node's parts are
wired together, each with one job: the races this node holds (`RaceKeeper`, race_sync.py), the
moves (`MoveHandler`, hub_moves.py), the hello (`HelloHandler`, hub_hello.py) and who it is
(`Identities`, identities.py), which session holds each player and what its coming and going
changes (`PlayerSessions`, player_sessions.py; on several nodes one connection per player
across them, `ClaimRelay`, claims.py), the lobby's requests (`RaceRequests`,
race_requests.py), how many races a player and the server may have (`RaceQuota`,
race_quota.py), who watches which race and catching sessions up (`Watching`, watching.py,
asked through `WatchRequests`, watch_requests.py) and, on several nodes, the watch over which
nodes are alive (`NodePresence`, node_presence.py). A new race's checks and record are
race_setup.py's.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solrace.server.broker import Broker
from solrace.server.guesses import WrongGuess
from solrace.server.hub_hello import HelloHandler, RatingsOf
from solrace.server.hub_moves import MoveHandler
from solrace.server.identities import Identities
from solrace.server.lobby import LobbyFeed
from solrace.server.metrics import Metrics
from solrace.server.node_presence import NodePresence
from solrace.server.player_sessions import PlayerSessions
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    ClientMessage,
    CreateRace,
    GetReplay,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    Ping,
    Pong,
    RaceList,
    Resign,
    StartRace,
    Sync,
    Unwatch,
    Watch,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.race_finish_hooks import RaceFinishedHook
from solrace.server.race_quota import RaceQuota
from solrace.server.race_requests import RaceRequests
from solrace.server.race_sync import RaceKeeper
from solrace.server.replays import Replays
from solrace.server.request_errors import send_error
from solrace.server.routing import Handler, Routes
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store, StoreError
from solrace.server.watch_requests import WatchRequests
from solrace.server.watching import WatchCheck, Watching

log = logging.getLogger("solrace.server.hub")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Hub:
    """Every client message of one node. The races it holds, their changes, storage and
    delivery (one node, or several sharing Redis) are its `keeper`'s (`RaceKeeper`); moves
    its `moves`' (`MoveHandler`); hellos its `hello`'s (`HelloHandler`), and who says hello
    its `identities`' (`Identities`); which session holds each player its `sessions`'
    (`PlayerSessions`); the lobby's requests its `requests`' (`RaceRequests`); race quotas
    its `quota`'s (`RaceQuota`); spectators and catching up its `watching`'s (`Watching`,
    asked through `watch_requests`); which nodes are alive its `presence`'s
    (`NodePresence`)."""

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
        #: This node's named players' sessions (the latest one of each player), once their
        #: hello is through: they get their races' events (kept by `sessions`).
        self.players: dict[PlayerId, Session] = {}
        #: Who each hello is: a player by token or by name, or an anonymous spectator.
        self.identities = Identities(store, secret)
        #: Finished races' replays as sent, the most recently asked (a replay never changes).
        self.replays = Replays(store)
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
        #: Which session holds each player, and (several nodes) one connection per player
        #: across them (4003 for the earlier).
        self.sessions = PlayerSessions(
            self.node_id,
            self.keeper,
            self.lobby,
            self.watching,
            self.players,
            broker=broker,
            clock=self._now,
        )
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
                holder_of=self.sessions.holder_of,
                claimant_of=self.sessions.claimant_of,
                clock=self._now,
                secret=secret,
            )
        )
        self.hello = HelloHandler(
            self.identities, self.keeper, self.sessions, settings, clock=self._now
        )
        self.requests = RaceRequests(
            self.keeper,
            store,
            settings,
            self.lobby,
            self.quota,
            self.watching,
            self.sessions,
            rng=rng or random.SystemRandom(),
            clock=self._now,
        )
        self.watch_requests = WatchRequests(
            self.keeper, self.watching, self.replays, self.sessions, clock=self._now
        )
        #: The handler of each client message type: the hub's own, and services'.
        self._routes = Routes()
        self._routes.add(
            {
                ListRaces: self.requests.list_races,
                CreateRace: self.requests.create_race,
                JoinRace: self.requests.join_race,
                LeaveRace: self.requests.leave_race,
                StartRace: self.requests.start_race,
                MakeMove: self.moves.handle,
                Resign: self.requests.resign,
                Sync: self.watch_requests.sync,
                Watch: self.watch_requests.watch,
                Unwatch: self.watch_requests.unwatch,
                GetReplay: self.watch_requests.get_replay,
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
        if ratings_of is not None and self.hello.ratings_of is not None:
            raise ValueError("a service gives the ratings already")
        self._routes.add(handlers or {})
        if race_finished is not None:
            self.keeper.add_finish_hook(race_finished)
        if watch_check is not None:
            self.watching.add_check(watch_check)
        if session_closed is not None:
            self.sessions.closed_hooks.append(session_closed)
        if ratings_of is not None:
            self.hello.ratings_of = ratings_of

    def _now(self) -> int:
        """The hub's clock as its parts read it: whatever `clock` is now (tests set it after
        construction, and every part follows)."""
        return self.clock()

    @property
    def rng(self) -> random.Random:
        """The random numbers a new race's deal is drawn with (`RaceRequests.rng`); tests set
        a seeded one after construction."""
        return self.requests.rng

    @rng.setter
    def rng(self, rng: random.Random) -> None:
        self.requests.rng = rng

    async def _race_list(self) -> RaceList:
        """The lobby's list of live races (`RaceRequests.race_list`): the lobby feed is made
        before the keeper and the requests it reads through."""
        return await self.requests.race_list()

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self.presence is not None:
            # Alive before any session of ours is a racer's holder (`NodePresence.watch`).
            await self.presence.watch(self.clock())
        await self.keeper.start()
        if self.presence is not None:
            self.presence.start()
        if self.sessions.claims is not None:
            await self.sessions.claims.start()
        self.lobby.start()

    async def stop(self) -> None:
        await self.lobby.stop()
        if self.sessions.claims is not None:
            await self.sessions.claims.stop()
        if self.presence is not None:
            await self.presence.stop()
        await self.keeper.stop()

    # --- routing ---------------------------------------------------------------------------

    async def handle(self, session: Session, message: ClientMessage) -> None:
        """Answer one client message (already decoded and schema-checked)."""
        if isinstance(message, Ping):
            session.send(Pong(nonce=message.nonce, server_time_ms=self.clock()))
            return
        if isinstance(message, Hello):
            # A hello's refusals (`identify`) and store reads come before it changes anything:
            # one cut short by the store may be sent again.
            await self._answer(session, message, self.hello.handle, "store unavailable; retry")
            return
        if not session.said_hello:
            race_id: RaceId | None = getattr(message, "race_id", None)
            send_error(session, ErrorCode.HELLO_REQUIRED, "say hello first", message, race_id)
            return
        handler = self._routes.handler_of(message)
        if handler is None:
            send_error(session, ErrorCode.INVALID_MESSAGE, "not served here", message)
            return
        await self._answer(session, message, handler, "store unavailable")

    async def _answer(
        self, session: Session, message: ClientMessage, handler: Handler, outage_text: str
    ) -> None:
        """Run `handler` on `message`. A refusal (`RaceError`) is sent as the error it carries;
        a store outage (`StoreError`) is logged and sent as an `unavailable` error saying
        `outage_text`. Either error names the request, and the race the request names if any.
        A wrong guess of a secret that reaches the connection's limit (`guesses.WrongGuess`)
        closes it (1008) after its error."""
        race_id: RaceId | None = getattr(message, "race_id", None)
        try:
            await handler(session, message)
        except RaceError as exc:
            send_error(session, exc.code, exc.message, message, race_id)
            if isinstance(exc, WrongGuess) and exc.close_reason is not None:
                session.close(CloseCode.POLICY_VIOLATION, exc.close_reason)
        except StoreError as exc:
            log.warning("store unavailable for %s: %s", message.type, exc)
            send_error(session, ErrorCode.UNAVAILABLE, outage_text, message, race_id)

    # --- the transport's, the tournaments' and the tests' ------------------------------------

    def drained(self, session: Session) -> None:
        """`session`'s writes no longer back up: what it was passed over for meanwhile (the
        lobby list it follows) comes again, the newest."""
        self.lobby.drained(session)

    async def disconnected(self, session: Session) -> None:
        """`session` closed (`PlayerSessions.disconnected`)."""
        await self.sessions.disconnected(session)

    def claimant_of(self, player_id: PlayerId) -> Session | None:
        """The session holding the player's claim on this node (`PlayerSessions.claimant_of`)."""
        return self.sessions.claimant_of(player_id)

    def holder_of(self, session: Session) -> str:
        """The name of `session`'s connection in its races (`PlayerSessions.holder_of`)."""
        return self.sessions.holder_of(session)

    async def open_seated_race(
        self, record: RaceRecord, seated: Sequence[tuple[PlayerId, str]]
    ) -> None:
        """Open a race whose seats the server fills (`RaceRequests.open_seated_race`)."""
        await self.requests.open_seated_race(record, seated)

    @property
    def races(self) -> dict[RaceId, RaceRuntime]:
        """The races this node holds (`RaceKeeper.races`)."""
        return self.keeper.races

    async def tick(self) -> None:
        """Apply the races' due transitions now (`RaceKeeper.tick`)."""
        await self.keeper.tick()


__all__ = ["Hub", "wall_clock_ms"]
