"""The WebSocket edge: bytes in, bytes out, limits enforced; decisions stay in the hub.

Per connection: binary frames only, a size cap (websockets closes 1009), a credit-bucket rate
budget (1008), an idle timeout (4004), a bounded outgoing queue (4005), no compression. The
same port answers `GET /healthz` and `GET /metrics` over plain HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import time
from collections import deque
from http import HTTPStatus

from pydantic import BaseModel
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.protocol import Protocol, State
from websockets.typing import Origin

from solrace.server.hub import Hub
from solrace.server.metrics import CONTENT_TYPE, Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_client, encode
from solrace.server.protocol.errors import DecodeError, ErrorCode, SchemaError
from solrace.server.protocol.messages import Error
from solrace.server.protocol.ratelimit import CreditBucket
from solrace.server.session import Session
from solrace.server.settings import Settings

log = logging.getLogger("solrace.server.transport")

_session_ids = itertools.count(1)


class _Close:
    def __init__(self, code: CloseCode, reason: str) -> None:
        self.code = code
        self.reason = reason


def _can_write_directly(connection: ServerConnection) -> bool:
    """Does this websockets expose what `Connection.send` itself uses (its sans-I/O
    protocol, `send_data` and the `paused` flag of flow control)?"""
    return (
        isinstance(getattr(connection, "protocol", None), Protocol)
        and callable(getattr(connection, "send_data", None))
        and isinstance(getattr(connection, "paused", None), bool)
    )


class WebSocketSession(Session):
    """A session that hands each frame to the socket at once, in order, never blocking the
    hub. When the socket pushes back (websockets paused writing: the kernel's and the
    transport's buffers are full), frames wait in a bounded backlog that one writer task
    drains in order; a client that stops reading overflows it and is closed (4005)."""

    def __init__(self, connection: ServerConnection, max_outgoing: int) -> None:
        super().__init__(next(_session_ids))
        self.connection = connection
        self.max_outgoing = max_outgoing
        #: Frames (and at last a close) waiting for the writer task, oldest first.
        self.backlog: deque[bytes | _Close] = deque()
        self._backlogged = asyncio.Event()
        #: When the last frame arrived (monotonic seconds), for the idle watchdog.
        self.last_frame_at = time.monotonic()
        self.writer = asyncio.create_task(self._write(), name=f"solrace-writer-{self.session_id}")
        self.closing = False
        # Writing directly makes the two calls `Connection.send` makes, without a task
        # switch and an async context manager per frame (a sixth of a move's CPU on a
        # loaded node). Another websockets without them: every frame takes the writer task.
        self.direct = _can_write_directly(connection)

    def send(self, message: BaseModel) -> None:
        if not self.closing:
            self._put(encode(message))

    def send_frame(self, message: BaseModel, frame: bytes) -> None:
        if not self.closing:
            self._put(frame)

    def _put(self, frame: bytes) -> None:
        connection = self.connection
        # An empty backlog means every earlier frame is already with the transport, so a
        # direct write keeps the order; while paused the writer task waits for the socket.
        if (
            not self.backlog
            and self.direct
            and connection.protocol.state is State.OPEN
            and not connection.paused
        ):
            try:
                connection.protocol.send_binary(frame)
                connection.send_data()
            except Exception:  # as `Connection.send` does with an unexpected error
                log.exception("connection %s: write failed", self.session_id)
                self.closing = True
                connection.transport.abort()
            return
        if len(self.backlog) >= self.max_outgoing:
            self.closing = True
            self.backlog.clear()
            self.writer.cancel()
            asyncio.create_task(  # noqa: RUF006 - the close outlives this call on purpose
                connection.close(CloseCode.TOO_SLOW, "outgoing queue overflow")
            )
            return
        self.backlog.append(frame)
        self._backlogged.set()

    def close(self, code: CloseCode, reason: str) -> None:
        if not self.closing:
            self.closing = True
            self.backlog.append(_Close(code, reason))  # after every frame already sent
            self._backlogged.set()

    async def _write(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                while not self.backlog:
                    self._backlogged.clear()
                    await self._backlogged.wait()
                # Popped and handed to the transport in one step (`send` writes before it
                # waits for the socket), so the backlog never hides a frame not yet written.
                item = self.backlog.popleft()
                if isinstance(item, _Close):
                    await self.connection.close(item.code, item.reason)
                    return
                await self.connection.send(item)


async def _discard_incoming(connection: ServerConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        while True:
            await connection.recv()


class Transport:
    """Runs the websockets server and feeds each connection's messages to the hub."""

    def __init__(self, hub: Hub, settings: Settings, metrics: Metrics) -> None:
        self.hub = hub
        self.settings = settings
        self.metrics = metrics
        self.server: Server | None = None
        self.sessions: set[WebSocketSession] = set()
        self._idle_watch: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        port: int = next(iter(self.server.sockets)).getsockname()[1]
        return port

    async def start(self) -> None:
        settings = self.settings
        origins: list[Origin | None] | None = None
        if settings.origins:
            # Browsers send Origin; scripts and the terminal client send none.
            origins = [Origin(o) for o in settings.origins] + [None]
        self.server = await serve(
            self._serve_connection,
            settings.host,
            settings.port,
            process_request=self._process_request,
            max_size=settings.max_frame_bytes,
            max_queue=16,
            compression=None,
            ping_interval=settings.ping_interval_s,
            ping_timeout=settings.ping_timeout_s,
            origins=origins,
            server_header="solrace",
        )
        self._idle_watch = asyncio.create_task(self._close_idle_sessions(), name="solrace-idle")

    async def _close_idle_sessions(self) -> None:
        """One watchdog for every socket (cheaper than a timer around each receive)."""
        limit = self.settings.idle_timeout_s
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            now = time.monotonic()
            for session in list(self.sessions):
                if now - session.last_frame_at > limit and not session.closing:
                    session.close(CloseCode.IDLE_TIMEOUT, "idle")

    async def stop(self, code: CloseCode = CloseCode.SERVICE_RESTART) -> None:
        """Stop accepting, close every connection with `code`, wait for the handlers."""
        if self._idle_watch is not None:
            self._idle_watch.cancel()
        if self.server is None:
            return
        self.server.close(close_connections=True, code=code, reason="server restart")
        await self.server.wait_closed()

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return connection.respond(HTTPStatus.OK, "ok\n")
        if path == "/metrics":
            headers = Headers([("Content-Type", CONTENT_TYPE)])
            return Response(200, "OK", headers, self.metrics.render())
        return None

    async def _serve_connection(self, connection: ServerConnection) -> None:
        if self.settings.send_buffer_bytes is not None:
            sock = connection.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, self.settings.send_buffer_bytes
                )
        session = WebSocketSession(connection, self.settings.max_outgoing)
        self.sessions.add(session)
        self.metrics.connections.inc()
        bucket = CreditBucket(
            self.settings.rate_capacity, self.settings.rate_refill_per_s, time.monotonic()
        )
        try:
            await self._receive(connection, session, bucket)
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("connection %s failed", session.session_id)
            session.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self.sessions.discard(session)
            self.metrics.connections.dec()
            await self.hub.disconnected(session)
            # Let queued messages and a pending close go out, then stop the writer. Frames
            # the client already sent are read and dropped meanwhile: unread frames would
            # hold back its answer to our close frame until the close timeout.
            drain = asyncio.create_task(_discard_incoming(connection))
            if not session.writer.done():
                session.close(CloseCode.NORMAL, "bye")
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(session.writer, timeout=2)
            session.writer.cancel()
            drain.cancel()

    async def _receive(
        self, connection: ServerConnection, session: WebSocketSession, bucket: CreditBucket
    ) -> None:
        while not session.closing:
            frame = await connection.recv()
            session.last_frame_at = now = time.monotonic()
            if not bucket.spend(now):
                self.metrics.rate_limit_closes.inc()
                session.close(CloseCode.POLICY_VIOLATION, "rate budget exceeded")
                return
            if isinstance(frame, str):
                self.metrics.bad_frames.labels("text").inc()
                session.close(CloseCode.UNSUPPORTED_DATA, "binary frames only")
                return
            try:
                message = decode_client(frame)
            except DecodeError as exc:
                self.metrics.bad_frames.labels("msgpack").inc()
                session.close(CloseCode.INVALID_PAYLOAD, str(exc)[:100])
                return
            except SchemaError as exc:
                self.metrics.bad_frames.labels("schema").inc()
                session.send(
                    Error(
                        code=ErrorCode.INVALID_MESSAGE.value,
                        message=str(exc),
                        request=exc.request_type,
                    )
                )
                continue
            await self.hub.handle(session, message)
