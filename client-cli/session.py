"""A player's session: one connection, the state it feeds, and requests that wait for answers.

`Session.pump()` reads the connection forever, folds each message into `ClientState` and tells
listeners (the plain mode prints, the Textual app refreshes). Requests (`create_race`,
`join_race`, `move`, ...) send one message and wait for the answer that settles it, so the
plain mode and tests read as a sequence of steps.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from solrace.engine import EngineError, Move
from solrace.server.protocol.messages import (
    ClientMessage,
    CreateRace,
    Error,
    GetReplay,
    JoinRace,
    LeaveRace,
    ListRaces,
    MoveAck,
    MoveRejected,
    RaceInfo,
    RaceList,
    RaceUpdate,
    Replay,
    ReplayModel,
    Resign,
    ServerMessage,
    StartRace,
    Unwatch,
    Watch,
)
from solrace.server.protocol.tournament_messages import TournamentView

from .boards import check_move
from .connection import Connection, Incoming, LinkStatus, StatusChange
from .state import ClientState

Listener = Callable[[Incoming], None]
Predicate = Callable[[ServerMessage], bool]


def tournament_view_of(tournament_id: str) -> Predicate:
    """Accepts one tournament's `tournament_view` (the answer to joining or watching it)."""

    def check(message: ServerMessage) -> bool:
        return (
            isinstance(message, TournamentView)
            and message.tournament.tournament_id == tournament_id
        )

    return check


