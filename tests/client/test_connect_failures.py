"""A connect that fails is said in words the user can act on: nothing listening, something
there that is not a solrace server, a refusal (in the server's or a proxy's words, with its
`Retry-After`), the wrong scheme for the port."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response

from solrace.client.connect_failures import ConnectionFailedError, _refusal_text
from solrace.client.connection import Connection
from solrace.server.app import App

from .conftest import server_settings


async def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    app = App(server_settings(tmp_path))
    await app.start()
    port = app.port
    await app.stop()
    try:
        await Connection(f"ws://127.0.0.1:{port}", name="x", open_timeout_s=2).connect()
    except ConnectionFailedError as exc:
        assert "cannot reach" in str(exc) or "closed" in str(exc)
    else:
        raise AssertionError("connected to a stopped server")


def test_a_proxy_s_html_refusal_is_said_in_its_words() -> None:
    """HAProxy's 503 page with no node up was shown raw in the reconnect line."""
    page = (
        b"<html><body><h1>503 Service Unavailable</h1>\n"
        b"No server is available to handle this request.\n</body></html>\n"
    )
    response = Response(503, "Service Unavailable", Headers(), page)
    assert _refusal_text(response) == (
        "HTTP 503: 503 Service Unavailable No server is available to handle this request."
    )
    plain = Response(429, "Too Many Requests", Headers(), b"connecting too often\n")
    assert _refusal_text(plain) == "HTTP 429: connecting too often"


async def answering(reply: bytes) -> asyncio.Server:
    """A TCP server on a loopback port from the OS that answers any request with `reply`."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


def url_of_server(server: asyncio.Server) -> str:
    return f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "is not a solrace server: its answer is no WebSocket handshake (HTTP 200: hello)",
        ),
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
            "is not a solrace server: its answer is no WebSocket handshake (HTTP 404: not found)",
        ),
        (
            b"HTTP/1.0 200 OK\r\n\r\n<html>index</html>",
            "is not a solrace server: its answer is no WebSocket handshake (unsupported "
            "protocol; expected HTTP/1.1: HTTP/1.0 200 OK)",
        ),
    ],
    ids=["http-200", "http-404", "http-1.0"],
)
async def test_a_server_that_is_no_websocket_server_is_said_so(reply: bytes, said: str) -> None:
    """A plain web server at the URL was `refused the connection: HTTP 200: hello`, or `cannot
    reach URL: did not receive a valid HTTP response`."""
    server = await answering(reply)
    url = url_of_server(server)
    try:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
        assert str(failed.value) == f"{url} {said}"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_solrace_refusal_is_still_a_refusal() -> None:
    """Statuses a solrace server (or a proxy before it) refuses with keep their wording."""
    server = await answering(
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 4\r\n\r\nbusy"
    )
    url = url_of_server(server)
    try:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
        assert str(failed.value) == f"{url} refused the connection: HTTP 503: busy"
        assert failed.value.retry_after_s == 2.0
    finally:
        server.close()
        await server.wait_closed()


async def test_a_port_nobody_listens_on_is_said_plainly() -> None:
    """It was `cannot reach URL: [Errno 111] Connect call failed ('127.0.0.1', PORT)`."""
    server = await answering(b"")
    url = url_of_server(server)
    server.close()
    await server.wait_closed()  # the port the OS gave is free again: nothing listens there
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    assert (
        str(failed.value)
        == f"cannot reach {url}: connection refused (no server is listening there)"
    )


async def test_a_host_name_that_does_not_resolve_is_said_plainly() -> None:
    """It was `cannot reach URL: [Errno -2] Name or service not known`. (`.invalid` never
    resolves: RFC 6761.)"""
    url = "ws://no-such-host.invalid:8765"
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert text.startswith(f"cannot reach {url}: cannot look up the host no-such-host.invalid ("), (
        text
    )
    assert text.endswith("): check the server URL"), text
    assert "Errno" not in text, text


async def test_wss_to_a_server_without_tls_says_to_try_ws(server_url: str) -> None:
    url = server_url.replace("ws://", "wss://")
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert text.startswith(f"cannot reach {url}: "), text
    assert text.endswith("(a server without TLS: try ws://)"), text
