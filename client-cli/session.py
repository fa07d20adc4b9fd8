"""A player's session: one connection, the state it feeds, and requests that wait for answers.

`Session.running(conn)` starts a session on a connected `Connection` with its pump, which reads
the connection forever, folds each message into `ClientState` and tells
listeners (the plain mode prints, the Textual app refreshes). Requests (`create_race`,
`join_race`, `move`, ...) send one message and wait for the answer that settles it, so the
plain mode and tests read as a sequence of steps. Once the link is closed for good (4003: the
player connected again elsewhere; 4001...), every request and wait fails at once with
`LinkClosedError`, a `RequestError`.

A reader with no pump (a bot reads its connection itself, between its moves; a one-shot
`solrace tournament` command reads its own with `reader_of`) makes its requests with
`request_reading`: the same answer (`answer_to`), the same timeout (`REQUEST_TIMEOUT_S`), and
a seat taken back the same way when a join is refused as `already_joined` (`join_or_resume`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from solrace.engine import EngineError, Move
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    ClientMessage,
    CreateRace,
    Error,
    GetReplay,
    JoinRace,
    LeaveRace,
    ListRaces,
    MoveAck,
    MoveRejected,
    Progress,
    RaceInfo,
    RaceList,
    RaceSnapshot,
    RaceUpdate,
    Replay,
    ReplayModel,
    Resign,
    ServerMessage,
    StartRace,
    Sync,
    Unwatch,
    Watch,
)
from solrace.server.protocol.tournament_messages import TournamentView
from solrace.tasks import cancel_and_wait

from .boards import check_move
from .connection import Connection
from .defaults import server_option
from .link_status import Incoming, LinkStatus, StatusChange
from .races_to_learn import RacesToLearn
from .refusals import join_refusal_message, refusal_text
from .state import ClientState, RaceState
from .tournament_args import validation_text

Listener = Callable[[Incoming], None]
Predicate = Callable[[ServerMessage], bool]
#: Reads the next message for `request_reading`, waiting at most the seconds it is given (None:
#: as long as it takes), and handles it (a bot folds it into its state); None if nothing came
#: (or the link changed).
Reader = Callable[[float | None], Awaitable[ServerMessage | None]]

#: Seconds a request waits for its answer (unless its caller has a reason to wait less).
REQUEST_TIMEOUT_S = 10.0
#: Syncs a race gets in a row for boards the client had to ignore (`RaceState.unusable`)
#: before a usable board of it comes: a server that keeps sending such boards is not asked
#: again and again.
MAX_BOARD_SYNCS: Final = 3

#: Why there is no own board yet, before the race's start (or with no news of the race).
NO_BOARD_BEFORE_START: Final = "no board yet: the race has not started"
#: Why there is no own board yet once the race runs: the server sends it at the start (and
#: with every sync's answer), and it has not come yet.
NO_BOARD_RUNNING: Final = "the race is running but your board has not come yet: moves once it shows"


def tournament_view_of(tournament_id: str) -> Predicate:
    """Accepts one tournament's `tournament_view` (the answer to joining or watching it)."""

    def check(message: ServerMessage) -> bool:
        return (
            isinstance(message, TournamentView)
            and message.tournament.tournament_id == tournament_id
        )

    return check


