"""What the close of a link means: the words for it the user reads (`close_text`, one table
of meanings for every close code of the server's and a dropped link; `link_end_text`, which
says a close this client sent itself over what the server sent), and the close codes after
which connecting again cannot help (`FATAL_CLOSE_CODES`)."""

from __future__ import annotations

from typing import Final

from websockets.asyncio.client import ClientConnection

from solrace.server.protocol.closecodes import CloseCode

#: Close codes after which connecting again cannot help.
FATAL_CLOSE_CODES: Final = frozenset(
    {CloseCode.UNSUPPORTED_PROTOCOL, CloseCode.AUTH_FAILED, CloseCode.REPLACED}
)

#: A link that dropped without a close frame (websockets' code for it; never on the wire).
ABNORMAL_CLOSURE: Final = 1006

#: What a close code means to the user of this client, for every code of the server's table
#: (`closecodes.CLOSE_REASONS` says why the server sends each) and a dropped link.
CLOSE_MEANINGS: Final[dict[int, str]] = {
    CloseCode.NORMAL: "the server ended the connection",
    CloseCode.GOING_AWAY: "going away: a proxy between (or the server) closed the link",
    CloseCode.PROTOCOL_ERROR: "the server refused a frame WebSocket does not allow",
    CloseCode.UNSUPPORTED_DATA: "the server refused a text frame: it takes binary frames only",
    ABNORMAL_CLOSURE: "the link dropped",
    CloseCode.INVALID_PAYLOAD: "the server could not read a frame",
    CloseCode.POLICY_VIOLATION: "too fast: the server's rate limit closed the link",
    CloseCode.MESSAGE_TOO_BIG: "a message too big for the server",
    CloseCode.INTERNAL_ERROR: "a server error (or the link stopped answering its keepalive)",
    CloseCode.SERVICE_RESTART: "the server is restarting",
    CloseCode.UNSUPPORTED_PROTOCOL: "the server does not speak this client's protocol version",
    CloseCode.AUTH_FAILED: "the server refused this player's token",
    CloseCode.REPLACED: "this player connected again elsewhere",
    CloseCode.IDLE_TIMEOUT: "idle too long: the server heard nothing from this client",
    CloseCode.TOO_SLOW: "this client read too slowly: the server's queue for it overflowed",
}


#: How the server's 1008 reason begins when it closed for wrong secrets, not for speed
#: (`too many wrong admin tokens`, `too many wrong invite codes`), and what that means.
WRONG_GUESSES: Final = "too many wrong "
WRONG_GUESSES_MEANING: Final = "the server closed the link after too many wrong guesses"


#: What a close this client sent means, where it failed the link itself over what the server
#: sent (websockets does so, and then reports no close code but 1006, "the link dropped").
OWN_CLOSE_MEANINGS: Final[dict[int, str]] = {
    CloseCode.PROTOCOL_ERROR: "the server sent a frame WebSocket does not allow",
    CloseCode.INVALID_PAYLOAD: "the server sent a text frame that is not UTF-8",
    CloseCode.MESSAGE_TOO_BIG: "the server sent a frame too big for this client",
    CloseCode.INTERNAL_ERROR: "the server stopped answering this client's keepalive pings",
}


def link_end_text(ws: ClientConnection) -> str:
    """Why a closed link ended, for the user: the server's close (`close_text`), or, when this
    client failed the link over a frame the server sent (too big, not WebSocket) or a
    keepalive the server left unanswered, what this client's own close says."""
    protocol = ws.protocol
    sent = protocol.close_sent
    if protocol.close_rcvd is None and sent is not None and sent.code in OWN_CLOSE_MEANINGS:
        said = f": {sent.reason}" if sent.reason else ""
        return f"{OWN_CLOSE_MEANINGS[sent.code]} ({sent.code}{said})"
    return close_text(ws.close_code, ws.close_reason or "")


def close_text(code: int | None, reason: str = "") -> str:
    """What a close means, for the user, its code (and the server's reason, if given) in
    brackets: `the server is restarting (1012)`, `this player connected again elsewhere (4003:
    connected again elsewhere)`; a code this client does not know is `link lost (CODE)`. A 1008
    for wrong secrets (`WRONG_GUESSES`) is said as such, not as speed.
    Every line of the client that names a close says it with this."""
    if code is None:
        return "link lost"
    meaning = CLOSE_MEANINGS.get(code, "link lost")
    if code == CloseCode.POLICY_VIOLATION and reason.startswith(WRONG_GUESSES):
        meaning = WRONG_GUESSES_MEANING
    return f"{meaning} ({code}: {reason})" if reason else f"{meaning} ({code})"


__all__ = [
    "ABNORMAL_CLOSURE",
    "CLOSE_MEANINGS",
    "FATAL_CLOSE_CODES",
    "OWN_CLOSE_MEANINGS",
    "close_text",
    "link_end_text",
]
