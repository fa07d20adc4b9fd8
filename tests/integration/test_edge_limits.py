"""Edge limits over real sockets: the idle watchdog, the browser Origin check and the caps on
connections (per address, per node, handshake pace)."""

from __future__ import annotations

import contextlib
import logging

import pytest
from websockets.exceptions import InvalidStatus

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import Ping, Pong
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import http_get
from tests.integration.wsclient import Client
from tests.waiting import eventually


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


#: The idle timeout of the watchdog test, and how often its talking client sends a message
#: there: the talking one's messages are at most `TALK_EVERY_S` apart (plus a round trip), so
#: only a stall of the test's process (a collection, a loaded machine) longer than the rest
#: of the timeout would let the watchdog take it for idle.
IDLE_S = 2.0
TALK_EVERY_S = 0.2


async def test_a_silent_connection_is_closed_idle_and_a_talking_one_is_not(
    start_server: ServerFactory,
) -> None:
    app = await start_server(idle_timeout_s=IDLE_S, ping_interval_s=None)
    silent = await Client.open(url_of(app))
    talking = await Client.open(url_of(app))
    try:
        await talking.hello("chatty")
        # The silent one is closed by the watchdog while the other keeps talking (a ping,
        # then up to TALK_EVERY_S waiting for the silent one's close, again and again).
        for _ in range(int(10 * IDLE_S / TALK_EVERY_S)):
            await talking.send(Ping(nonce=1))
            await talking.expect(Pong)
            talking.drop(Pong)
            with contextlib.suppress(TimeoutError):
                await silent.closed(within=TALK_EVERY_S)
                break
        assert silent.connection.close_code == CloseCode.IDLE_TIMEOUT
        assert talking.connection.close_code is None
    finally:
        await silent.close()
        await talking.close()


async def test_browser_origins_are_checked_when_configured(start_server: ServerFactory) -> None:
    app = await start_server(origins=["https://play.example"])
    good = await Client.open(url_of(app), origin="https://play.example")
    scripted = await Client.open(url_of(app))  # terminal clients and bots send no Origin
    try:
        assert (await good.hello("browser")).player_id
        assert (await scripted.hello("script")).player_id
        with pytest.raises(InvalidStatus) as refused:
            await Client.open(url_of(app), origin="https://evil.example")
        assert refused.value.response.status_code == 403
    finally:
        await good.close()
        await scripted.close()


async def refused_status(app: App) -> tuple[int, str, str]:
    """A handshake that must be refused: its status, Retry-After and body."""
    with pytest.raises(InvalidStatus) as refused:
        await Client.open(url_of(app))
    response = refused.value.response
    return response.status_code, response.headers["Retry-After"], response.body.decode()


def refusals(app: App, reason: str) -> float:
    value = app.metrics.registry.get_sample_value(
        "solrace_connections_refused_total", {"reason": reason}
    )
    return 0.0 if value is None else value


async def test_an_address_past_its_connection_cap_is_answered_429_until_one_closes(
    start_server: ServerFactory,
) -> None:
    app = await start_server(max_connections_per_address=2)
    first = await Client.open(url_of(app))
    second = await Client.open(url_of(app))
    try:
        assert await refused_status(app) == (
            429,
            "5",
            "too many connections from your address (at most 2 open)\n",
        )
        assert refusals(app, "address_full") == 1
        # The probes still answer; the connections that are in still play.
        assert (await http_get(app.port, "/healthz")).endswith(b"ok\n")
        assert (await first.hello("first")).player_id
        await first.close()
        await eventually(lambda: app.transport.admission.total == 1, what="the close counted")
        third = await Client.open(url_of(app))
        assert (await third.hello("third")).player_id
        await third.close()
    finally:
        await first.close()
        await second.close()


async def test_handshakes_past_the_pace_of_an_address_are_answered_429(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server(connect_burst=2, connect_per_s=0.01)
    for _ in range(2):
        client = await Client.open(url_of(app))
        await client.close()
    with caplog.at_level(logging.DEBUG, logger="solrace.server.websocket"):
        assert await refused_status(app) == (
            429,
            "100",
            "connecting too often from your address: wait a moment\n",
        )
        await eventually(lambda: not app.transport.connections, what="the refused one closed")
    assert refusals(app, "too_often") == 1
    # Logged at DEBUG (a flood of handshakes must not flood the log), counted in the metrics.
    told = [r for r in caplog.records if r.name == "solrace.server.websocket"]
    assert "HTTP response sent (429 Too Many Requests)" in [r.getMessage() for r in told]
    assert [r.getMessage() for r in told if r.levelno >= logging.INFO] == []


async def test_a_full_node_answers_503_and_no_per_address_limit_at_zero(
    start_server: ServerFactory,
) -> None:
    app = await start_server(
        max_connections=3, max_connections_per_address=0, connect_burst=1, connect_per_s=0.01
    )
    clients = [await Client.open(url_of(app)) for _ in range(3)]  # past the burst: no pace
    try:
        assert await refused_status(app) == (503, "5", "the server is full: try again later\n")
        assert refusals(app, "node_full") == 1
    finally:
        for client in clients:
            await client.close()
