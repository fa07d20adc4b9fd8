"""The request head read before the protocol sees it (server/http_head.py), without a socket:
what each kind of first bytes gets, and the same verdict however the bytes are cut into reads
(the transport's answers to them: tests/integration/test_http_edges.py)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.http11 import Request
from websockets.server import ServerProtocol

from solrace.server.http_head import (
    MAX_HEAD_BYTES,
    HandshakeBody,
    HeadReader,
    Incomplete,
    NotAllowed,
    NotHttp,
    TooLarge,
    Verdict,
    WholeHead,
    allowed_methods,
    is_probe,
)

PROBE = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)
#: The start of a TLS ClientHello (a client speaking wss:// to a plain port): no line feed.
TLS_HELLO = bytes.fromhex("160301020001000001fc0303") + bytes(range(0x20, 0x40))


def read(*pieces: bytes) -> list[Verdict]:
    """The verdict after each piece, read in turn by one reader, up to the first final one."""
    reader = HeadReader()
    verdicts: list[Verdict] = []
    for piece in pieces:
        verdicts.append(reader.feed(piece))
        if not isinstance(verdicts[-1], Incomplete):
            break
    return verdicts


def test_a_whole_head_is_handed_over_with_what_follows_it() -> None:
    assert read(PROBE) == [WholeHead(PROBE, b"")]
    after = b"GET /metrics HTTP/1.1\r\n\r\n\xff\xff"
    assert read(PROBE + after) == [WholeHead(PROBE, after)]  # answered first, then this


def test_a_head_is_kept_until_it_is_whole() -> None:
    reader = HeadReader()
    assert reader.feed(PROBE[:20]) == Incomplete()
    assert reader.held == PROBE[:20]
    assert reader.feed(PROBE[20:-2]) == Incomplete()  # its end split between the two CRLFs
    assert reader.feed(PROBE[-2:] + b"rest") == WholeHead(PROBE, b"rest")


def outcome(*pieces: bytes) -> Verdict:
    """The final verdict on `pieces` read in turn, the reads after a whole head added to what
    follows it (as the transport hands them on)."""
    verdicts = read(*pieces)
    final = verdicts[-1]
    if isinstance(final, WholeHead):
        return WholeHead(final.head, final.rest + b"".join(pieces[len(verdicts) :]))
    return final


@given(st.lists(st.integers(1, len(UPGRADE) + 10), max_size=6))
def test_the_verdict_does_not_depend_on_how_the_bytes_are_cut(cuts: list[int]) -> None:
    raw = UPGRADE + b"\r\n" + b"frames"
    for whole in (raw, b"\r\n" + raw, b"\x16" + raw, b"POST" + raw[3:]):
        edges = [0, *sorted(set(cuts)), len(whole)]
        pieces = [whole[a:b] for a, b in itertools.pairwise(edges) if whole[a:b]]
        assert outcome(*pieces) == outcome(whole)


@pytest.mark.parametrize("first", [b"\r\n", b"\r\n\r\n", b"\r"])
def test_empty_lines_before_the_request_line_are_skipped(first: bytes) -> None:
    rest = b"\n" + PROBE if first == b"\r" else PROBE
    assert read(first, rest) == [Incomplete(), WholeHead(PROBE, b"")]
    assert read(first + rest) == [WholeHead(PROBE, b"")]


@pytest.mark.parametrize(
    "start", [TLS_HELLO, b"GET\x00", b" GET / HTTP/1.1", b"A" * 40, b"G\x00T /healthz HTTP/1.1"]
)
def test_bytes_no_request_line_begins_with_are_not_http_at_once(start: bytes) -> None:
    assert read(start) == [NotHttp()]
    # Byte by byte: known as soon as the byte that no method has comes (no line feed needed).
    verdicts = read(*(start[i : i + 1] for i in range(len(start))))
    assert verdicts[-1] == NotHttp() and len(verdicts) <= 33


def test_a_method_cut_short_by_a_read_is_not_taken_for_what_no_request_begins() -> None:
    assert read(b"GE", b"T", PROBE[3:]) == [Incomplete(), Incomplete(), WholeHead(PROBE, b"")]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"HELLO /\r\n", "a request line is METHOD TARGET HTTP/1.1"),
        (b"GET / HTTP/2.0\r\n", "a request line is METHOD TARGET HTTP/1.1"),
        (b"GET /\r\n", "a request line is METHOD TARGET HTTP/1.1"),
        (b"GET / HTTP/1.1\nHost: x\n\n", "lines of a request end with CR LF"),
    ],
)
def test_a_first_line_that_is_not_http_1_is_refused_with_its_reason(
    line: bytes, reason: str
) -> None:
    """websockets' protocol closed these unanswered."""
    assert read(line) == [NotHttp(reason)]