class MoveTimeoutError(TimeoutError):
    """No answer to the move numbered `seq` in time (it stays pending: it is sent again until
    the server answers, and that answer comes later)."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"no answer yet to move {seq}")
        self.seq = seq


class RequestError(Exception):
    """The server refused a request (`code` from the protocol's error table)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(refusal_text(code, message))
        self.code = code
        self.message = message


M = TypeVar("M", bound=BaseModel)

#: How a refusal of `client_message` names the fields a person types.
TYPED_FIELDS: Final = {
    "race_id": "race id",
    "invite_code": "invite code",
    "game": "game",
    "seats": "seats",
    "time_limit_s": "seconds",
}
#: The largest whole number a msgpack frame carries (a signed 64-bit integer).
WIRE_INT_MAX: Final = 2**63 - 1


def client_message(model: type[M], **fields: Any) -> M:
    """`model(**fields)`; fields the protocol refuses (a race id or an invite code typed too
    long, an empty one), or a number too big for a frame (`WIRE_INT_MAX`: seats typed as 30
    digits), raise `RequestError` (`invalid_message`) saying which and why, as the server's
    refusal would, and nothing is sent."""
    for name, value in fields.items():
        if isinstance(value, int) and abs(value) > WIRE_INT_MAX:
            words = f"{TYPED_FIELDS.get(name, name)}: {value} is too big to send"
            raise RequestError(ErrorCode.INVALID_MESSAGE.value, words)
    try:
        return model(**fields)
    except ValidationError as exc:
        text = validation_text(exc, TYPED_FIELDS)
        raise RequestError(ErrorCode.INVALID_MESSAGE.value, text) from None


def answer_to(message: ClientMessage, until: Predicate) -> Predicate:
    """What settles the request `message`: the first message `until` accepts, or the server's
    `Error` for this kind of request (and for its race, when both name one)."""
    kind = message.type
    race_id = getattr(message, "race_id", None)

    def settles(reply: ServerMessage) -> bool:
        if isinstance(reply, Error) and reply.request == kind:
            return reply.race_id is None or race_id is None or reply.race_id == race_id
        return until(reply)

    return settles


async def read_until(
    read: Reader, settles: Predicate, timeout_s: float | None = REQUEST_TIMEOUT_S
) -> ServerMessage:
    """Read with `read` until a message `settles` accepts (asked once `read` has handled it);
    `TimeoutError` if none came within `timeout_s` (None: no limit). What else comes meanwhile
    is handled by `read` as ever."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    while True:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            raise TimeoutError
        message = await read(left)
        if message is not None and settles(message):
            return message


async def request_reading(
    conn: Connection,
    read: Reader,
    message: ClientMessage,
    until: Predicate,
    timeout_s: float = REQUEST_TIMEOUT_S,
) -> ServerMessage:
    """`Session.request` for a reader with no pump: send `message` on `conn`, then read with
    `read` until the first message `until` accepts, or the request's error (`RequestError`);
    `TimeoutError` if neither came within `timeout_s`."""
    settles = answer_to(message, until)
    await conn.send(message)
    reply = await read_until(read, settles, timeout_s)
    if isinstance(reply, Error):
        raise RequestError(reply.code, reply.message)
    return reply


async def join_or_resume(
    join: Callable[[], Awaitable[object]], resume: Callable[[], Awaitable[object]]
) -> bool:
    """Sit in a race with `join` (a `join_race` request, waited for): True. The server's
    `already_joined` means the seat is this player's already: one it kept for an earlier link
    or run (back after a crash, Ctrl-C or a kill, within the race's grace), so the seat is
    taken back with `resume` (a `sync` of the race, waited for) instead of failing: False.
    Any other refusal is raised as it came (`RequestError`).

    Both ways of reading use it: `Session.join_race` (the pump) and `Bot.join` (a bot reads
    its own connection), each with its own requests and waits."""
    try:
        await join()
    except RequestError as exc:
        if exc.code != ErrorCode.ALREADY_JOINED:
            raise
        await resume()
        return False
    return True


class LinkClosedError(RequestError):
    """The connection is closed for good: nothing sent now can be answered."""

    def __init__(self, detail: str) -> None:
        super().__init__("connection_closed", f"the connection is closed for good: {detail}")
        self.detail = detail


def reader_of(conn: Connection) -> Reader:
    """A `Reader` of `conn` for a program that keeps no state of what it reads (a one-shot
    command): a change of the link is nothing to read (a reconnect asks again for what was
    followed), and a link closed for good raises `LinkClosedError` (no answer can come)."""

    async def read(wait_s: float | None) -> ServerMessage | None:
        incoming = await conn.recv_within(wait_s)
        if incoming is None or not isinstance(incoming, StatusChange):
            return incoming
        if incoming.status is LinkStatus.CLOSED:
            raise LinkClosedError(incoming.detail or "closed")
        return None

    return read


@dataclass(frozen=True, slots=True)
class MoveOutcome:
    """A move's fate: accepted (`ack`), or refused with a reason (locally or by the server)."""

    move: str
    ack: MoveAck | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.ack is not None


class BoardSyncs:
    """When to sync a race whose board the state had to ignore (`RaceState.unusable`: a
    board or a move's ack from the server that is no board of its game), so that the sync's
    answer brings the server's board back without a reconnect: one sync at a time per race,
    at most `MAX_BOARD_SYNCS` in a row before a usable board comes for each racer whose board
    was ignored (a spectator's sync brings every racer's board: another racer's good one does
    not end the run)."""

    def __init__(self) -> None:
        #: Races whose board sync waits for its answer.
        self._waiting: set[RaceId] = set()
        #: Race id -> board syncs sent since the run of ignored boards of the race began.
        self._sent: dict[RaceId, int] = {}
        #: Race id -> the racers whose last board (or this player's ack) was ignored.
        self._ignored: dict[RaceId, set[PlayerId | None]] = {}

    def reconnected(self) -> None:
        """The link is back: its resume synced every followed race, so counting starts afresh."""
        self._waiting.clear()
        self._sent.clear()
        self._ignored.clear()

    def due(
        self, message: ServerMessage, state: ClientState, followed: AbstractSet[RaceId]
    ) -> RaceId | None:
        """The race to sync now that `state` has folded in `message`, if any: its race, if it
        is a board or an ack the state ignored, the race is `followed`, no sync of it waits
        for its answer and fewer than `MAX_BOARD_SYNCS` went since the run of ignored boards
        began (it ends once every racer whose board was ignored has a usable one again)."""
        race_id = getattr(message, "race_id", None)
        if race_id is None:
            return None
        if isinstance(message, RaceSnapshot) or (
            isinstance(message, Error) and message.request == "sync"
        ):
            self._waiting.discard(race_id)  # the sync's answer (its board follows)
            return None
        race = state.races.get(race_id)
        if not isinstance(message, Board | MoveAck) or race is None:
            return None
        ignored = self._ignored.setdefault(race_id, set())
        if race.unusable is None:
            if isinstance(message, Board):
                ignored.discard(message.player_id)
                if not ignored:  # every board ignored is usable again: the run is over
                    self._sent.pop(race_id, None)
            if not ignored:
                del self._ignored[race_id]
            return None
        ignored.add(message.player_id if isinstance(message, Board) else state.player_id)
        sent = self._sent.get(race_id, 0)
        if race_id in self._waiting or race_id not in followed or sent >= MAX_BOARD_SYNCS:
            return None
        self._waiting.add(race_id)
        self._sent[race_id] = sent + 1
        return RaceId(race_id)


class Session:
    def __init__(self, conn: Connection, state: ClientState | None = None) -> None:
        self.conn = conn
        self.state = state or ClientState()
        if conn.welcome is not None:
            self.state.apply(conn.welcome)
        self.listeners: list[Listener] = []
        self.link = LinkStatus.CONNECTED
        #: Why the link closed for good (set once `pump` has seen it), else None.
        self.closed: str | None = None
        self._waiters: list[tuple[Predicate, asyncio.Future[ServerMessage]]] = []
        self._settled: ServerMessage | None = None
        self.board_syncs = BoardSyncs()
        #: Races synced because their news came before the race itself.
        self.races_to_learn = RacesToLearn()

    @classmethod
    @asynccontextmanager
    async def running(
        cls, conn: Connection, state: ClientState | None = None
    ) -> AsyncIterator[Session]:
        """A session on `conn`, just connected, with its pump running until the block ends
        (then it is cancelled and awaited; closing `conn` is the caller's).

        The welcome is applied from `conn.welcome` and taken off the queue, so the pump
        starts with what came after it."""
        session = cls(conn, state)
        conn.take_welcome()
        pump = asyncio.create_task(session.pump(), name="solrace-pump")
        try:
            yield session
        finally:
            await cancel_and_wait([pump])

    # --- reading -------------------------------------------------------------------------

    async def pump(self) -> None:
        """Read forever (until the link is closed for good). A board or a move's ack the
        state had to ignore (no board of its game) is followed by a `sync` of its race, whose
        answer brings the server's board again (`BoardSyncs`); so is news of a race the state
        has no description of (`RacesToLearn`)."""
        while True:
            incoming = await self.conn.recv()
            self.dispatch(incoming)
            if isinstance(incoming, StatusChange):
                if incoming.status is LinkStatus.CLOSED:
                    return
                if incoming.status is LinkStatus.CONNECTED:
                    self.board_syncs.reconnected()
                    self.races_to_learn.reconnected()
                continue
            race_id = self.board_syncs.due(incoming, self.state, self.conn.followed)
            if race_id is None:
                race_id = self.races_to_learn.due(incoming, self.state)
            if race_id is not None:
                await self.conn.send(Sync(race_id=race_id))

    def dispatch(self, incoming: Incoming) -> None:
        self._settled = None
        if isinstance(incoming, StatusChange):
            self.link = incoming.status
            if incoming.status is LinkStatus.CLOSED:
                self.closed = incoming.detail or "closed"
                for _, future in self._waiters:
                    if not future.done():
                        future.set_exception(LinkClosedError(self.closed))
                self._waiters = []
        else:
            self.state.apply(incoming)
            for predicate, future in list(self._waiters):
                if not future.done() and predicate(incoming):
                    future.set_result(incoming)
                    self._settled = incoming
            self._waiters = [(p, f) for p, f in self._waiters if not f.done()]
        for listener in list(self.listeners):
            listener(incoming)

    def was_awaited(self, message: ServerMessage) -> bool:
        """Did the message being dispatched settle a request or wait (listeners: an error
        the requester reports itself need not be reported twice)?"""
        return message is self._settled

    def _check_open(self) -> None:
        if self.closed is not None:
            raise LinkClosedError(self.closed)

    async def request(
        self, message: ClientMessage, until: Predicate, timeout_s: float = REQUEST_TIMEOUT_S
    ) -> ServerMessage:
        """Send `message`, then wait for the first message `until` accepts, or its error."""
        self._check_open()
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters.append((answer_to(message, until), future))
        await self.conn.send(message)
        try:
            reply = await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            # Said failed: not made later either, once a link that is down comes back.
            self.conn.withdraw(message)
            raise
        if isinstance(reply, Error):
            raise RequestError(reply.code, reply.message)
        return reply

    async def wait_for(
        self, until: Predicate, timeout_s: float = REQUEST_TIMEOUT_S
    ) -> ServerMessage:
        return await asyncio.wait_for(self.expect(until), timeout_s)

    def expect(self, until: Predicate) -> asyncio.Future[ServerMessage]:
        """The first message `until` accepts from now on, as a future: registered at once, so
        it may be set up before sending what it answers."""
        self._check_open()
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters.append((until, future))
        return future

    # --- requests ------------------------------------------------------------------------

    @property
    def me(self) -> PlayerId | None:
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
    ) -> RaceId:
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
            client_message(
                CreateRace,
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

    async def join_race(self, race_id: RaceId, invite_code: str | None = None) -> bool:
        """Sit in a race: True. A race this player already sits in (back after a crash or
        Ctrl-C: the server answers `already_joined`) is resumed instead (`resume`): False
        (`join_or_resume`). A race past its start (`wrong_status`) is refused with what to
        do instead: watch it, or replay it once it has finished (a race finished long ago,
        `unknown_race`: the command that replays it)."""
        me = self.me

        def seated(m: ServerMessage) -> bool:
            return (
                isinstance(m, RaceUpdate)
                and m.race_id == race_id
                and any(r.player_id == me for r in m.race.racers)
            )

        join = client_message(JoinRace, race_id=race_id, invite_code=invite_code)
        try:
            return await join_or_resume(
                lambda: self.request(join, seated),
                lambda: self.resume(race_id),
            )
        except RequestError as exc:
            if exc.code not in (ErrorCode.WRONG_STATUS, ErrorCode.UNKNOWN_RACE) or isinstance(
                exc, LinkClosedError
            ):
                raise
            message = join_refusal_message(exc.code, exc.message, race_id, self.conn.url)
            raise RequestError(exc.code, message) from None

    def race_on_server(self, race_id: RaceId) -> str:
        """`RACE --server URL`: the arguments of `solrace watch` or `solrace replay` that name
        `race_id` on this session's server (`RACE` alone on the default server)."""
        return f"{race_id}{server_option(self.conn.url)}"

    async def resume(self, race_id: RaceId) -> RaceState:
        """Follow a race this player sits in again: `sync` answers with the race's snapshot
        and, once it runs, the own board (waited for here too, so that nothing of the
        answer is still to come when this returns)."""
        me = self.me
        board = self.expect(
            lambda m: isinstance(m, Board) and m.race_id == race_id and m.player_id == me
        )
        try:
            reply = await self.request(
                Sync(race_id=race_id),
                lambda m: isinstance(m, RaceSnapshot) and m.race_id == race_id,
            )
            assert isinstance(reply, RaceSnapshot)
            seated = any(r.player_id == me for r in reply.race.racers)
            if reply.race.status == "running" and seated:
                await asyncio.wait_for(board, REQUEST_TIMEOUT_S)
        finally:
            if board.done() and not board.cancelled():
                board.exception()  # retrieved: a link closed meanwhile is not logged
            board.cancel()
        return self.state.race(race_id)

    async def leave_race(self, race_id: RaceId) -> None:
        """Give up a seat in an open race; returns once the server took this player out."""
        me = self.me
        await self.request(
            LeaveRace(race_id=race_id),
            lambda m: (
                isinstance(m, RaceUpdate)
                and m.race_id == race_id
                and (m.race.status == "cancelled" or all(r.player_id != me for r in m.race.racers))
            ),
        )

    async def start_race(self, race_id: RaceId) -> None:
        await self.request(
            StartRace(race_id=race_id),
            lambda m: (
                isinstance(m, RaceUpdate) and m.race_id == race_id and m.race.status != "open"
            ),
        )

    async def resign(self, race_id: RaceId) -> None:
        """Give up a running race; returns once the server says this racer resigned."""
        me = self.me
        await self.request(
            Resign(race_id=race_id),
            lambda m: (
                isinstance(m, Progress)
                and m.race_id == race_id
                and m.progress.player_id == me
                and m.progress.state == "resigned"
            ),
        )

    async def watch(self, race_id: RaceId) -> None:
        """Spectate a race: returns once its first news (a snapshot) has come. A race the
        server does not hold live (unknown, or finished long ago) raises `RequestError`
        (`unknown_race`)."""
        await self.request(
            client_message(Watch, race_id=race_id),
            lambda m: getattr(m, "race_id", None) == race_id and not isinstance(m, Error),
        )

    async def unwatch(self, race_id: RaceId) -> None:
        await self.conn.send(Unwatch(race_id=race_id))

    async def get_replay(self, race_id: RaceId) -> ReplayModel:
        reply = await self.request(
            client_message(GetReplay, race_id=race_id),
            lambda m: isinstance(m, Replay) and m.replay.race_id == race_id,
        )
        assert isinstance(reply, Replay)
        return reply.replay

    def no_board_text(self, race_id: RaceId) -> str:
        """Why the own board of `race_id` is not here: the race has not started, or it runs
        and its board has not come yet (it said the race had not started, of a race that
        had)."""
        race = self.state.races.get(race_id)
        if race is not None and race.status == "running":
            return NO_BOARD_RUNNING
        return NO_BOARD_BEFORE_START

    def check(self, race_id: RaceId, text: str) -> str | None:
        """Why `text` cannot be played now on the own board, or None."""
        try:
            move = Move.parse(text)
        except EngineError as exc:
            return str(exc)
        board = self.state.my_board(race_id)
        if board is None:
            return self.no_board_text(race_id)
        if any(p.race_id == race_id for p in self.conn.pending.values()):
            return None  # the board is about to change; let the server judge
        return check_move(board, move)

    async def move(self, race_id: RaceId, text: str, timeout_s: float = 30.0) -> MoveOutcome:
        """Check locally, send, and wait for the ack or the refusal."""
        reason = self.check(race_id, text)
        if reason is not None:
            return MoveOutcome(text, reason=reason)
        canonical = str(Move.parse(text))
        # Waited for before it is sent: its answer may come while the send still drains.
        seq = self.conn.next_seq
        answer = self.expect(lambda m: isinstance(m, MoveAck | MoveRejected) and m.seq == seq)
        try:
            sent = await self.conn.send_move(race_id, canonical)
            assert sent == seq, "the move got the sequence number announced"
            reply = await asyncio.wait_for(answer, timeout_s)
        except TimeoutError:
            raise MoveTimeoutError(seq) from None
        finally:
            answer.cancel()  # if it timed out or the send failed: no waiter left behind
        if isinstance(reply, MoveAck):
            return MoveOutcome(canonical, ack=reply)
        assert isinstance(reply, MoveRejected)
        return MoveOutcome(canonical, reason=reply.reason)

    async def send_move(self, race_id: RaceId, text: str) -> str | None:
        """Check locally and send without waiting (the app); the reason if refused here."""
        reason = self.check(race_id, text)
        if reason is not None:
            return reason
        await self.conn.send_move(race_id, str(Move.parse(text)))
        return None
