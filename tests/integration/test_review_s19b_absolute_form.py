"""A request target in absolute form (`GET http://host:port/path HTTP/1.1`, which RFC 9112
3.2.2 says a server must accept, and which HAProxy forwards as an HTTP/1 client sent it) is
served by its path: the WebSocket opens on the served path, the probes answer on theirs, and
another path is still 404. Raw HTTP on loopback against a real server."""

from __future__ import annotations

import asyncio

import pytest

from solrace.server.app import App
from solrace.server.http_head import HeadReader, NotFound, WholeHead, path_of
from tests.integration.conftest import ServerFactory
from tests.integration.test_http_edges import exchange, parse

UPGRADE_HEADERS = (
    "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("http://x:8765/", "/"),
        ("ws://x:8765/?a=b", "/"),
        ("http://x:8765", "/"),
        ("http://x:8765?a=b", "/"),
        ("HTTPS://user@x/solrace?a=/b", "/solrace"),
        ("/", "/"),
        ("/solrace?x", "/solrace"),
        ("//x/", "//x/"),
    ],
)
def test_the_path_of_a_target_in_either_form(target: str, path: str) -> None:
    assert path_of(target) == path


def test_the_head_reader_takes_an_absolute_target_by_its_path() -> None:
    head = f"GET http://x:1/solrace?a=1 HTTP/1.1\r\n{UPGRADE_HEADERS}".encode()
    assert isinstance(HeadReader("/solrace").feed(head), WholeHead)
    assert isinstance(HeadReader("/").feed(head), NotFound)


async def test_a_handshake_in_absolute_form_opens_the_websocket(app: App) -> None:
    for target in (f"http://127.0.0.1:{app.port}/", f"ws://127.0.0.1:{app.port}/?x=1"):
        raw = await exchange_open(app, f"GET {target} HTTP/1.1\r\n{UPGRADE_HEADERS}")
        assert raw.startswith(b"HTTP/1.1 101 "), raw


async def test_the_probes_answer_in_absolute_form_and_another_path_is_404(app: App) -> None:
    host = f"http://127.0.0.1:{app.port}"
    status, _, body = parse(
        await exchange(app.port, f"GET {host}/healthz HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    )
    assert (status, body) == (200, b"ok\n")
    status, _, body = parse(
        await exchange(app.port, f"GET {host}/play HTTP/1.1\r\n{UPGRADE_HEADERS}".encode())
    )
    assert (status, body) == (404, b"this server's WebSocket path is /\n")


async def exchange_open(app: App, request: str) -> bytes:
    """The server's first answer to `request`, a handshake, read until its head is whole
    (a WebSocket it opens stays open: the connection is closed here)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        writer.write(request.encode())
        await writer.drain()
        async with asyncio.timeout(5.0):
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    return await start_server()
