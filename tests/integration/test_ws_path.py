"""The WebSocket opens on one path (`/`, or `--ws-path`), its query aside: a request on any
other path is answered 404 naming that one, and the server serves on. Real WebSocket clients
and raw HTTP on loopback against a real server."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import Connection
from solrace.server.app import App
from solrace.server.protocol.messages import Ping, Pong
from solrace.server.serve_cli import main
from solrace.server.settings import Settings
from tests.client.process import Child
from tests.integration.conftest import ServerFactory
from tests.integration.test_http_edges import exchange, parse
from tests.integration.wsclient import Client
from tests.waiting import eventually

WAIT_S = 5.0
#: The body of the 404 on another path than the default WebSocket path.
NOT_HERE = "this server's WebSocket path is /\n"
UPGRADE_HEADERS = (
    "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def base(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def welcomed(url: str, name: str) -> None:
    """A real client opens `url` and is welcomed as `name`."""
    client = await Client.open(url)
    try:
        welcome = await client.hello(name)
        assert welcome.name == name
    finally:
        await client.close()


async def refused_404(url: str) -> tuple[str, str]:
    """The status line's code and the body of a real client's refused handshake on `url`,
    checked to be a 404 from solrace."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, compression=None, open_timeout=WAIT_S):
            pass
    response = refused.value.response
    assert response.status_code == 404
    assert response.headers["Server"] == "solrace"
    return response.headers["Content-Type"], response.body.decode()


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    return await start_server()


@pytest.mark.parametrize("path", ["", "/", "/?x=1", "/?next=/anything"])
async def test_the_root_path_opens_the_websocket_whatever_its_query(app: App, path: str) -> None:
    await welcomed(base(app) + path, "rooted")


@pytest.mark.parametrize(
    "path", ["/anything", "/anything?x=1", "//", "/index.html", "/healthz/", "/Healthz"]
)
async def test_another_path_is_answered_404_naming_the_websocket_path(app: App, path: str) -> None:
    """A mistyped path opened the WebSocket (and a hello there took a name the client kept
    for that URL); now the handshake is refused, and nothing is opened."""
    content_type, body = await refused_404(base(app) + path)
    assert (content_type, body) == (
        "text/plain; charset=utf-8",
        "this server's WebSocket path is /\n",
    )
    assert not app.transport.sessions
    assert "solrace_connections 0.0" in app.metrics.render().decode()


async def test_the_server_serves_on_after_a_404(app: App) -> None:
    """A connection open before the refused one goes on; a new one on `/` is welcomed."""
    before = await Client.open(base(app))
    try:
        await before.hello("before")
        await refused_404(base(app) + "/anything")
        await welcomed(base(app), "after")
        await welcomed(base(app), "again")  # not just once: the refusal left nothing behind
        assert before.connection.close_code is None
        await before.send(Ping(nonce=7))
        assert (await before.expect(Pong)).nonce == 7  # answered: the connection is served
    finally:
        await before.close()
    await eventually(lambda: not app.transport.connections, within=WAIT_S)


@pytest.mark.parametrize(
    ("request_line", "body"),
    [
        ("GET /anything HTTP/1.1", NOT_HERE.encode()),  # no upgrade
        ("HEAD /anything HTTP/1.1", b""),
        ("POST /anything HTTP/1.1", NOT_HERE.encode()),
    ],
)
async def test_any_method_on_another_path_gets_404(
    app: App, request_line: str, body: bytes
) -> None:
    """404, not the 405 (`Allow: GET`) a POST got, which said GET would do there. A HEAD gets
    the headers a GET would (its Content-Length) without the body."""
    status, headers, got = parse(
        await exchange(app.port, f"{request_line}\r\n{UPGRADE_HEADERS}".encode())
    )
    assert (status, got, headers["server"]) == (404, body, "solrace")
    assert headers["content-length"] == str(len(NOT_HERE.encode()))
    assert "allow" not in headers


