"""Edge limits over real sockets: the idle watchdog and the browser Origin check."""

from __future__ import annotations

import contextlib

import pytest
from websockets.exceptions import InvalidStatus

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import Ping, Pong
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import Client


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def test_a_silent_connection_is_closed_idle_and_a_talking_one_is_not(
    start_server: ServerFactory,
) -> None:
    app = await start_server(idle_timeout_s=0.6, ping_interval_s=None)
    silent = await Client.open(url_of(app))
    talking = await Client.open(url_of(app))
    try:
        await talking.hello("chatty")
        # The silent one is closed by the watchdog while the other keeps talking (a ping,
        # then up to 0.3 s waiting for the silent one's close, again and again).
        for _ in range(30):
            await talking.send(Ping(nonce=1))
            await talking.expect(Pong)
            talking.drop(Pong)
            with contextlib.suppress(TimeoutError):
                await silent.closed(within=0.3)
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
