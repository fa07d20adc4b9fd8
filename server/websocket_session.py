"""One client connection at the WebSocket edge: bytes in, bytes out, limits enforced; decisions
stay in the hub.

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

Until the WebSocket opens, what comes is an HTTP request, answered by `http_answers`. The
idle timeout and the keepalive pings run on the edge's one watchdog (`Transport`,
transport.py), which calls each session's `keepalive`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel
from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State

from solrace.server.admission import Refusal, client_key
from solrace.server.http_answers import answer_request, take_head
from solrace.server.http_head import HeadReader
from solrace.server.log_throttle import LogThrottle
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_client, encode
from solrace.server.protocol.errors import DecodeError, ErrorCode, SchemaError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Error
from solrace.server.protocol.ratelimit import CreditBucket
from solrace.server.session import Session
from solrace.server.websocket_protocol import (
    ConnectionLog,
    NoAutoPongProtocol,
    server_frame,
    ws_log,
)
from solrace.tasks import cancel_and_wait

if TYPE_CHECKING:
    from solrace.server.transport import Transport

log = logging.getLogger("solrace.server.websocket_session")

#: Frames read ahead of the hub per connection; past it the socket is not read (back-pressure).
INBOX_LIMIT = 16

#: Fragments one message may come in; one more closes the connection with 1009.
MAX_FRAGMENTS = 64

#: Bytes of frames a connection holds back (`hold_frame`) before it writes them at once.
MAX_HELD_BYTES = 16 * 1024

#: The server's closes for what a client did wrong, logged as WARNINGs (`CloseWarnings`).
#: A bad token (4001: every returning client after the secret is rotated) and too slow a
#: reader (4005: usually a slow network) are not among them: logged at INFO.
ABUSE_CLOSES = frozenset(
    {
        CloseCode.PROTOCOL_ERROR,
        CloseCode.UNSUPPORTED_DATA,
        CloseCode.INVALID_PAYLOAD,
        CloseCode.POLICY_VIOLATION,
        CloseCode.MESSAGE_TOO_BIG,
    }
)

#: Seconds between two WARNINGs about one address's abuse closes.
CLOSE_WARN_EVERY_S = 60.0


class CloseWarnings:
    """The server's abuse closes (`ABUSE_CLOSES`) in the log: the first from an address is a
    WARNING, then at most one per `CLOSE_WARN_EVERY_S`, counting the ones said at INFO since
    that address's previous WARNING. Once a minute, addresses whose last WARNING is that old
    are forgotten, and those with closes said at INFO since are told as a WARNING with their
    count then."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.lines = LogThrottle(CLOSE_WARN_EVERY_S)
        self.swept_at = clock()

    def say(self, label: str, address: str, code: int, reason: str) -> None:
        """Log the server's abuse close `code` (`reason`) of connection `label` from
        `address`."""
        now = self.clock()
        unsaid = self.lines.due(address, now)
        if unsaid is None:
            ws_log.info("%s closed by the server: %d %s", label, code, reason)
        else:
            ws_log.warning(
                "%s closed by the server: %d %s%s",
                label,
                code,
                reason,
                f" ({unsaid} more abuse closes from this address since its previous such "
                "warning, said at INFO; one warning a minute at most)"
                if unsaid
                else "",
            )
        if now - self.swept_at >= CLOSE_WARN_EVERY_S:
            self.swept_at = now
            for old, unsaid in self.lines.forget(now).items():
                ws_log.warning(
                    "%d more abuse closes from %s since its previous such warning, said at "
                    "INFO; one warning a minute at most",
                    unsaid,
                    old or "an unknown address",
                )


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
        self.ws = NoAutoPongProtocol(
            origins=edge.origins, max_size=settings.max_frame_bytes, logger=ConnectionLog(self)
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
        #: Past an admission limit: the answer to its handshake.
        self.refusal: Refusal | None = None
        #: Frames held back (`hold_frame`), as written, and their bytes.
        self.held: list[bytes] = []
        self.held_bytes = 0

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
        self.timer = self.loop.call_later(self.edge.settings.open_timeout_s, self.abort)

    def data_received(self, data: bytes) -> None:
        if self.head is not None:
            data = take_head(self, data)
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
                answer_request(self, event)
        self.flush()

    def eof_received(self) -> bool | None:
        self.ws.receive_eof()
        self.flush()
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
        """`Admission.register` for this connection's address; a refusal is logged (a
        WARNING with the connection's label), once a minute per address."""
        admission, now = self.edge.admission, time.monotonic()
        refusal = admission.register(self.address, now)
        if refusal is not None and admission.is_news(self.address, now):
            log.warning("%s: a new name refused: %s (said once a minute)", self.label, refusal)
        return refusal

    def unregister(self) -> None:
        self.edge.admission.unregister(self.address)

    def accepted(self) -> None:
        """The handshake was answered 101: the connection is one of the hub's sessions now,
        and the log says so with its id and address (`ws_log`, INFO)."""
        self.opened = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.edge.sessions.add(self)
        self.edge.metrics.connections.inc()
        ws_log.info("%s open", self.label)

    def connection_lost(self, exc: Exception | None) -> None:
        # Messages already read are still handled (a resign sent just before closing
        # counts); their answers go nowhere.
        self.closing = True
        self.writable.set()  # the worker handles what was read (nothing is written now)
        self._take_held()  # nor ever: not kept until their hold is over
        if self.timer is not None:
            self.timer.cancel()
        edge = self.edge
        edge.connections.discard(self)
        edge.admission.leave(self.address)
        if self.opened:
            self._log_close()
            edge.sessions.discard(self)
            edge.metrics.connections.dec()
            finish = self.loop.create_task(self._finish(), name=f"solrace-bye-{self.session_id}")
            edge.finishing.add(finish)
            finish.add_done_callback(edge.finishing.discard)
        self.lost.set_result(None)

    def _log_close(self) -> None:
        """One line for the close of an opened connection: its id and address, who closed it,
        the code and the reason. The server's closes for a client's misdeeds (`ABUSE_CLOSES`)
        are WARNINGs, at most one a minute per address, the others of them at INFO and counted
        (`CloseWarnings`); the others, and every close the client began, are INFO."""
        ws, label = self.ws, self.label
        sent, received = ws.close_sent, ws.close_rcvd
        if sent is not None and (received is None or ws.close_rcvd_then_sent is False):
            if sent.code in ABUSE_CLOSES:
                self.edge.close_warnings.say(label, self.address, sent.code, sent.reason)
            else:
                ws_log.info("%s closed by the server: %d %s", label, sent.code, sent.reason)
        elif received is not None:
            # The client's reason is its own text: quoted, so it cannot make lines of its own.
            ws_log.info(
                "%s closed by the client: %d %r", label, received.code, received.reason[:123]
            )
        else:
            ws_log.info("%s closed without a close frame (1006)", label)

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

    def hold_frame(self, frame: bytes) -> None:
        """Send `frame` with the next frame this session writes, or once the edge's hold
        is over (`HeldFrames`), whichever comes first. Not held while the socket pushes back
        (counted as any frame then), past `MAX_HELD_BYTES`, or when the edge holds nothing."""
        if self.closing:
            return
        holding = self.edge.held
        if holding is None or self.writing_paused:
            self._put(frame)
            return
        data = server_frame(frame)
        held = self.held
        held.append(data)
        self.held_bytes += len(data)
        if len(held) == 1:
            holding.started_holding(self)
        elif self.held_bytes > MAX_HELD_BYTES:
            self.write_held()

    def write_held(self) -> None:
        """Write the frames held back, if any, now (their hold is over)."""
        if self.held:
            self._write(b"")

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
            self.flush()  # the frames held back go first, in the close's write

    # --- writing -----------------------------------------------------------------------------

    def _put(self, frame: bytes) -> None:
        self._write(server_frame(frame))

    def _take_held(self) -> bytes:
        """The frames held back, as one write; none are held after."""
        data = b"".join(self.held)
        self.held.clear()
        self.held_bytes = 0
        return data

    def _write(self, data: bytes) -> None:
        """Write `data` (one frame, or none: b""), the frames held back first, in one write."""
        frames = len(self.held) + (1 if data else 0)
        if self.held:
            data = self._take_held() + data
        if self.ws.state is not State.OPEN:  # the peer's close, or the protocol failed it
            self.closing = True
            return
        if self.writing_paused:
            self.written_while_paused += frames
            transport = self.transport
            assert transport is not None
            if (
                self.written_while_paused > self.max_outgoing
                or transport.get_write_buffer_size() + len(data) > self.max_outgoing_bytes
            ):
                self.edge.metrics.slow_closes.inc()
                self.close(CloseCode.TOO_SLOW, "outgoing queue overflow")
                return
        transport = self.transport
        if transport is None or transport.is_closing() or self.eof_written:
            return
        # Written directly: every frame the protocol queues is written by `flush` right
        # after (its queue is empty here), so the order of frames holds.
        transport.write(data)

    def flush(self) -> None:
        transport = self.transport
        if transport is None:
            return
        chunks = self.ws.data_to_send()
        if chunks and self.held and self.ws.close_rcvd is None:
            # What the protocol writes by itself (a pong, a ping, the close it makes when a
            # frame is past the size cap or the keepalive times out) takes the frames held
            # back along, before it in the same write, as every frame does. Not once the peer
            # has closed.
            held = self._take_held()
            if chunks[0]:
                chunks[0] = held + chunks[0]
            else:
                chunks.insert(0, held)  # before the end of the stream
        for chunk in chunks:
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
            self.timer = self.loop.call_later(self.edge.settings.close_timeout_s, self.abort)

    def abort(self) -> None:
        self.timer = None
        if self.transport is not None:
            self.transport.abort()

    # --- reading -----------------------------------------------------------------------------

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
                            race_id=None if exc.race_id is None else RaceId(exc.race_id),
                        )
                    )
                    await asyncio.sleep(0)  # a run of bad frames does not hold the loop
                    continue
                await edge.hub.handle(self, message)
        except Exception:
            log.exception("%s failed", self.label)
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
                self.flush()
        elif now - self.last_ping_at >= interval:
            self.ping_outstanding = True
            self.last_ping_at = now
            self.ws.send_ping(os.urandom(4))
            self.flush()


__all__ = ["ABUSE_CLOSES", "INBOX_LIMIT", "MAX_FRAGMENTS", "WebSocketSession"]
