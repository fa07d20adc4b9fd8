"""The WebSocket edge: bytes in, bytes out, limits enforced; decisions stay in the hub.

Each connection is an asyncio `Protocol` driving websockets' sans-I/O `ServerProtocol`: the
bytes the socket delivers go to the protocol, the frames it parses go to the hub, and what the
protocol has to send is written at once. There is no task or queue per frame on the way (the
library's asyncio connection spends a third of a bare echo server's CPU on those); one task
per connection runs the hub's handler while it waits on the store, and exits when idle.

Before a handshake: the caps on connections per client address and on the node, and the pace
of handshakes per address (`solrace.server.admission`; 429 or 503). Per connection: binary
frames only, a size cap (the protocol closes 1009) and at most 64 fragments a message, a
credit-bucket rate budget spent by every frame the client sends (1008), an idle timeout
(4004: no whole message), keepalive pings (1011
when unanswered), a bound on the frames and bytes written while the socket pushes back (4005),
no compression, an optional Origin check, and an opening-handshake timeout.

Back-pressure works both ways: while the socket pushes back (asyncio paused writing) it is not
read either, and the requests already read wait for it to drain before they are handled, so
a client that does not read cannot make the server write on its behalf (a pong per ping, an
answer per request) without bound.

The same port answers `GET` (and `HEAD`) `/healthz` and `/metrics`; other methods get 405.
The WebSocket opens on one path (`Settings.ws_path`, `/` by default; the query aside): a
request on any other path is answered 404, naming that one.
One request per connection: its answer closes it, and bytes after its head are discarded.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections import deque
from http import HTTPStatus
from typing import Any, assert_never, cast

from pydantic import BaseModel
from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Origin

from solrace.server.admission import Admission, Refusal, client_key
from solrace.server.http_head import (
    MAX_HEAD_BYTES,
    HandshakeBody,
    HeadReader,
    Incomplete,
    NotAllowed,
    NotFound,
    NotHttp,
    TooLarge,
    WholeHead,
    allowed_methods,
    is_probe,
    path_of,
)
from solrace.server.hub import Hub
from solrace.server.metrics import CONTENT_TYPE, Metrics
from solrace.server.periodic import run_every
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_client, encode
from solrace.server.protocol.errors import DecodeError, ErrorCode, SchemaError
from solrace.server.protocol.messages import Error
from solrace.server.protocol.ratelimit import CreditBucket
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.transport")
ws_log = logging.getLogger("solrace.server.websocket")


class _ProbeLog(logging.LoggerAdapter[logging.Logger]):
    """websockets' log of a plain HTTP request (`/healthz`, `/metrics`) or of a refused
    handshake, its INFO lines at DEBUG: a load balancer checks every node every few seconds
    ("HTTP response sent (200 OK)", "connection closed"), which would drown the log at INFO."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        super().log(logging.DEBUG if level == logging.INFO else level, msg, *args, **kwargs)


probe_log = _ProbeLog(ws_log)

#: Frames read ahead of the hub per connection; past it the socket is not read (back-pressure).
INBOX_LIMIT = 16


def server_frame(payload: bytes) -> bytes:
    """`payload` as one binary frame from the server: final, unmasked, no extension (the node
    negotiates none). The bytes websockets' `send_binary` writes, without its `Frame` object
    and serializer: ~0.5 us of Python a frame against ~2.8 us, twice a move (the ack, the
    opponent's progress)."""
    size = len(payload)
    if size < 126:
        return bytes((0x82, size)) + payload
    if size < 1 << 16:
        return b"\x82\x7e" + size.to_bytes(2, "big") + payload
    return b"\x82\x7f" + size.to_bytes(8, "big") + payload


#: Fragments one message may come in; one more closes the connection with 1009.
MAX_FRAGMENTS = 64

_PING = Opcode.PING


