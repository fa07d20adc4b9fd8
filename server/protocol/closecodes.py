"""The one table of WebSocket close codes the server uses, and why.

Codes below 4000 are the standard ones (RFC 6455); 4000-4999 are ours. Some are sent by the
websockets protocol itself, on frames it cannot accept (1002, 1007, 1009, 1011); they are here
too, so that the table lists every code a client may get.
`docs/protocol.md` reproduces this table; a test keeps the two in step.
"""

from __future__ import annotations

from enum import IntEnum


class CloseCode(IntEnum):
    """Why the server closed a connection."""

    NORMAL = 1000
    GOING_AWAY = 1001
    PROTOCOL_ERROR = 1002
    UNSUPPORTED_DATA = 1003
    INVALID_PAYLOAD = 1007
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    SERVICE_RESTART = 1012
    UNSUPPORTED_PROTOCOL = 4000
    AUTH_FAILED = 4001
    REPLACED = 4003
    IDLE_TIMEOUT = 4004
    TOO_SLOW = 4005


CLOSE_REASONS: dict[CloseCode, str] = {
    CloseCode.NORMAL: "the client said goodbye (the server answers a close with its code)",
    CloseCode.GOING_AWAY: "never sent by the server; a proxy between may send it",
    CloseCode.PROTOCOL_ERROR: "a frame WebSocket does not allow (RFC 6455): unmasked, RSV "
    "bits set, a reserved opcode, a continuation with no message to continue, a control frame "
    "over 125 bytes or fragmented, a close code not allowed on the wire (999, 1005)",
    CloseCode.UNSUPPORTED_DATA: "a text frame: the protocol uses binary frames only",
    CloseCode.INVALID_PAYLOAD: "a frame that is not one msgpack map, or a close frame whose "
    "reason is not UTF-8",
    CloseCode.POLICY_VIOLATION: "the connection's rate budget is spent (flood), or it sent "
    "too many wrong admin tokens or invite codes (the reason says which)",
    CloseCode.MESSAGE_TOO_BIG: "a message above the size cap (16 KiB by default) or in more "
    "than 64 fragments",
    CloseCode.INTERNAL_ERROR: "a bug in the server, or the keepalive ping went unanswered; "
    "the client may reconnect",
    CloseCode.SERVICE_RESTART: "the server is shutting down (SIGTERM); reconnect shortly",
    CloseCode.UNSUPPORTED_PROTOCOL: "the hello asked for a protocol version the server lacks",
    CloseCode.AUTH_FAILED: "the hello carried a token that is malformed, forged or unknown",
    CloseCode.REPLACED: "the same player connected again elsewhere; this socket is stale",
    CloseCode.IDLE_TIMEOUT: "no message from the client for the idle timeout",
    CloseCode.TOO_SLOW: "the client does not read: its outgoing queue overflowed",
}
