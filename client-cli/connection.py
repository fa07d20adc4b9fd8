"""The client's WebSocket connection: hello, moves with sequence numbers, resync, reconnects.

One `Connection` speaks the protocol (binary msgpack frames through the server's codec) and
hides a flaky network from its user:
- every move gets a sequence number and stays pending until the server acks or rejects it; a
  pending move is sent again (same seq, so the server applies it once) after `resend_after_s`
  and after every reconnect;
- a lost connection is retried with exponential backoff and jitter (`Backoff`: it starts
  again from the lowest wait only after a link that lived); after the new hello, every
  followed race is resumed with `Sync` (the last version seen), so missed events arrive or a
  snapshot replaces them, and a followed lobby (`list_races` with `follow`) and every watched
  tournament are followed again (the server forgets what a closed session followed);
- a message sent while the link is down waits in an outbox until it is back, unless its sender
  gives up on it first (`withdraw`: a request whose answer timed out is not made later);
- a ping every `ping_interval_s` keeps the socket warm and measures the server's clock.

The user reads `await conn.recv()`: server messages, plus a `StatusChange` when the link goes
down or comes back (the app shows "reconnecting…").

Its parts elsewhere: the supervisor that notices a lost link and brings it back
(link_supervisor.py, the base class of `Connection`) with its `Backoff` (backoff.py); what a
reader gets (link_status.py); a failure to connect said in words (connect_failures.py) and
what a close means (link_closes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from pydantic import ValidationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.errors import ErrorCode, ProtocolError, SchemaError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    ClientMessage,
    Error,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    MoveAck,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    ServerMessage,
    Sync,
    Unwatch,
    Watch,
    Welcome,
)
from solrace.server.protocol.tournament_messages import (
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)
from solrace.tasks import cancel_and_wait

from .backoff import Backoff
from .connect_failures import ConnectionFailedError, closed_error, connect_failure
from .defaults import url_problem
from .link_status import Incoming, LinkStatus
from .link_supervisor import LinkSupervisor, close_quietly
from .tls_probe import may_be_tls_port, speaks_tls
from .wire_text import one_line

log = logging.getLogger(__name__)

MAX_FRAME: Final = 1 << 20
#: How many frames it cannot read a connection logs (then one line says the rest are not).
MAX_UNREADABLE_LOGGED: Final = 10


@dataclass(slots=True)
class PendingMove:
    race_id: RaceId
    seq: int
    move: str
    sent_at: float


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Connection(LinkSupervisor):
    """A protocol client that survives disconnects; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        key: str | None = None,
        resend_after_s: float = 2.5,
        ping_interval_s: float = 10.0,
        backoff_s: tuple[float, float] = (0.2, 5.0),
        stable_after_s: float = 5.0,
        open_timeout_s: float = 10.0,
    ) -> None:
        self.url = url
        self.name = name
        self.token = token
        #: The registration key sent with a new name (`Hello.key`): again on a reconnect
        #: before the token arrived, it gets the same player back.
        self.key = key
        self.resend_after_s = resend_after_s
        self.ping_interval_s = ping_interval_s
        self.backoff_s = backoff_s
        #: A link lost sooner than this after it opened does not restart the backoff.
        self.stable_after_s = stable_after_s
        self.open_timeout_s = open_timeout_s
        self._backoff: Backoff | None = None
        self._opened_at = 0.0
        self.welcome: Welcome | None = None
        self.status = LinkStatus.CLOSED
        self.clock_offset_ms = 0
        self.pending: dict[int, PendingMove] = {}
        #: race id -> (epoch, last version seen), for `Sync` after a reconnect.
        self.versions: dict[RaceId, tuple[str, int]] = {}
        self.followed: set[RaceId] = set()
        #: Races left or unwatched since: their events still in flight do not make them
        #: followed again (a `Sync` after a reconnect would make the player their spectator).
        #: A leave counts once the server took the player out (`_leaving` until then: one it
        #: refuses, the race under way, leaves the race followed).
        self._left: set[RaceId] = set()
        self._leaving: set[RaceId] = set()
        #: Races still `_leaving` that a reconnect synced after their leave was sent: the
        #: server answers the sync of someone not racing by making them a spectator,
        #: unwatched once the leave shows. (A leave still in the outbox goes after the sync,
        #: which a racer sends: no watch is made, and its race may be gone by then.)
        self._synced_leaving: set[RaceId] = set()
        #: Tournaments watched, once the server sent a view of one asked for
        #: (`_watch_asked` until then: a refused watch is not asked again), watched again
        #: after a reconnect.
        self.watched_tournaments: set[str] = set()
        self._watch_asked: list[str] = []  # in the order asked (answered in that order)
        #: Whether the last `list_races` asked to follow the lobby (asked again after a
        #: reconnect: the server forgets a closed session's lobby follow).
        self.follows_lobby = False
        self._finished: set[RaceId] = set()
        self._next_seq = _now_ms() * 1000
        self._queue: asyncio.Queue[Incoming] = asyncio.Queue()
        self._ws: ClientConnection | None = None
        self._outbox: list[ClientMessage] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._supervisor: asyncio.Task[None] | None = None
        self._closing = False
        self._pings: dict[int, int] = {}
        self._ping_nonce = 0
        #: Frames from the server this client could not read (ignored, the first ones logged).
        self._unreadable = 0

    # --- public API ----------------------------------------------------------------------

    async def connect(self) -> Welcome:
        """Connect, say hello and resume; raises `ConnectionFailedError` if that fails (also
        when the server closes the link before the resume is sent: `close_code` says how)."""
        self._closing = False
        welcome = await self._open()
        self._supervisor = asyncio.create_task(self._supervise(), name="solrace-connection")
        return welcome

    async def recv(self) -> Incoming:
        return await self._queue.get()

    async def recv_within(self, wait_s: float | None) -> Incoming | None:
        """`recv`, or None if nothing came within `wait_s` (None: as long as it takes).

        Not `wait_for`: on Python 3.11 a `wait_for` cancelled just as the message came
        returns it and drops the cancellation, so a bot stopped then (Ctrl-C) read on, and took
        the answer to its own leave. A cancelled `timeout` leaves the message in the queue."""
        try:
            async with asyncio.timeout(wait_s):
                return await self.recv()
        except TimeoutError:
            return None

    def recv_nowait(self) -> Incoming | None:
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    def take_welcome(self) -> Welcome:
        """Take the welcome `connect` queued off the queue, for a reader that applied
        `self.welcome` already (it is first in the queue: nothing is read before it)."""
        incoming = self.recv_nowait()
        if not isinstance(incoming, Welcome):
            raise RuntimeError(f"the welcome is not next in the queue: {incoming!r}")
        return incoming

    async def send(self, message: ClientMessage) -> None:
        """Send now, or as soon as the link is back."""
        # A message to the server carries its race id as plain text (`RaceIdText`).
        if isinstance(message, Unwatch):
            self.followed.discard(RaceId(message.race_id))
            self._left.add(RaceId(message.race_id))
        elif isinstance(message, LeaveRace):
            self._leaving.add(RaceId(message.race_id))
        elif isinstance(message, Sync | Watch | JoinRace):
            if isinstance(message, Sync):
                self.followed.add(RaceId(message.race_id))
            self._left.discard(RaceId(message.race_id))
            self._stop_leaving(RaceId(message.race_id))
        elif isinstance(message, ListRaces):
            self.follows_lobby = message.follow
        elif isinstance(message, WatchTournament):
            self._watch_asked.append(message.tournament_id)
        elif isinstance(message, UnwatchTournament):
            self._forget_watch_asked(message.tournament_id)
            self.watched_tournaments.discard(message.tournament_id)
        ws = self._ws
        if ws is None:
            self._outbox.append(message)
            return
        try:
            await ws.send(encode(message))
        except ConnectionClosed:
            self._outbox.append(message)

    def withdraw(self, message: ClientMessage) -> bool:
        """Take `message` (this very object) out of the outbox if it has not been sent yet:
        True if it was there. A request whose answer did not come in time is withdrawn, or it
        would be made once the link is back, after its sender said it failed."""
        for index, queued in enumerate(self._outbox):
            if queued is message:
                del self._outbox[index]
                if isinstance(message, LeaveRace):  # what `send` noted of it is undone
                    self._stop_leaving(RaceId(message.race_id))
                elif isinstance(message, WatchTournament):
                    self._forget_watch_asked(message.tournament_id)
                return True
        return False

    @property
    def next_seq(self) -> int:
        """The sequence number the next `send_move` gives its move (an answer to it can be
        waited for before the move is sent: it may come while the send still drains)."""
        return self._next_seq

    async def send_move(self, race_id: RaceId, move: str) -> int:
        """Send a move on the own board of `race_id`; returns its sequence number."""
        seq = self._next_seq
        self._next_seq += 1
        self.pending[seq] = PendingMove(race_id, seq, move, time.monotonic())
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(encode(MakeMove(race_id=race_id, seq=seq, move=move)))
        return seq

    def server_now_ms(self) -> int:
        return _now_ms() + self.clock_offset_ms

    async def close(self) -> None:
        self._closing = True
        supervisor = self._supervisor
        self._supervisor = None
        ws = self._ws
        if ws is not None:
            await close_quietly(ws)
        if supervisor is not None:
            await cancel_and_wait([supervisor])
        await self._stop_tasks()
        self.status = LinkStatus.CLOSED

    async def __aenter__(self) -> Connection:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- one connection ------------------------------------------------------------------

    async def _open(self) -> Welcome:
        problem = url_problem(self.url)
        if problem is not None:
            raise ConnectionFailedError(problem, fatal=True)
        try:
            ws = await connect(
                self.url,
                open_timeout=self.open_timeout_s,
                max_size=MAX_FRAME,
                compression=None,
                ping_interval=20,
            )
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            failure = connect_failure(self.url, exc)
            if may_be_tls_port(self.url, exc) and await speaks_tls(self.url):
                # Retrying ws:// cannot help: the port wants a TLS handshake first.
                raise ConnectionFailedError(
                    f"{failure} (a server with TLS: try wss://)", fatal=True
                ) from None
            raise failure from None
        try:
            welcome = await self._hello(ws)
            await self._resume(ws)
        except ConnectionClosed as exc:
            # A restart (1012) or a newer session (4003) right after the welcome: the link is
            # not up, so it is a failed connect (retried unless the code says otherwise).
            await close_quietly(ws)
            raise closed_error(exc) from None
        except BaseException:
            await close_quietly(ws)
            raise
        # Only now is the link up: no await from here on, so nothing sent meanwhile can slip
        # between the end of the resume and the socket becoming the one `send` uses.
        self._ws = ws
        self._opened_at = time.monotonic()
        self.status = LinkStatus.CONNECTED
        self._queue.put_nowait(welcome)
        self._tasks = [
            asyncio.create_task(self._on_link(self._read, ws), name="solrace-read"),
            asyncio.create_task(self._on_link(self._ping, ws), name="solrace-ping"),
            asyncio.create_task(self._on_link(self._resend, ws), name="solrace-resend"),
        ]
        return welcome

    async def _hello(self, ws: ClientConnection) -> Welcome:
        try:
            if self.token:
                hello = Hello(protocol=PROTOCOL_VERSION, token=self.token)
            else:
                hello = Hello(protocol=PROTOCOL_VERSION, name=self.name, key=self.key)
        except ValidationError:
            # The entry points check --name first (`identity.name_problem`); this is the net.
            raise ConnectionFailedError(
                f"the protocol takes no name {self.name!r} (see --help for --name)", fatal=True
            ) from None
        sent_at = _now_ms()
        await ws.send(encode(hello))
        # One deadline for the whole answer: a WebSocket server that keeps sending frames
        # that are no welcome (a ticker, an echo) must not hold the hello open for good.
        deadline = asyncio.get_running_loop().time() + self.open_timeout_s
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    data = await ws.recv()
            except TimeoutError:
                raise ConnectionFailedError(
                    f"{self.url} did not answer the hello within {self.open_timeout_s:g} s "
                    "(is it a solrace server?)"
                ) from None
            try:
                message = self._decode(data)
            except SchemaError as exc:
                if exc.request_type == "welcome":  # a welcome of another protocol version?
                    raise ConnectionFailedError(
                        f"{self.url} answered the hello with a welcome this client cannot "
                        f"read ({one_line(str(exc))[:200]}): is it a solrace server of another "
                        "version?",
                        fatal=True,
                    ) from None
                continue
            except ProtocolError:
                continue
            if isinstance(message, Error):
                # `unavailable`: the server's store failed to answer this hello (an outage
                # there): a later try can get through, so the link is tried again. Any other
                # refusal stands.
                raise ConnectionFailedError(
                    f"{message.code}: {message.message}",
                    fatal=message.code != ErrorCode.UNAVAILABLE,
                    error_code=message.code,
                )
            if isinstance(message, Welcome):
                if message.protocol != PROTOCOL_VERSION:
                    raise ConnectionFailedError(
                        f"{self.url} speaks protocol {message.protocol}, this client protocol "
                        f"{PROTOCOL_VERSION}: play there with a solrace of the server's version",
                        fatal=True,
                    )
                received = _now_ms()
                self.clock_offset_ms = message.server_time_ms - (sent_at + received) // 2
                self.welcome = message
                if message.token:
                    self.token = message.token
                if message.name:
                    self.name = message.name
                return message

    def _decode(self, data: str | bytes) -> ServerMessage:
        """A frame from the server as its message; one this client cannot read raises
        `ProtocolError` (`SchemaError`: a map that is no message it knows) and is logged: the
        first `MAX_UNREADABLE_LOGGED` of this connection, then a line saying the rest are not."""
        try:
            if isinstance(data, str):
                raise ProtocolError(
                    f"a text frame ({len(data)} characters): the protocol is binary"
                )
            return decode_server(data)
        except ProtocolError as exc:
            self._unreadable += 1
            if self._unreadable <= MAX_UNREADABLE_LOGGED:
                log.warning(
                    "ignored a frame from %s that this client cannot read: %s",
                    self.url,
                    one_line(str(exc))[:300],
                )
                if self._unreadable == MAX_UNREADABLE_LOGGED:
                    log.warning(
                        "further frames from %s that cannot be read are not logged", self.url
                    )
            raise

    async def _resume(self, ws: ClientConnection) -> None:
        """After a (re)connect: resync followed races, follow the lobby again if it was
        followed (the server pushes its list at once), flush the outbox, resend moves.

        `send` and `send_move` called meanwhile do not see this socket yet (it becomes
        `self._ws` once the resume is through): what they queue is sent here too, until
        nothing is left."""
        for race_id in sorted(self.followed - self._finished):
            epoch, version = self.versions.get(race_id, (None, None))
            if race_id in self._leaving and not any(
                isinstance(m, LeaveRace) and m.race_id == race_id for m in self._outbox
            ):
                self._synced_leaving.add(race_id)
            await ws.send(encode(Sync(race_id=race_id, epoch=epoch, since_version=version)))
        if self.follows_lobby and not any(isinstance(m, ListRaces) for m in self._outbox):
            await ws.send(encode(ListRaces(follow=True)))
        # Asked again, watched again once the server shows it (a refusal now drops it).
        for tournament_id in sorted(self.watched_tournaments - set(self._watch_asked)):
            self._watch_asked.append(tournament_id)
            await ws.send(encode(WatchTournament(tournament_id=tournament_id)))
        resent: set[int] = set()
        while True:
            outbox, self._outbox = self._outbox, []
            for message in outbox:
                await ws.send(encode(message))
            moves = sorted(
                (p for p in self.pending.values() if p.seq not in resent), key=lambda p: p.seq
            )
            if not outbox and not moves:
                return
            for pending in moves:
                resent.add(pending.seq)
                await self._send_pending(ws, pending)

    async def _send_pending(self, ws: ClientConnection, pending: PendingMove) -> None:
        pending.sent_at = time.monotonic()
        await ws.send(encode(MakeMove(race_id=pending.race_id, seq=pending.seq, move=pending.move)))

    def _stop_leaving(self, race_id: RaceId) -> None:
        self._leaving.discard(race_id)
        self._synced_leaving.discard(race_id)

    def _forget_watch_asked(self, tournament_id: str) -> None:
        self._watch_asked = [t for t in self._watch_asked if t != tournament_id]

    def _observe(self, message: ServerMessage) -> ClientMessage | None:
        """Keep what a reconnect needs: versions, followed races, pending moves. Returns what
        to answer at once, if anything: the `unwatch` of a race whose leave a reconnect's
        `sync` confirmed (the leave's own answer lost with the link), since the server
        answers the sync of someone not racing by making them a spectator."""
        reply: ClientMessage | None = None
        if isinstance(message, RaceUpdate | RaceSnapshot) and message.race_id in self._leaving:
            me = self.welcome.player_id if self.welcome is not None else None
            if message.race.status == "cancelled" or all(
                r.player_id != me for r in message.race.racers
            ):  # the leave is through: what is still in flight does not follow it again
                if message.race_id in self._synced_leaving:
                    reply = Unwatch(race_id=message.race_id)
                self._stop_leaving(message.race_id)
                self._left.add(message.race_id)
                self.followed.discard(message.race_id)
        elif isinstance(message, TournamentView):
            tournament_id = message.tournament.tournament_id
            if tournament_id in self._watch_asked:
                self._forget_watch_asked(tournament_id)
                self.watched_tournaments.add(tournament_id)
        elif isinstance(message, Error) and message.request == "leave_race":
            if message.race_id is not None:  # refused: the player is still in the race
                self._stop_leaving(message.race_id)
        elif (
            isinstance(message, Error)
            and message.request == "watch_tournament"
            and self._watch_asked
        ):  # refused: the oldest watch asked (they are answered in order)
            self.watched_tournaments.discard(self._watch_asked.pop(0))
        if isinstance(message, RaceUpdate | RaceStarted | Progress | RaceFinished | RaceSnapshot):
            race_id = message.race_id
            if race_id not in self._left:
                self.followed.add(race_id)
            epoch, version = self.versions.get(race_id, ("", -1))
            if message.epoch != epoch or message.version > version:
                self.versions[race_id] = (message.epoch, message.version)
            if isinstance(message, RaceFinished) or (
                isinstance(message, RaceSnapshot) and message.results is not None
            ):
                self._finished.add(race_id)
        elif isinstance(message, Board):
            if message.race_id not in self._left:
                self.followed.add(message.race_id)
        elif isinstance(message, MoveAck | MoveRejected):
            self.pending.pop(message.seq, None)
        elif isinstance(message, Pong):
            sent = self._pings.pop(message.nonce, None)
            if sent is not None:
                received = _now_ms()
                self.clock_offset_ms = message.server_time_ms - (sent + received) // 2
        return reply

    async def _on_link(
        self, work: Callable[[ClientConnection], Awaitable[None]], ws: ClientConnection
    ) -> None:
        """Run one of a link's tasks: the link closing ends it (the supervisor notices).

        The work's coroutine is made here, in the task: a task cancelled before its first step
        (a link that closed as it came up) then leaves no coroutine that was never awaited."""
        with contextlib.suppress(ConnectionClosed):
            await work(ws)

    async def _read(self, ws: ClientConnection) -> None:
        async for data in ws:
            try:
                message = self._decode(data)
            except ProtocolError:  # logged; a newer server's message is no reason to stop
                continue
            reply = self._observe(message)
            await self._queue.put(message)  # first: a send failing now must not lose it
            if reply is not None:
                await self.send(reply)  # or from the outbox, once the link is back

    async def _ping(self, ws: ClientConnection) -> None:
        while True:
            await asyncio.sleep(self.ping_interval_s)
            self._ping_nonce += 1
            self._pings = {self._ping_nonce: _now_ms()}
            await ws.send(encode(Ping(nonce=self._ping_nonce)))

    async def _resend(self, ws: ClientConnection) -> None:
        tick = min(0.5, self.resend_after_s / 2)
        while True:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for pending in sorted(self.pending.values(), key=lambda p: p.seq):
                if now - pending.sent_at >= self.resend_after_s:
                    await self._send_pending(ws, pending)


__all__ = ["MAX_FRAME", "MAX_UNREADABLE_LOGGED", "Connection", "PendingMove"]