@pytest.mark.parametrize(
    "header",
    [b"Host x", b"Host : x", b" folded onto Host", b"\tfolded", b": no name", b"Ho\x00st: x"],
)
def test_a_header_line_that_is_not_name_colon_value_is_refused(header: bytes) -> None:
    """No colon, whitespace before it (RFC 9112: a server must answer 400), a line folded
    onto the one before: websockets' protocol closed these unanswered."""
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n"
    assert read(head) == [NotHttp("a header line is Name: value")]


@pytest.mark.parametrize("value", [b"a\x00b", b"a\rb", b"\x1b[31m"])
def test_a_header_value_with_a_control_character_is_refused(value: bytes) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: " + value + b"\r\n\r\n"
    assert read(head) == [NotHttp("a header line is Name: value")]


def test_a_target_that_is_not_printable_ascii_is_refused() -> None:
    assert read("GET /é HTTP/1.1\r\nHost: x\r\n\r\n".encode()) == [
        NotHttp("a request target is printable ASCII")
    ]


@pytest.mark.parametrize(
    "pieces",
    [
        (b"GET /healthz HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n",),
        # All bare: never a CR LF CR LF to end the head (it was held the handshake's time).
        (b"GET /healthz HTTP/1.1\r\nHost: x\nAccept: */*\n\n",),
        (b"GET /healthz HTTP/1.1\r\nHost: x", b"\n"),
    ],
)
def test_a_bare_line_feed_in_the_headers_is_refused_as_it_comes(pieces: tuple[bytes, ...]) -> None:
    assert read(*pieces)[-1] == NotHttp("lines of a request end with CR LF")


@pytest.mark.parametrize("cut", [None, 10, len(UPGRADE) + 2, len(UPGRADE) + 4])
def test_line_feeds_after_the_head_are_no_part_of_it(cut: int | None) -> None:
    """A frame the client wrote with its handshake (a masked frame: any byte, a line feed
    too) follows the head: it was taken for a bare line feed in the head and refused 400
    (the CI's flaky test of a hello sent with the handshake, as often as its mask made one)."""
    head = UPGRADE + b"\r\n"
    frame = b"\x82\x85\n\x0a\x00\x01\nabc\n"
    data = head + frame
    pieces = (data,) if cut is None else (data[:cut], data[cut:])
    assert outcome(*pieces) == WholeHead(head, frame)


@pytest.mark.parametrize(
    "header",
    [b"X-E:", b"Host:x", b"X-1_2-b: c", b"X-T:\tv", "X-U: caf\u00e9".encode(), b"Cookie: a=b; c=d"],
)
def test_valid_header_lines_pass(header: bytes) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n"
    assert read(head) == [WholeHead(head, b"")]


def test_a_head_too_long_goes_to_the_protocol_as_it_is() -> None:
    start = b"GET / HTTP/1.1\r\n"
    long_header = b"X-Long: " + b"a" * MAX_HEAD_BYTES
    assert read(start, long_header) == [Incomplete(), TooLarge()]
    # Whole in one read, each line well under websockets' own limit: too large all the same.
    many = b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(100))
    assert read(start + many + b"\r\n") == [TooLarge()]


@pytest.mark.parametrize("path", ["/", "/healthz", "/metrics?x=1"])
def test_other_methods_than_get_and_head_are_not_allowed(path: str) -> None:
    head = f"POST {path} HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".encode()
    assert read(head) == [NotAllowed("POST", path)]
    assert allowed_methods(path) == ("GET" if path == "/" else "GET, HEAD")


@pytest.mark.parametrize(
    "body_head",
    [
        b"Content-Length: 5\r\n\r\nhello",
        b"content-length: 5\r\n\r\nhel",
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ],
)
@pytest.mark.parametrize("method", [b"GET", b"HEAD"])
def test_a_probe_s_body_is_discarded_with_the_headers_that_announce_it(
    method: bytes, body_head: bytes
) -> None:
    start = method + b" /healthz HTTP/1.1\r\nHost: x\r\n"
    assert read(start + body_head) == [WholeHead(start + b"\r\n", b"")]


def test_a_handshake_with_a_body_is_refused_and_an_empty_one_is_no_body() -> None:
    assert read(UPGRADE + b"Content-Length: 5\r\n\r\nhello") == [HandshakeBody()]
    head = UPGRADE + b"Content-Length: 0\r\n\r\n"
    assert read(head + b"frame") == [WholeHead(head, b"frame")]  # the frames sent with it


# --- any bytes at all (property tests) ------------------------------------------------------

