"""The head of a connection's first request, read before websockets' protocol sees it (sans-I/O).

Until the request head is whole it is kept here, and the protocol then gets it alone: what
follows it (a body, a second request, frames sent before our 101) is handed over only once the
request is answered, so that it cannot fail the stream before the answer is written. The
protocol would also fail, unanswered, what a plain HTTP server answers: another method than
GET or HEAD, or a GET or HEAD with a body. `HeadReader` takes the bytes as they come and says
what to do with them (a verdict); the transport does it. Bytes in, verdicts out: no socket,
no clock, so the cases are tested without a server (tests/server/test_http_head.py).

- Empty lines before the request line are skipped (RFC 9112, 2.2).
- Bytes no request line begins with (a method byte no token has, or a method longer than
  any: a TLS hello begins with 0x16 and may never send a line feed) are `NotHttp` at once,
  whether the line came whole or in pieces, not kept for the handshake's whole time.
- A first line that is not `METHOD TARGET HTTP/1.x` (HTTP/2 or 0.9), a line ending in a bare
  LF (anywhere in the head: as soon as it comes, not after the handshake's time), a target
  that is not printable ASCII, a header line that is not `Name: value` (no colon, whitespace
  before it, a line folded onto the one before) or a value with a control character is
  `NotHttp` too, with its reason: websockets' protocol would close such a request unanswered.
- A head over `MAX_HEAD_BYTES` is `TooLarge` (431). websockets answers 431 itself to a line
  over 8 KiB or more than 128 headers.
- A path the server does not serve (neither a probe nor the WebSocket path, the query aside;
  a target in absolute form by its path) is `NotFound` (404), whatever the method: a WebSocket
  handshake is taken on one path only.
- Another method than GET or HEAD is `NotAllowed` (405) before the protocol reads the head:
  a body it cannot parse would fail it.
- A body announced on a probe (`/healthz`, `/metrics`) is discarded, the probe answered as one
  without; on a handshake it is `HandshakeBody` (400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A request head is kept until it is whole, up to this: a longer one is refused (431).
MAX_HEAD_BYTES = 64 * 1024
#: Header lines that may announce a request body (names are case-insensitive).
BODY_HEADERS = (b"content-length:", b"transfer-encoding:")
#: Plain HTTP paths, which answer GET and HEAD; the WebSocket opens with a GET on the one path
#: the server is set to (`HeadReader`'s `ws_path`, `/` by default).
PROBE_PATHS = ("/healthz", "/metrics")
#: The path WebSocket clients connect to unless the server is set to another (`ws://HOST:PORT`
#: asks for it).
DEFAULT_WS_PATH = "/"

#: The bytes an HTTP method (a token) is made of.
_TOKEN_BYTES = frozenset(
    b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)
#: No method is longer (the longest registered one has 17 letters).
MAX_METHOD_BYTES = 32
#: A request target websockets takes (printable ASCII), and a header value (RFC 9110: no
#: control character but the tab).
_TARGET = re.compile(rb"[\x21-\x7e]+")
_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")


#: The scheme and authority an absolute-form request target begins with (`http://host:port`).
_ABSOLUTE_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


def path_of(target: str) -> str:
    """A request target's path: what comes before its query (`/?x=1` is `/`). A target in
    absolute form (`http://host:port/path?x=1`, which a server must take: RFC 9112, 3.2.2,
    and HAProxy forwards as a client sent it) is its path (`/path`; `/` if it has none)."""
    start = _ABSOLUTE_START.match(target)
    if start is not None:
        target = target[start.end() :]
        if not target.startswith("/"):
            target = "/" + target
    return target.split("?", 1)[0]


def is_probe(path: str) -> bool:
    """Is `path` (a request target, its query included) one of the plain HTTP paths?"""
    return path_of(path) in PROBE_PATHS


def allowed_methods(path: str) -> str:
    """The methods `path` answers, as an `Allow` header says them."""
    return "GET, HEAD" if is_probe(path) else "GET"


@dataclass(frozen=True)
class Incomplete:
    """The head is not whole yet: nothing to do until more bytes come."""


@dataclass(frozen=True)
class NotHttp:
    """Not a request this server reads (no request line begins with these bytes, or the
    head is malformed): answer 400, saying `reason`, and close."""

    reason: str = "not an HTTP request"


@dataclass(frozen=True)
class TooLarge:
    """A head longer than `MAX_HEAD_BYTES`: answer 431 and close."""


@dataclass(frozen=True)
class NotAllowed:
    """A method other than GET and HEAD: answer 405; what follows is discarded."""

    method: str
    path: str


@dataclass(frozen=True)
class NotFound:
    """A path the server does not serve (`method` on `path`, a request target): answer 404,
    naming the WebSocket path; what follows is discarded."""

    method: str
    path: str


@dataclass(frozen=True)
class HandshakeBody:
    """A handshake (not a probe) that announces a body: answer 400; what follows is
    discarded."""


@dataclass(frozen=True)
class WholeHead:
    """A whole head for the protocol (a probe's body headers taken out), then `rest`, what
    followed it (none for a probe with a body: discarded), once it is answered."""

    head: bytes
    rest: bytes


Verdict = Incomplete | NotHttp | TooLarge | NotFound | NotAllowed | HandshakeBody | WholeHead

INCOMPLETE = Incomplete()


def _is_request_line(line: bytes | bytearray) -> bool:
    """`METHOD TARGET HTTP/1.x` and its CR (the LF cut off): a request the head is kept for
    (anything else goes to the protocol at once, which refuses it)."""
    parts = line.split(b" ")
    return len(parts) == 3 and parts[2] in (b"HTTP/1.1\r", b"HTTP/1.0\r")


def _not_request_line(line: bytes | bytearray) -> NotHttp:
    """Why `line` (its LF cut off), a whole first line, is not a request line."""
    if not line.endswith(b"\r"):
        return NotHttp("lines of a request end with CR LF")
    return NotHttp("a request line is METHOD TARGET HTTP/1.1")


def _has_bare_lf(head: bytearray, start: int, stop: int) -> bool:
    """Is there a line feed without its CR from `start` on (this read's bytes: each byte is
    looked at once, however the head is cut into reads) before `stop` (the head's end: what
    follows it, frames sent with the handshake, may hold any byte)?"""
    at = head.find(b"\n", start, stop)
    while at >= 0:
        if at == 0 or head[at - 1] != 0x0D:
            return True
        at = head.find(b"\n", at + 1, stop)
    return False


def _well_formed(header_lines: list[bytes]) -> bool:
    """Is every header line `Name: value`, its name a token right before the colon (no
    whitespace there, no line folded onto the one before), its value free of control
    characters (a lone CR too)?"""
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or not all(byte in _TOKEN_BYTES for byte in name):
            return False
        if not _VALUE.fullmatch(value):
            return False
    return True


def _may_begin_request(start: bytes | bytearray) -> bool:
    """Could `start`, the first bytes of a head, begin a request line? Not once its method
    has a byte no token has, or is longer than any."""
    method, space, _ = bytes(start[: MAX_METHOD_BYTES + 1]).partition(b" ")
    if len(method) > MAX_METHOD_BYTES or (space and not method):
        return False
    return all(byte in _TOKEN_BYTES for byte in method)


def _announces_body(lines: list[bytes]) -> bool:
    """Does the head (its lines) say a body follows: a `Transfer-Encoding`, or a
    `Content-Length` other than 0 (which the protocol takes as no body)?"""
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class HeadReader:
    """One connection's request head, kept until it is whole. Every verdict but
    `Incomplete` is the last: the reader is done with the connection then. `ws_path` is the
    path WebSocket handshakes are taken on; the probes answer on theirs."""

    def __init__(self, ws_path: str = DEFAULT_WS_PATH) -> None:
        self._head = bytearray()
        self._ws_path = ws_path

    @property
    def held(self) -> bytes:
        """The bytes kept so far (empty lines before the request line skipped)."""
        return bytes(self._head)

    def feed(self, data: bytes) -> Verdict:
        """What to do now that `data`, the next bytes of the connection, came."""
        head = self._head
        head += data
        while head.startswith(b"\r\n"):  # empty lines before the request line are ignored
            del head[:2]
        if head == b"\r":
            return INCOMPLETE  # perhaps an empty line's CR, its LF to come
        start = len(head) - len(data)
        if not _may_begin_request(head):  # however many of its bytes came in this read
            return NotHttp()
        line_end = head.find(b"\n")
        if line_end >= 0 and not _is_request_line(head[:line_end]):
            return _not_request_line(head[:line_end])
        end = head.find(b"\r\n\r\n", max(0, start - 3))
        if _has_bare_lf(head, max(0, start), len(head) if end < 0 else end + 4):
            return NotHttp("lines of a request end with CR LF")
        if end < 0:
            return INCOMPLETE if len(head) <= MAX_HEAD_BYTES else TooLarge()
        if end + 4 > MAX_HEAD_BYTES:  # whole at once (in one read), but past the limit
            return TooLarge()
        rest = bytes(head[end + 4 :])
        lines = bytes(head[:end]).split(b"\r\n")
        if not _well_formed(lines[1:]):
            return NotHttp("a header line is Name: value")
        target = lines[0].split(b" ")[1]
        if not _TARGET.fullmatch(target):
            return NotHttp("a request target is printable ASCII")
        method, path, _ = (part.decode("ascii", "replace") for part in lines[0].split(b" "))
        if not is_probe(path) and path_of(path) != self._ws_path:
            return NotFound(method, path)
        if method not in ("GET", "HEAD"):
            return NotAllowed(method, path)
        if _announces_body(lines):
            if not is_probe(path):
                return HandshakeBody()
            lines = [line for line in lines if not line.lower().startswith(BODY_HEADERS)]
            rest = b""  # the probe's body: discarded
        return WholeHead(b"\r\n".join(lines) + b"\r\n\r\n", rest)


__all__ = [
    "DEFAULT_WS_PATH",
    "MAX_HEAD_BYTES",
    "PROBE_PATHS",
    "HandshakeBody",
    "HeadReader",
    "Incomplete",
    "NotAllowed",
    "NotFound",
    "NotHttp",
    "TooLarge",
    "Verdict",
    "WholeHead",
    "allowed_methods",
    "is_probe",
    "path_of",
]
