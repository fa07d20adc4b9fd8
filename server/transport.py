"""The WebSocket edge: bytes in, bytes out, limits enforced; decisions stay in the hub.

`Transport` listens on the node's port and makes each connection a `WebSocketSession`
(websocket_session.py: its frames, limits, back-pressure and keepalive; what the port answers
before a WebSocket opens is http_answers.py, websockets' protocol as the edge uses it
websocket_protocol.py). One timer watches every connection (the idle timeout, keepalive
pings), and a stop closes them all.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

from websockets.typing import Origin

from solrace.server.admission import Admission
from solrace.server.held_frames import HeldFrames
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.periodic import run_every
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.settings import Settings
from solrace.server.websocket_session import CloseWarnings, WebSocketSession
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.transport")


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
        #: Which abuse closes are logged as WARNINGs (`WebSocketSession._log_close`).
        self.close_warnings = CloseWarnings()
        #: Where progress frames wait for a frame to go out with (held_frames.py).
        hold_s = settings.progress_hold_s
        self.held = HeldFrames(hold_s) if hold_s > 0 else None

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
                    connection.abort()
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


__all__ = ["Transport"]