#: What request heads are made of, to draw heads near enough to HTTP to reach every check.
HEAD_PIECES = st.sampled_from(
    [
        b"GET", b"HEAD", b"POST", b" ", b"/", b"/healthz", b"/metrics?x=1", b"HTTP/1.1",
        b"HTTP/1.0", b"HTTP/2.0", b"\r\n", b"\r", b"\n", b"\r\n\r\n", b"Host", b": x", b":",
        b"\t", b"Content-Length: 0", b"Content-Length: 5", b"Transfer-Encoding: chunked",
        b"Upgrade: websocket", b"Connection: Upgrade", b"Sec-WebSocket-Version: 13",
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", b"\x00", b"\x16", b"\x80", b"\xff",
    ]
)  # fmt: skip
HEADS = st.tuples(
    st.sampled_from([b"", b"GET / HTTP/1.1\r\nHost: x\r\n", b"GET /healthz HTTP/1.1\r\n"]),
    st.lists(HEAD_PIECES | st.binary(max_size=4), max_size=16),
    st.sampled_from([b"", b"\r\n", b"\r\n\r\n"]),
    st.binary(max_size=8),
).map(lambda parts: parts[0] + b"".join(parts[1]) + parts[2] + parts[3])
#: A request line, then header lines drawn from the same pieces, then the head's end.
WHOLE_HEADS = st.tuples(
    st.sampled_from([b"GET / HTTP/1.1", b"HEAD /healthz HTTP/1.0", b"GET /metrics HTTP/1.1"]),
    st.lists(st.lists(HEAD_PIECES | st.binary(max_size=3), max_size=5).map(b"".join), max_size=6),
).map(lambda parts: b"\r\n".join([parts[0], *parts[1]]) + b"\r\n\r\n")
CUTS = st.lists(st.integers(0, 1000), max_size=6)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """`data` in pieces, cut at `points` (modulo its length)."""
    edges = [0, *sorted({p % (len(data) + 1) for p in points}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if data[a:b]]


def effect(verdict: Verdict) -> Verdict:
    """What the transport does with `verdict`: the bytes after a probe's head are discarded
    (it is answered and closed), those in its read or in later ones alike."""
    if isinstance(verdict, WholeHead) and is_probe(verdict.head.split(b" ")[1].decode()):
        return WholeHead(verdict.head, b"")
    return verdict


@settings(max_examples=300)
@given((HEADS | st.binary(max_size=200)).filter(bool), CUTS)
def test_any_bytes_get_one_verdict_however_they_are_cut(data: bytes, points: list[int]) -> None:
    assert effect(outcome(*cut(data, points))) == effect(outcome(data))


def protocol_reads(head: bytes) -> bool:
    """Does websockets' server protocol read `head` as a request, or answer it (414, 431),
    rather than close the connection unanswered?"""
    protocol = ServerProtocol()
    protocol.receive_data(head)
    if any(isinstance(event, Request) for event in protocol.events_received()):
        return True
    answer = b"".join(protocol.data_to_send())
    return answer.startswith((b"HTTP/1.1 414 ", b"HTTP/1.1 431 "))


@settings(max_examples=300)
@given(HEADS | WHOLE_HEADS)
def test_a_whole_head_is_one_the_protocol_reads(data: bytes) -> None:
    """Every head handed over is one websockets' protocol reads (or answers): what it would
    close unanswered is refused here, with a reason."""
    verdict = HeadReader().feed(data)
    if isinstance(verdict, WholeHead):
        assert protocol_reads(verdict.head), verdict


@settings(max_examples=200)
@given(st.binary(max_size=64) | st.sampled_from([b"\n", b"\r\n\r\n", b"\n\r\n"]), CUTS)
def test_every_byte_after_a_handshake_head_is_handed_over(after: bytes, points: list[int]) -> None:
    """Frames written with the handshake (any bytes: a mask may hold line feeds, CRs, a
    CR LF CR LF), cut into reads anywhere, are no part of the head."""
    head = UPGRADE + b"\r\n"
    assert outcome(*cut(head + after, points)) == WholeHead(head, after)


@settings(max_examples=100)
@given(
    st.integers(-3, 3),
    st.binary(max_size=16),
    st.lists(st.integers(MAX_HEAD_BYTES - 8, MAX_HEAD_BYTES + 8), max_size=3),
)
def test_a_head_at_the_limit_gets_one_verdict_whatever_follows_and_however_cut(
    over: int, after: bytes, points: list[int]
) -> None:
    """A head of the limit's size, a few bytes under or over, then frames: whole (with every
    byte after it) up to the limit, too large past it, in one read or cut near its end."""
    start = UPGRADE + b"X-Pad: "
    head = start + b"a" * (MAX_HEAD_BYTES + over - len(start) - 4) + b"\r\n\r\n"
    assert len(head) == MAX_HEAD_BYTES + over
    expected = WholeHead(head, after) if over <= 0 else TooLarge()
    assert outcome(*cut(head + after, points)) == expected
