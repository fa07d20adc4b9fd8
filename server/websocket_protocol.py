"""websockets' sans-I/O protocol as the edge uses it: the server protocol that leaves pongs to
the session (`NoAutoPongProtocol`), the logger its lines go to (`ws_log`, through a
connection's `ConnectionLog`; `probe_log` for the requests answered without opening a
WebSocket), and the frame the server writes without it
(`server_frame`)."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any, Protocol

from websockets.frames import Frame, Opcode
from websockets.server import ServerProtocol

ws_log = logging.getLogger("solrace.server.websocket")


class _ProbeLog(logging.LoggerAdapter[logging.Logger]):
    """websockets' log of a plain HTTP request (`/healthz`, `/metrics`) or of a refused
    handshake, its INFO lines at DEBUG: a load balancer checks every node every few seconds
    ("HTTP response sent (200 OK)", "connection closed"), which would drown the log at INFO."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        super().log(logging.DEBUG if level == logging.INFO else level, msg, *args, **kwargs)


probe_log = _ProbeLog(ws_log)


class _Labelled(Protocol):
    @property
    def label(self) -> str: ...


class ConnectionLog(logging.LoggerAdapter[logging.Logger]):
    """websockets' log of one connection: each line after the connection's label
    (`connection 12 from 192.0.2.7: connection rejected (403 Forbidden)`), and its
    `connection open` and `connection closed` at DEBUG: the session logs those itself, with
    its address, the close code and the reason (`WebSocketSession.accepted`, `_log_close`)."""

    def __init__(self, connection: _Labelled) -> None:
        super().__init__(ws_log)
        self.connection = connection

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if level == logging.INFO and msg in _OWN_LINES:
            level = logging.DEBUG
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        label = self.connection.label.replace("%", "%%")
        return f"{label}: {msg}", kwargs


#: The library's lines the session says better itself (`ConnectionLog`).
_OWN_LINES = frozenset({"connection open", "connection closed"})


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


_PING = Opcode.PING


class NoAutoPongProtocol(ServerProtocol):
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


__all__ = ["ConnectionLog", "NoAutoPongProtocol", "probe_log", "server_frame", "ws_log"]
