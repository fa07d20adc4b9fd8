"""A load balancer's `GET /healthz` every 2 s (and a `/metrics` scrape) is logged at DEBUG,
not INFO; WebSocket connections still log at INFO (their own open and close lines)."""

from __future__ import annotations

import logging
import re

import pytest

from solrace.server.app import App
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import http_get
from tests.integration.wsclient import WAIT_S
from tests.waiting import eventually

WS_LOGGER = "solrace.server.websocket"


def _levels(caplog: pytest.LogCaptureFixture, message: str) -> list[str]:
    return [r.levelname for r in caplog.records if r.name == WS_LOGGER and r.message == message]


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
async def test_a_probe_is_logged_at_debug_only(
    server: App, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level(logging.DEBUG, logger=WS_LOGGER)
    for _ in range(3):
        assert (await http_get(server.port, path)).startswith(b"HTTP/1.1 200 OK")

    def all_closed() -> bool:
        return not server.transport.connections

    await eventually(all_closed)  # the server has seen each probe's end (and logged it)
    assert _levels(caplog, "HTTP response sent (200 OK)") == ["DEBUG"] * 3
    assert _levels(caplog, "connection closed") == ["DEBUG"] * 3
    info = [r for r in caplog.records if r.name == WS_LOGGER and r.levelno >= logging.INFO]
    assert info == []


async def test_a_websocket_connection_still_logs_at_info(
    server: App, client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=WS_LOGGER)
    await http_get(server.port, "/healthz")  # a probe first: the demotion stays with its socket
    alice = await client("alice")
    await alice.close()

    def all_closed() -> bool:
        return not server.transport.connections

    await eventually(all_closed, within=WAIT_S)
    # Its own lines name it (`test_connection_log.py`); the library's say no more, at DEBUG.
    info = [
        r.getMessage() for r in caplog.records if r.name == WS_LOGGER and r.levelno >= logging.INFO
    ]
    assert [re.sub(r"connection \d+ ", "connection N ", line) for line in info] == [
        "connection N from 127.0.0.1 open",
        "connection N from 127.0.0.1 closed by the client: 1000 ''",
    ]
    library = [r.levelname for r in caplog.records if r.getMessage().endswith(": connection open")]
    assert library == ["DEBUG"]