class RequestError(Exception):
    """The server refused a request (`code` from the protocol's error table)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class MoveOutcome:
    """A move's fate: accepted (`ack`), or refused with a reason (locally or by the server)."""

    move: str
    ack: MoveAck | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.ack is not None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Session:
    def __init__(self, conn: Connection, state: ClientState | None = None) -> None:
        self.conn = conn
        self.state = state or ClientState()
        if conn.welcome is not None:
            self.state.apply(conn.welcome)
        self.listeners: list[Listener] = []
        self.link = LinkStatus.CONNECTED
        self._waiters: list[tuple[Predicate, asyncio.Future[ServerMessage]]] = []

    # --- reading -------------------------------------------------------------------------

    async def pump(self) -> None:
        """Read forever (until the link is closed for good)."""
        while True:
            incoming = await self.conn.recv()
            self.dispatch(incoming)
            if isinstance(incoming, StatusChange) and incoming.status is LinkStatus.CLOSED:
                for _, future in self._waiters:
                    if not future.done():
                        future.set_exception(ConnectionError(incoming.detail))
                return

    def dispatch(self, incoming: Incoming) -> None:
        if isinstance(incoming, StatusChange):
            self.link = incoming.status
        else:
            self.state.apply(incoming, _now_ms())
            self.state.clock_offset_ms = self.conn.clock_offset_ms
            for predicate, future in list(self._waiters):
                if not future.done() and predicate(incoming):
                    future.set_result(incoming)
            self._waiters = [(p, f) for p, f in self._waiters if not f.done()]
        for listener in list(self.listeners):
            listener(incoming)

    async def request(
        self, message: ClientMessage, until: Predicate, timeout_s: float = 10.0
    ) -> ServerMessage:
        """Send `message`, then wait for the first message `until` accepts, or its error."""
        kind = message.type
        race_id = getattr(message, "race_id", None)

        def settles(reply: ServerMessage) -> bool:
            if isinstance(reply, Error) and reply.request == kind:
                return reply.race_id is None or race_id is None or reply.race_id == race_id
            return until(reply)

        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters.append((settles, future))
        await self.conn.send(message)
        reply = await asyncio.wait_for(future, timeout_s)
        if isinstance(reply, Error):
            raise RequestError(reply.code, reply.message)
        return reply

    async def wait_for(self, until: Predicate, timeout_s: float = 10.0) -> ServerMessage:
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters.append((until, future))
        return await asyncio.wait_for(future, timeout_s)

    # --- requests ------------------------------------------------------------------------

    @property
    def me(self) -> str | None:
        return self.state.player_id

    async def list_races(self, *, follow: bool = False) -> list[RaceInfo]:
        """The live races; with `follow`, the server sends the list again on every change
        (the state's lobby follows) until a later call without it."""
        reply = await self.request(ListRaces(follow=follow), lambda m: isinstance(m, RaceList))
        assert isinstance(reply, RaceList)
        return list(reply.races)

    async def create_race(
        self,
        game: str,
        seats: int = 2,
        time_limit_s: int = 600,
        *,
        rated: bool = False,
        invite_code: str | None = None,
        game_number: str | None = None,
    ) -> str:
        me = self.me

        def created(m: ServerMessage) -> bool:
            return (
                isinstance(m, RaceUpdate)
                and m.race.creator == me
                and m.race.status == "open"
                and m.race_id not in known
            )

        known = set(self.state.races)
        reply = await self.request(
            CreateRace(
                game=game,
                seats=seats,
                time_limit_s=time_limit_s,
                rated=rated,
                invite_code=invite_code,
                game_number=game_number,
            ),
            created,
        )
        assert isinstance(reply, RaceUpdate)
        return reply.race_id

    async def join_race(self, race_id: str, invite_code: str | None = None) -> None:
        me = self.me
        await self.request(
            JoinRace(race_id=race_id, invite_code=invite_code),
            lambda m: (
                isinstance(m, RaceUpdate)
                and m.race_id == race_id
                and any(r.player_id == me for r in m.race.racers)
            ),
        )

    async def leave_race(self, race_id: str) -> None:
        await self.conn.send(LeaveRace(race_id=race_id))

    async def start_race(self, race_id: str) -> None:
        await self.request(
            StartRace(race_id=race_id),
            lambda m: (
                isinstance(m, RaceUpdate) and m.race_id == race_id and m.race.status != "open"
            ),
        )

    async def resign(self, race_id: str) -> None:
        await self.conn.send(Resign(race_id=race_id))

    async def watch(self, race_id: str) -> None:
        await self.conn.send(Watch(race_id=race_id))

    async def unwatch(self, race_id: str) -> None:
        await self.conn.send(Unwatch(race_id=race_id))

    async def get_replay(self, race_id: str) -> ReplayModel:
        reply = await self.request(
            GetReplay(race_id=race_id),
            lambda m: isinstance(m, Replay) and m.replay.race_id == race_id,
        )
        assert isinstance(reply, Replay)
        return reply.replay

    def check(self, race_id: str, text: str) -> str | None:
        """Why `text` cannot be played now on the own board, or None."""
        try:
            move = Move.parse(text)
        except EngineError as exc:
            return str(exc)
        board = self.state.my_board(race_id)
        if board is None:
            return "no board yet: the race has not started"
        if any(p.race_id == race_id for p in self.conn.pending.values()):
            return None  # the board is about to change; let the server judge
        return check_move(board, move)

    async def move(self, race_id: str, text: str, timeout_s: float = 30.0) -> MoveOutcome:
        """Check locally, send, and wait for the ack or the refusal."""
        reason = self.check(race_id, text)
        if reason is not None:
            return MoveOutcome(text, reason=reason)
        canonical = str(Move.parse(text))
        seq = await self.conn.send_move(race_id, canonical)
        reply = await self.wait_for(
            lambda m: isinstance(m, MoveAck | MoveRejected) and m.seq == seq, timeout_s
        )
        if isinstance(reply, MoveAck):
            return MoveOutcome(canonical, ack=reply)
        assert isinstance(reply, MoveRejected)
        return MoveOutcome(canonical, reason=reply.reason)

    async def send_move(self, race_id: str, text: str) -> str | None:
        """Check locally and send without waiting (the app); the reason if refused here."""
        reason = self.check(race_id, text)
        if reason is not None:
            return reason
        await self.conn.send_move(race_id, str(Move.parse(text)))
        return None
