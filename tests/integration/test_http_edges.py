"""Plain HTTP on the WebSocket port, at its edges: HEAD, other methods, and bytes after the
request's head (a body, a second request). Each is answered once, then closed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import pytest
from websockets.frames import Opcode

from solrace.server.app import App
from solrace.server.protocol.codec import encode
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.websocket_session import WebSocketSession
from tests.integration.conftest import ServerFactory
from tests.integration.frames import LINE_END_MASKS, client_frame
from tests.integration.wsclient import Client
from tests.waiting import eventually

WAIT_S = 5.0


async def exchange(port: int, request: bytes) -> bytes:
    """Everything the server answers to `request`, until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(WAIT_S):
            try:
                return await reader.read()
            except ConnectionResetError:
                return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


#: The start of a TLS ClientHello (a client speaking wss:// to a plain port): no line feed.
TLS_HELLO = bytes.fromhex("160301020001000001fc0303") + bytes(range(0x20, 0x40))


def parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    return await start_server()


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
async def test_head_gets_the_headers_of_a_get_and_no_body(app: App, path: str) -> None:
    get_status, get_headers, get_body = parse(
        await exchange(app.port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    )
    status, headers, body = parse(
        await exchange(app.port, f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    )
    assert (status, headers["content-type"]) == (get_status, get_headers["content-type"])
    assert body == b""
    if path != "/metrics":  # the metrics change between the two requests
        assert headers["content-length"] == str(len(get_body))


@pytest.mark.parametrize(
    ("request_bytes", "allowed"),
    [
        (b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "GET, HEAD"),
        (
            b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello=world",
            "GET, HEAD",
        ),
        (b"PUT /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET, HEAD"),
        (b"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", "GET"),
    ],
)
async def test_other_methods_get_405_with_allow(
    app: App, request_bytes: bytes, allowed: str
) -> None:
    status, headers, body = parse(await exchange(app.port, request_bytes))
    assert (status, headers["allow"]) == (405, allowed)
    assert body.decode() == f"{request_bytes.split()[0].decode()} is not allowed: {allowed}\n"


async def test_a_head_is_not_a_websocket_handshake(app: App) -> None:
    """The WebSocket path takes a GET only: 405 (`Allow: GET`), headers alone."""
    request = (
        b"HEAD / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    status, headers, body = parse(await exchange(app.port, request))
    assert (status, headers["allow"], body) == (405, "GET", b"")
    assert not app.transport.sessions


@pytest.mark.parametrize(
    "after",
    [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", b"unexpected body bytes", b"\xff" * 64],
)
async def test_bytes_after_the_request_head_do_not_stop_its_answer(app: App, after: bytes) -> None:
    """The first request is answered (once: the connection closes after it), whatever
    follows its head in the same write."""
    raw = await exchange(app.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + after)
    status, _, body = parse(raw)
    assert (status, body) == (200, b"ok\n")
    await eventually(lambda: not app.transport.connections, within=WAIT_S)
    client = await Client.open(f"ws://127.0.0.1:{app.port}")  # the server serves on
    try:
        await client.hello("after")
    finally:
        await client.close()


def held(connection: WebSocketSession) -> bytes:
    """The bytes of its request head the server holds (none once the head is read)."""
    return b"" if connection.head is None else connection.head.held


async def exchange_in_two(
    app: App, first: bytes, then: bytes, ready: Callable[[Any], bool] = bool
) -> bytes:
    """`first`, then `then` in a later read (once the server holds the connection and
    `ready(connection)`): everything the server answers, until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        writer.write(first)
        await writer.drain()
        await eventually(lambda: bool(app.transport.connections), within=WAIT_S)
        [connection] = app.transport.connections
        await eventually(lambda: ready(connection), within=WAIT_S)
        writer.write(then)
        await writer.drain()
        async with asyncio.timeout(WAIT_S):
            return await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_a_request_head_in_pieces_is_answered(app: App) -> None:
    """The head's end may be split across reads (here between its two CRLFs)."""
    raw = await exchange_in_two(
        app,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
        b"\r\nPOST / HTTP/1.1\r\n\r\n",
        ready=lambda connection: len(held(connection)) > 0,
    )
    status, _, body = parse(raw)
    assert (status, body) == (200, b"ok\n")


@pytest.mark.parametrize(
    "body_head",
    [
        b"Content-Length: 5\r\n\r\nhello",
        b"content-length: 5\r\n\r\nhel",  # less than it says: still answered
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ],
)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_a_probe_with_a_body_is_answered_as_one_without(
    app: App, method: str, body_head: bytes
) -> None:
    """A GET or HEAD with a body was closed unanswered (the protocol refuses a request body);
    the body is discarded, as protocol.md says of whatever follows the head."""
    raw = await exchange(
        app.port, f"{method} /healthz HTTP/1.1\r\nHost: x\r\n".encode() + body_head
    )
    status, _, body = parse(raw)
    assert (status, body) == (200, b"ok\n" if method == "GET" else b"")


UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)


@pytest.mark.parametrize("mask", [b"\x01\x02\x03\x04", *LINE_END_MASKS])
@pytest.mark.parametrize("empty_body", [b"Content-Length: 0\r\n", b""])
async def test_a_handshake_keeps_the_frames_sent_with_it(
    app: App, empty_body: bytes, mask: bytes
) -> None:
    """`Content-Length: 0` is no body: the hello frame written with the head is read, as it
    is without the header (it used to be discarded with the 'body'). Its mask is chosen, not
    drawn at random, so that every run writes the same bytes: among them masks with line
    feeds and CRs, which the head reader must not take for the end of a line or the head."""
    hello = client_frame(
        Opcode.BINARY, encode(Hello(protocol=PROTOCOL_VERSION, name="early")), mask
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        writer.write(UPGRADE + empty_body + b"\r\n" + hello)
        await writer.drain()
        received = b""
        async with asyncio.timeout(WAIT_S):
            while b"welcome" not in received:
                chunk = await reader.read(65536)
                assert chunk, f"closed before the welcome: {received!r}"
                received += chunk
        assert received.startswith(b"HTTP/1.1 101 ")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_a_handshake_with_a_body_is_refused_with_400(app: App) -> None:
    raw = await exchange(app.port, UPGRADE + b"Content-Length: 5\r\n\r\nhello")
    status, _, body = parse(raw)
    assert (status, body) == (400, b"a WebSocket handshake has no body\n")
    assert not app.transport.sessions


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", b"a header line is Name: value\n"),
        (b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", b"a header line is Name: value\n"),
        (b"GET /healthz HTTP/1.1\nHost: x\n\n", b"lines of a request end with CR LF\n"),
        (b"GET / HTTP/2.0\r\n\r\n", b"a request line is METHOD TARGET HTTP/1.1\n"),
        (
            b"GET /healthz HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n",
            b"lines of a request end with CR LF\n",
        ),
        (b"GET /healthz HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", b"a header line is Name: value\n"),
    ],
)
async def test_a_malformed_head_is_answered_400_with_its_reason(
    app: App, request_: bytes, reason: bytes
) -> None:
    """The protocol closed these without a word (the fuzz audit)."""
    status, _, body = parse(await exchange(app.port, request_))
    assert (status, body) == (400, reason)


async def test_a_head_over_the_limit_is_answered_431(app: App) -> None:
    """100 headers of 1,000 bytes: each under websockets' own limits, the head was answered
    as any other though the docs said 431."""
    headers = b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(100))
    raw = await exchange(app.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    status, _, body = parse(raw)
    assert (status, body) == (431, b"a request head is at most 64 KiB\n")


async def test_a_probe_s_body_in_a_later_read_is_discarded(app: App) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
    status, _, body = parse(await exchange_in_two(app, head, b"hello"))
    assert (status, body) == (200, b"ok\n")


@pytest.mark.parametrize(
    "line", [b"HELLO\r\n", b"GET / HTTP/1.1\nHost: x\n\n", b"GET /\r\n", TLS_HELLO]
)
async def test_what_is_not_an_http_request_is_closed_at_once(
    start_server: ServerFactory, line: bytes
) -> None:
    """Not kept for the handshake's whole time (here far longer than the wait): the protocol
    refuses it as soon as its first line is in."""
    app = await start_server(open_timeout_s=600.0)
    await exchange(app.port, line)  # answered or dropped, but within WAIT_S, not 600 s
    await eventually(lambda: not app.transport.connections, within=WAIT_S)


@pytest.mark.parametrize("start", [TLS_HELLO, b"GET\x00", b" GET / HTTP/1.1", b"A" * 40])
async def test_a_start_no_request_line_has_is_refused_with_400_and_closed(
    start_server: ServerFactory, start: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes that cannot begin an HTTP request (a method byte no token has, or a method
    longer than any) get 400 at once, with no line feed ever sent, and the server closes
    the socket itself while the peer keeps its end open: not kept for the handshake's or
    the close's time (here far longer than the wait). Logged at DEBUG, as probes are."""
    caplog.set_level(logging.INFO, logger="solrace.server.websocket")
    app = await start_server(open_timeout_s=600.0, close_timeout_s=600.0)
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        writer.write(start)
        await writer.drain()
        async with asyncio.timeout(WAIT_S):
            raw = await reader.read()
        await eventually(lambda: not app.transport.connections, within=WAIT_S)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    status, _, body = parse(raw)
    assert (status, body) == (400, b"not an HTTP request\n")
    assert not [r for r in caplog.records if r.name == "solrace.server.websocket"]


@pytest.mark.parametrize("method", [b"G\x00T", b"X\x1b[31mY", b"A" * 40])
async def test_a_method_no_token_has_gets_400_however_its_bytes_arrive(
    app: App, method: bytes
) -> None:
    """The same answer whether the whole request came in one read or its first byte alone
    (a whole line used to get 405, with the method's bytes, control bytes too, in its body)."""
    head = method + b" /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    whole = await exchange(app.port, head)
    cut = await exchange_in_two(
        app, head[:1], head[1:], ready=lambda connection: held(connection) == head[:1]
    )
    for raw in (whole, cut):
        status, _, body = parse(raw)
        assert (status, body) == (400, b"not an HTTP request\n")


@pytest.mark.parametrize("first", [b"\r\n", b"\r\n\r\n", b"\r"])
async def test_empty_lines_before_the_request_line_are_skipped(app: App, first: bytes) -> None:
    """RFC 9112 (2.2): a server should ignore empty lines before the request line, here in
    a read of their own (a lone CR waits for its LF)."""
    rest = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    ready: Callable[[Any], bool] = bool
    if first == b"\r":
        rest = b"\n" + rest
        ready = lambda connection: held(connection) == b"\r"  # noqa: E731 - read, and held
    status, _, body = parse(await exchange_in_two(app, first, rest, ready))
    assert (status, body) == (200, b"ok\n")
    status, _, body = parse(await exchange(app.port, first + rest))
    assert (status, body) == (200, b"ok\n")


@pytest.mark.parametrize("cut", [1, 3, 4, 12])
async def test_a_request_line_in_pieces_is_answered(app: App, cut: int) -> None:
    """A method, or a line, cut short by a read is not taken for what no request begins."""
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    raw = await exchange_in_two(
        app, head[:cut], head[cut:], ready=lambda connection: len(held(connection)) == cut
    )
    status, _, body = parse(raw)
    assert (status, body) == (200, b"ok\n")