class _ServerProtocol(ServerProtocol):
    """websockets' server protocol, except that it does not answer a ping as it parses it:
    the session sends the pong once the ping has spent a credit (`WebSocketSession._frame`).
    The library queued a pong for every ping of a read before the first was charged, so the
    pings past the rate budget were answered too (10,922 pongs before the 1008 from one
    64 KiB read of empty pings)."""

    def recv_frame(self, frame: Frame) -> None:
        # Every frame comes here: `_PING` and the base class named, not `Opcode.PING` and
        # `super()` (~0.3 us a frame, an eighth of parsing one; this way under 0.1 us).
        if frame.opcode is _PING:
            self.events.append(frame)  # what the library does after queueing the pong
        else:
            ServerProtocol.recv_frame(self, frame)


class WebSocketSession(Session, asyncio.Protocol):
    """One client connection: the hub's `Session` and the socket's asyncio `Protocol`.

    Frames are written as soon as they are sent (in order: one writer, the event loop). While
    the socket pushes back (asyncio paused writing: the kernel's and the transport's buffers
    are full) frames still go to the transport's buffer, counted; a client that stops reading
    overflows `max_outgoing` frames or `max_outgoing_bytes` and is closed (4005). Meanwhile
    the socket is not read: what the session answers by itself (a pong per ping) cannot pile
    up either."""

    def __init__(self, edge: Transport) -> None:
        super().__init__(next(edge.session_ids))
        self.edge = edge
        settings = edge.settings
        self.ws = _ServerProtocol(
            origins=edge.origins, max_size=settings.max_frame_bytes, logger=ws_log
        )
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        #: A close is under way (ours or the peer's): nothing more is sent.
        self.closing = False
        #: The protocol could not parse what came (a frame past the size cap, bad framing).
        self.parse_failed = False
        #: We closed it (a limit, a bad frame), or are about to: what it sends now is not handled.
        self.refused = False
        self.opened = False
        #: Whole messages (payload, is_text) waiting for the hub, oldest first.
        self.inbox: deque[tuple[bytes, bool]] = deque()
        self.worker: asyncio.Task[None] | None = None
        self.reading_paused = False
        #: Set while the socket takes what is written (clear: asyncio paused our writing);
        #: the worker handles the next message only then, so a client that does not read
        #: gets no more answers piled up for it.
        self.writable = asyncio.Event()
        self.writable.set()
        self.written_while_paused = 0
        self.max_outgoing = settings.max_outgoing
        self.max_outgoing_bytes = settings.max_outgoing_bytes
        #: The request head read so far, until it is whole (None after: frames follow).
        self.head: HeadReader | None = HeadReader(settings.ws_path)
        #: Over budget while messages read before were waiting: the close once they are handled.
        self.closing_after: tuple[CloseCode, str] | None = None
        self.fragments: list[bytes] = []
        self.fragment_is_text = False
        #: When the last message arrived (monotonic seconds), for the idle watchdog.
        self.last_frame_at = time.monotonic()
        self.bucket = CreditBucket(
            settings.rate_capacity, settings.rate_refill_per_s, self.last_frame_at
        )
        self.last_ping_at = self.last_frame_at
        self.ping_outstanding = False
        self.timer: asyncio.TimerHandle | None = None
        self.eof_written = False
        #: Done once the socket is gone (`connection_lost`); what the session's close then
        #: does (the hub told, a racer marked away) is an `edge.finishing` task.
        self.lost: asyncio.Future[None] = self.loop.create_future()
        #: The client's address as the admission limits count it (`client_key`).
        self.address = ""
        #: Past an admission limit: the answer to its handshake.
        self.refusal: Refusal | None = None

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        edge = self.edge
        edge.connections.add(self)
        peer = transport.get_extra_info("peername")
        self.address = client_key(str(peer[0])) if isinstance(peer, tuple) and peer else ""
        self.refusal = edge.admission.arrive(self.address, time.monotonic())
        if self.refusal is not None and edge.admission.hopeless(self.address):
            edge.metrics.connections_refused.labels(self.refusal.kind.value).inc()
            self.transport.abort()
            return
        size = self.edge.settings.send_buffer_bytes
        sock = transport.get_extra_info("socket")
        if size is not None and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        self.timer = self.loop.call_later(self.edge.settings.open_timeout_s, self._abort)

    def data_received(self, data: bytes) -> None:
        if self.head is not None:
            data = self._take_head(data)
            if not data:
                return
        ws = self.ws
        ws.receive_data(data)
        if ws.parser_exc is not None and not self.parse_failed:
            # The protocol closes the connection itself (1009, 1002): counted here, once.
            self.parse_failed = True
            kind = "too_big" if isinstance(ws.parser_exc, PayloadTooBig) else "protocol"
            self.edge.metrics.bad_frames.labels(kind).inc()
        for event in ws.events_received():
            if isinstance(event, Frame):
                self._frame(event)
            elif isinstance(event, Request):
                self._request(event)
        self._flush()

    def eof_received(self) -> bool | None:
        self.ws.receive_eof()
        self._flush()
        return None  # asyncio closes the transport

    def pause_writing(self) -> None:
        self.writable.clear()
        self.written_while_paused = 0
        self._pause_reading()

    def resume_writing(self) -> None:
        self.writable.set()
        self._resume_reading()
        self.edge.hub.drained(self)

    @property
    def writing_paused(self) -> bool:
        return not self.writable.is_set()

    @property
    def backed_up(self) -> bool:
        return self.writing_paused

    def register(self) -> str | None:
        return self.edge.admission.register(self.address, time.monotonic())

    def unregister(self) -> None:
        self.edge.admission.unregister(self.address)

    def connection_lost(self, exc: Exception | None) -> None:
        # Messages already read are still handled (a resign sent just before closing
        # counts); their answers go nowhere.
        self.closing = True
        self.writable.set()  # the worker handles what was read (nothing is written now)
        if self.timer is not None:
            self.timer.cancel()
        edge = self.edge
        edge.connections.discard(self)
        edge.admission.leave(self.address)
        if self.opened:
            edge.sessions.discard(self)
            edge.metrics.connections.dec()
            finish = self.loop.create_task(self._finish(), name=f"solrace-bye-{self.session_id}")
            edge.finishing.add(finish)
            finish.add_done_callback(edge.finishing.discard)
        self.lost.set_result(None)

    async def _finish(self) -> None:
        """The hub learns of the close once the message it is handling is answered. Cancelled
        meanwhile (a stop that gave up waiting: `Transport.wait_closed_sessions`), it cancels
        that message's handling too, and waits until it has ended."""
        worker = self.worker
        if worker is not None:
            try:
                await asyncio.shield(worker)
            except asyncio.CancelledError:
                await cancel_and_wait([worker])
                raise
            except Exception:  # the worker logs its own failures
                pass
        await self.edge.hub.disconnected(self)

    # --- the hub's Session ---------------------------------------------------------------

    def send(self, message: BaseModel) -> None:
        if not self.closing:
            self._put(encode(message))

    def send_frame(self, frame: bytes) -> None:
        if not self.closing:
            self._put(frame)

    def close(self, code: CloseCode, reason: str) -> None:
        """Close after the frames already sent (the close frame follows them)."""
        if self.closing:
            return
        self.closing = self.refused = True
        self.closing_after = None
        self.inbox.clear()
        self._resume_reading()  # the peer's answer to our close must be read (once it reads)
        if self.ws.state is State.OPEN:
            self.ws.send_close(code, reason)
            self._flush()

    # --- writing -----------------------------------------------------------------------------

    def _put(self, frame: bytes) -> None:
        if self.ws.state is not State.OPEN:  # the peer's close, or the protocol failed it
            self.closing = True
            return
        if self.writing_paused:
            self.written_while_paused += 1
            transport = self.transport
            assert transport is not None
            if (
                self.written_while_paused > self.max_outgoing
                or transport.get_write_buffer_size() + len(frame) > self.max_outgoing_bytes
            ):
                self.edge.metrics.slow_closes.inc()
                self.close(CloseCode.TOO_SLOW, "outgoing queue overflow")
                return
        transport = self.transport
        if transport is None or transport.is_closing() or self.eof_written:
            return
        # Written directly: every frame the protocol queues is written by `_flush` right
        # after (its queue is empty here), so the order of frames holds.
        transport.write(server_frame(frame))

    def _flush(self) -> None:
        transport = self.transport
        if transport is None:
            return
        for chunk in self.ws.data_to_send():
            if transport.is_closing() or self.eof_written:
                # The connection failed before its handshake was answered (a request and
                # bad bytes in one read): nothing may follow the end of our stream.
                break
            if chunk:
                transport.write(chunk)
            elif transport.can_write_eof():
                self.eof_written = True
                transport.write_eof()  # after what is buffered; the peer closes then
            else:
                transport.close()
        if self.ws.close_expected() and self.timer is None:
            self.timer = self.loop.call_later(self.edge.settings.close_timeout_s, self._abort)

    def _abort(self) -> None:
        self.timer = None
        if self.transport is not None:
            self.transport.abort()

    # --- reading -----------------------------------------------------------------------------

    def _take_head(self, data: bytes) -> bytes:
        """Until the request head is whole it is kept (`http_head.HeadReader`, which says
        why); then this does what the reader's verdict says. Returns the bytes for the
        protocol after the head: none while it is incomplete, or once it is answered here."""
        reader = self.head
        assert reader is not None
        verdict = reader.feed(data)
        if isinstance(verdict, Incomplete):
            return b""
        self.head = None
        match verdict:
            case TooLarge():
                return self._not_http(
                    f"a request head is at most {MAX_HEAD_BYTES // 1024} KiB",
                    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                )
            case NotHttp(reason=reason):
                return self._not_http(reason)
            case NotFound(method=method):
                return self._refuse(self._not_found(method))
            case NotAllowed(method=method, path=path):
                return self._refuse(self._not_allowed(method, path))
            case HandshakeBody():
                text = "a WebSocket handshake has no body\n"
                return self._refuse(self.ws.reject(HTTPStatus.BAD_REQUEST, text))
            case WholeHead(head=head, rest=rest):
                ws = self.ws
                ws.receive_data(head)
                for event in ws.events_received():
                    if isinstance(event, Request):
                        self._request(event)
                self._flush()
                return rest
        assert_never(verdict)

    def _not_http(self, reason: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> bytes:
        """Answer 400 (or `status`) to bytes no request begins with, a malformed head or one
        too large, and close once it is written: such a peer (a TLS hello, a scanner) reads
        no answer and may never close; logged at DEBUG, like a probe, so that a flood of
        them does not flood the log."""
        self.ws.logger = probe_log
        rest = self._refuse(self.ws.reject(status, reason + "\n"))
        if self.transport is not None:
            self.transport.close()  # after what is buffered
        return rest

    def _refuse(self, response: Response) -> bytes:
        """Answer the request before the protocol reads it; whatever follows is discarded."""
        self.ws.send_response(response)
        self._flush()
        return b""

    def _not_found(self, method: str) -> Response:
        """The answer to a request on a path the server does not serve: 404, naming the
        WebSocket path (a HEAD gets the headers alone). Logged at DEBUG, like a probe: a
        scanner trying paths must not flood the log."""
        self.ws.logger = probe_log
        response = self.ws.reject(
            HTTPStatus.NOT_FOUND, f"this server's WebSocket path is {self.edge.settings.ws_path}\n"
        )
        response.headers["Server"] = "solrace"
        if method == "HEAD":
            response.body = b""
        return response

    def _not_allowed(self, method: str, path: str) -> Response:
        allowed = allowed_methods(path)
        response = self.ws.reject(
            HTTPStatus.METHOD_NOT_ALLOWED, f"{method[:16]} is not allowed: {allowed}\n"
        )
        response.headers["Allow"] = allowed
        return response

    def _request(self, request: Request) -> None:
        """The opening handshake, or a plain HTTP request for `/healthz` or `/metrics`."""
        ws = self.ws
        if ws.eof_sent:
            return  # a request the protocol could not read: it closes the stream unanswered
        path = path_of(request.path)  # the WebSocket path or a probe's (`HeadReader`)
        if is_probe(path):
            ws.logger = probe_log  # the protocol logs the answer and the close with it
        method = request.method
        if method not in ("GET", "HEAD"):
            response = self._not_allowed(method, path)
        elif path == "/healthz":
            response = ws.reject(HTTPStatus.OK, "ok\n")
        elif path == "/metrics":
            response = ws.reject(HTTPStatus.OK, "")
            response.body = self.edge.metrics.render()
            del response.headers["Content-Type"], response.headers["Content-Length"]
            response.headers["Content-Type"] = CONTENT_TYPE
            response.headers["Content-Length"] = str(len(response.body))
        elif self.refusal is not None:
            response = self._refused(self.refusal)
        else:
            response = ws.accept(request)  # 405 (`Allow: GET`) for a HEAD
            response.headers["Server"] = "solrace"
        if method == "HEAD":
            response.body = b""  # the headers a GET would get (Content-Length too), no body
        ws.send_response(response)
        if ws.state is State.OPEN:
            self.opened = True
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            self.edge.sessions.add(self)
            self.edge.metrics.connections.inc()

    def _refused(self, refusal: Refusal) -> Response:
        """The answer to a handshake past an admission limit (`solrace.server.admission`),
        logged at DEBUG like a probe's: a flood of handshakes, which the limits are for, must
        not flood the log too (`solrace_connections_refused_total` counts them)."""
        self.ws.logger = probe_log
        self.edge.metrics.connections_refused.labels(refusal.kind.value).inc()
        response = self.ws.reject(refusal.status, refusal.text + "\n")
        response.headers["Retry-After"] = str(refusal.retry_after_s)
        return response

    def _frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        data = frame.data if isinstance(frame.data, bytes) else bytes(frame.data)
        if opcode is Opcode.CLOSE:
            self.closing = True  # the protocol answers it; what came before is still handled
            return
        # Every other frame the client sends costs a credit: a message, each fragment of one
        # (empty ones too), a ping (answered only then) and a pong.
        if self.refused or not self._charge():
            return
        if opcode is Opcode.BINARY or opcode is Opcode.TEXT:
            if frame.fin:
                self._message(data, opcode is Opcode.TEXT)
            else:
                self.fragments = [data]
                self.fragment_is_text = opcode is Opcode.TEXT
        elif opcode is Opcode.CONT:
            if len(self.fragments) >= MAX_FRAGMENTS:
                self.edge.metrics.bad_frames.labels("fragments").inc()
                self.close(CloseCode.MESSAGE_TOO_BIG, f"more than {MAX_FRAGMENTS} fragments")
                return
            self.fragments.append(data)  # the protocol caps the whole message's size
            if frame.fin:
                whole, self.fragments = b"".join(self.fragments), []
                self._message(whole, self.fragment_is_text)
        elif opcode is Opcode.PING:
            if self.ws.state is State.OPEN:  # not after a close (the peer's, later in the read)
                self.ws.send_pong(data)
        elif opcode is Opcode.PONG:
            self.ping_outstanding = False

    def _charge(self) -> bool:
        """Spend a credit for a frame; without one the connection is closed (1008)."""
        if self.bucket.spend(time.monotonic()):
            return True
        self._over_budget()
        return False

    def _message(self, data: bytes, is_text: bool) -> None:
        """A whole message (its credits spent frame by frame): to the inbox, for the hub."""
        self.last_frame_at = time.monotonic()  # whole messages only keep a connection alive
        self.inbox.append((data, is_text))
        if self.worker is None:
            self.worker = self.loop.create_task(self._work())
        if len(self.inbox) >= INBOX_LIMIT:
            self._pause_reading()

    def _over_budget(self) -> None:
        """The frame that found no credit closes the connection (1008); the messages read
        before it, within the budget, are handled first and answered before the close."""
        self.edge.metrics.rate_limit_closes.inc()
        if self.worker is None:
            self.close(CloseCode.POLICY_VIOLATION, "rate budget exceeded")
            return
        self.refused = True  # nothing more is handled; the worker closes once it is done
        self.closing_after = (CloseCode.POLICY_VIOLATION, "rate budget exceeded")
        self._pause_reading()

    def _pause_reading(self) -> None:
        if not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        """Read again, unless the socket still pushes back, the inbox is full, or a close is
        waiting for the inbox to be handled."""
        if (
            self.reading_paused
            and not self.writing_paused
            and len(self.inbox) < INBOX_LIMIT
            and self.closing_after is None
        ):
            self.reading_paused = False
            if self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()

    async def _work(self) -> None:
        """Hand the inbox to the hub in order, one message at a time."""
        edge = self.edge
        metrics = edge.metrics
        try:
            while self.inbox:  # a close that refuses the rest empties it
                if self.writing_paused:
                    # Its answers would only pile up: handled once it reads again (the
                    # requests of one read, up to the rate budget, wait here, not their
                    # answers: a list, a view or a replay each).
                    await self.writable.wait()
                    if not self.inbox:
                        break
                data, is_text = self.inbox.popleft()
                if len(self.inbox) < INBOX_LIMIT // 2:
                    self._resume_reading()
                if is_text:
                    metrics.bad_frames.labels("text").inc()
                    self.close(CloseCode.UNSUPPORTED_DATA, "binary frames only")
                    break
                try:
                    message = decode_client(data)
                except DecodeError as exc:
                    metrics.bad_frames.labels("msgpack").inc()
                    self.close(CloseCode.INVALID_PAYLOAD, str(exc)[:100])
                    break
                except SchemaError as exc:
                    metrics.bad_frames.labels("schema").inc()
                    self.send(
                        Error(
                            code=ErrorCode.INVALID_MESSAGE.value,
                            message=str(exc),
                            request=exc.request_type,
                        )
                    )
                    await asyncio.sleep(0)  # a run of bad frames does not hold the loop
                    continue
                await edge.hub.handle(self, message)
        except Exception:
            log.exception("connection %s failed", self.session_id)
            self.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self.worker = None
            if self.closing_after is not None:
                self.close(*self.closing_after)

    # --- keepalive ---------------------------------------------------------------------------

    def keepalive(self, now: float, interval: float, timeout: float | None) -> None:
        """Ping every `interval` seconds; close (1011) when a ping waits over `timeout`."""
        if self.closing or self.ws.state is not State.OPEN:
            return
        if self.ping_outstanding:
            if timeout is not None and now - self.last_ping_at > timeout:
                self.ws.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
                self.closing = self.refused = True
                self.inbox.clear()
                self._flush()
        elif now - self.last_ping_at >= interval:
            self.ping_outstanding = True
            self.last_ping_at = now
            self.ws.send_ping(os.urandom(4))
            self._flush()


class Transport:
    """Listens for connections and feeds each one's messages to the hub."""

    def __init__(self, hub: Hub, settings: Settings, metrics: Metrics) -> None:
        self.hub = hub
        self.settings = settings
        self.metrics = metrics
        self.server: asyncio.Server | None = None
        #: Every connection, and those past the opening handshake (the hub's sessions).
        self.connections: set[WebSocketSession] = set()
        self.sessions: set[WebSocketSession] = set()
        #: Closed connections whose hub goodbye is still running.
        self.finishing: set[asyncio.Task[None]] = set()
        #: Session ids, unique on this node (`Hub.holder_of` pairs them with the node id).
        self.session_ids = itertools.count(1)
        self.origins: list[Origin | None] | None = None
        if settings.origins:
            # Browsers send Origin; scripts and the terminal client send none.
            self.origins = [Origin(o) for o in settings.origins] + [None]
        self._watch: asyncio.Task[None] | None = None
        self.admission = Admission.from_settings(settings)

    @property
    def port(self) -> int:
        assert self.server is not None
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(
            lambda: WebSocketSession(self),
            self.settings.host,
            self.settings.port,
            reuse_address=True,
        )
        self._watch = asyncio.create_task(self._watchdog(), name="solrace-watchdog")

    async def _watchdog(self) -> None:
        """One timer for every socket (cheaper than one per socket): idle timeout, pings. A
        round that fails is logged and the next comes (`run_every`): one exception ended the
        idle timeouts and keepalive of every connection on the node."""
        settings = self.settings
        timeouts = (settings.idle_timeout_s, settings.ping_interval_s, settings.ping_timeout_s)
        every_s = min(1.0, *(x / 4 for x in timeouts if x is not None))
        await run_every(every_s, self._watch_round, log, "watching the connections")

    async def _watch_round(self) -> None:
        settings = self.settings
        idle = settings.idle_timeout_s
        interval, timeout = settings.ping_interval_s, settings.ping_timeout_s
        now = time.monotonic()
        for session in list(self.sessions):
            if now - session.last_frame_at > idle and not session.closing:
                session.close(CloseCode.IDLE_TIMEOUT, "idle")
            elif interval is not None:
                session.keepalive(now, interval, timeout)
        self.admission.forget_refilled(now)

    async def stop(self, code: CloseCode = CloseCode.SERVICE_RESTART) -> None:
        """Stop accepting and the watchdog (waiting until it has ended), close every
        connection with `code`, wait for the goodbyes, then for what the closed sessions
        store (`close_connections`, then `wait_closed_sessions`)."""
        await self.close_connections(code)
        await self.wait_closed_sessions()

    async def close_connections(self, code: CloseCode = CloseCode.SERVICE_RESTART) -> None:
        """Stop accepting and the watchdog (waiting until it has ended), close every
        connection with `code` and wait for the goodbyes: `close_timeout_s`, then the late
        ones are aborted (and waited for as long again)."""
        if self._watch is not None:
            await cancel_and_wait([self._watch])
            self._watch = None
        if self.server is None:
            return
        self.server.close()
        for connection in list(self.connections):
            if connection.opened:
                connection.close(code, "server restart")
            elif connection.transport is not None:
                connection.transport.abort()
        waiting = [c.lost for c in self.connections]
        close_timeout = self.settings.close_timeout_s
        if waiting:
            _, late = await asyncio.wait(waiting, timeout=close_timeout)
            if late:
                for connection in list(self.connections):
                    connection._abort()
                await asyncio.wait(late, timeout=close_timeout)

    async def wait_closed_sessions(self) -> None:
        """Once the connections are closed: wait for what their sessions' close does (a
        racer marked away in the store), at most `close_timeout_s`. What is still under way
        then, or when the stop's deadline cuts this wait (the request a connection was
        handling as it closed included), is cancelled and waited for, so that none of it
        outlives the stop: the racers it would have marked away are away
        anyway once a node loads the races again (one node), or once this node's presence
        runs out (several nodes)."""
        if self.server is None:
            return
        waiting = list(self.finishing)
        try:
            if waiting:
                _, late = await asyncio.wait(waiting, timeout=self.settings.close_timeout_s)
                if late:
                    log.warning(
                        "stopping: %d closed connection(s) not yet stored as away after %g s "
                        "(SOLRACE_CLOSE_TIMEOUT_S): given up",
                        len(late),
                        self.settings.close_timeout_s,
                    )
        finally:
            await cancel_and_wait(task for task in waiting if not task.done())
        await self.server.wait_closed()