@pytest.mark.parametrize("ws_path", ["/", "/solrace"])
async def test_healthz_and_metrics_answer_on_their_paths(
    start_server: ServerFactory, ws_path: str
) -> None:
    app = await start_server(ws_path=ws_path)
    for path in ("/healthz", "/healthz?probe=1"):
        status, _, body = parse(await exchange(app.port, f"GET {path} HTTP/1.1\r\n\r\n".encode()))
        assert (status, body) == (200, b"ok\n")
    status, headers, body = parse(await exchange(app.port, b"GET /metrics HTTP/1.1\r\n\r\n"))
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert b"solrace_connections " in body
    status, headers, body = parse(await exchange(app.port, b"HEAD /healthz HTTP/1.1\r\n\r\n"))
    assert (status, headers["content-length"], body) == (200, "3", b"")
    status, headers, _ = parse(await exchange(app.port, b"POST /metrics HTTP/1.1\r\n\r\n"))
    assert (status, headers["allow"]) == (405, "GET, HEAD")


async def test_ws_path_moves_the_websocket(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Behind a proxy that forwards its prefix unchanged: the WebSocket is there, with any
    query, and the root (or the prefix with a `/` more) is refused, naming it. The start's
    log line gives the URL to connect to."""
    with caplog.at_level(logging.INFO, "solrace.server"):
        app = await start_server(ws_path="/solrace")
    [line] = [r.getMessage() for r in caplog.records if "listening on" in r.getMessage()]
    assert line.split()[2] == f"{base(app)}/solrace"
    await welcomed(f"{base(app)}/solrace", "prefixed")
    await welcomed(f"{base(app)}/solrace?x=1", "queried")
    for path in ("", "/", "/solrace/", "/solrace/x", "/solracex"):
        assert (await refused_404(base(app) + path))[
            1
        ] == "this server's WebSocket path is /solrace\n"


async def test_the_default_start_line_names_no_path(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "solrace.server"):
        app = await start_server()
    [line] = [r.getMessage() for r in caplog.records if "listening on" in r.getMessage()]
    assert line.split()[2] == base(app)


async def test_a_404_is_logged_at_debug(app: App, caplog: pytest.LogCaptureFixture) -> None:
    """As the probes and the other refusals are: a scanner trying paths does not flood the
    log at INFO."""
    with caplog.at_level(logging.DEBUG, "solrace.server.websocket"):
        await refused_404(base(app) + "/wp-login.php")
        await eventually(lambda: not app.transport.connections, within=WAIT_S)
    answered = [r for r in caplog.records if "404" in r.getMessage()]
    assert answered and all(r.levelno == logging.DEBUG for r in answered)


@pytest.mark.parametrize(
    ("ws_path", "why"),
    [
        ("solrace", "a path begins with / and has no space, query or fragment"),
        ("", "a path begins with / and has no space, query or fragment"),
        ("/a b", "a path begins with / and has no space, query or fragment"),
        ("/solrace?x=1", "a path begins with / and has no space, query or fragment"),
        ("/solrace#top", "a path begins with / and has no space, query or fragment"),
        ("/healthz", "/healthz answers plain HTTP requests: give the WebSocket another"),
        ("/metrics", "/metrics answers plain HTTP requests: give the WebSocket another"),
    ],
)
def test_a_ws_path_that_cannot_be_one_is_refused(tmp_path: Path, ws_path: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Settings(ws_path=ws_path, data_dir=tmp_path)


def test_serve_refuses_a_ws_path_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--ws-path", "solrace", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "solrace serve: error: invalid --ws-path 'solrace': a path begins with / and has no "
        "space, query or fragment (/ or /solrace, say)\n"
    )


def test_the_setting_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLRACE_WS_PATH", "/play")
    assert Settings().ws_path == "/play"


async def test_the_client_says_the_server_refused_the_path(app: App) -> None:
    """The terminal client said `is not a solrace server` of any 404; a solrace server's
    404 is said as a refusal of the path, with the path the server serves."""
    url = base(app) + "/anything"
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="typo", open_timeout_s=WAIT_S).connect()
    assert str(failed.value) == (
        f"{url} refused the path: HTTP 404: this server's WebSocket path is /"
    )


async def test_solrace_play_on_a_mistyped_path_says_so_and_exits_1(
    app: App, tmp_path: Path
) -> None:
    url = base(app) + "/anything"
    player = await Child.start(tmp_path, "play", "--plain", "--server", url, "--name", "typo")
    try:
        await player.expect(f"{url} refused the path: HTTP 404: this server's WebSocket path is /")
        assert await player.finish() == 1
        assert "Traceback" not in player.output
    finally:
        await player.kill()
