"""The supervisor of a connection's link (`LinkSupervisor`): a lost link is opened again,
waiting as the backoff and a refusing server's `Retry-After` say, and a close that cannot be
helped, or a failure of the supervisor itself, ends the link for good."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection

from solrace.client.connection import Connection
from solrace.client.link_status import LinkStatus, StatusChange
from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Welcome

from .conftest import server_settings
from .welcoming import (
    WELCOME,
    AfterWelcome,
    internal_error,
    is_status,
    received_until,
    restart,
    welcoming_server,
)


@asynccontextmanager
async def connected_then(
    then: AfterWelcome,
) -> AsyncIterator[tuple[Connection, asyncio.Future[ServerConnection]]]:
    """A connection whose first link stays up (the future: the server's side of it, to close);
    every later link runs `then`. The connection follows a race, so each resume sends."""
    first: asyncio.Future[ServerConnection] = asyncio.get_running_loop().create_future()

    async def plan(n: int, ws: ServerConnection) -> None:
        if n == 1:
            first.set_result(ws)
            await ws.wait_closed()
        else:
            await then(n, ws)

    async with welcoming_server(plan) as url:
        conn = Connection(url, name="ann", backoff_s=(0.01, 0.02))
        await conn.connect()
        conn.take_welcome()
        conn.followed.add(RaceId("r1"))
        try:
            yield conn, first
        finally:
            await conn.close()


async def test_a_reconnect_whose_link_closes_during_the_resume_keeps_trying() -> None:
    async def two_restarts_then_up(n: int, ws: ServerConnection) -> None:
        if n <= 3:
            await restart(n, ws)
        else:
            await ws.wait_closed()

    async with connected_then(two_restarts_then_up) as (conn, first):
        await (await asyncio.wait_for(first, 10)).close(CloseCode.SERVICE_RESTART, "restart")
        items = await received_until(conn, is_status(LinkStatus.CONNECTED))
        failed = "the server closed the connection: the server is restarting (1012: restart)"
        assert items == [
            StatusChange(LinkStatus.RECONNECTING, "the server is restarting (1012)"),
            StatusChange(LinkStatus.RECONNECTING, failed),
            StatusChange(LinkStatus.RECONNECTING, failed),
            WELCOME,
            StatusChange(LinkStatus.CONNECTED, "reconnected"),
        ]
        assert conn.status is LinkStatus.CONNECTED


async def test_a_reconnect_refused_for_good_during_the_resume_ends_closed() -> None:
    """4003 (this player connected again elsewhere) ends the session, as documented."""

    async def replaced(n: int, ws: ServerConnection) -> None:
        await ws.close(CloseCode.REPLACED, "connected again elsewhere")

    async with connected_then(replaced) as (conn, first):
        await (await asyncio.wait_for(first, 10)).close(CloseCode.SERVICE_RESTART, "restart")
        items = await received_until(conn, is_status(LinkStatus.CLOSED))
        assert items == [
            StatusChange(LinkStatus.RECONNECTING, "the server is restarting (1012)"),
            StatusChange(
                LinkStatus.CLOSED,
                "the server closed the connection: this player connected again elsewhere "
                "(4003: connected again elsewhere)",
            ),
        ]
        assert conn.status is LinkStatus.CLOSED


async def test_an_unexpected_error_while_reconnecting_ends_closed_and_is_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_open() -> Welcome:
        raise RuntimeError("a bug in the client")

    async with connected_then(restart) as (conn, first):
        monkeypatch.setattr(conn, "_open", broken_open)
        with caplog.at_level(logging.ERROR, logger="solrace.client.connection"):
            await (await asyncio.wait_for(first, 10)).close(CloseCode.SERVICE_RESTART, "restart")
            items = await received_until(conn, is_status(LinkStatus.CLOSED))
        assert items[0] == StatusChange(LinkStatus.RECONNECTING, "the server is restarting (1012)")
        closed = items[-1]
        assert isinstance(closed, StatusChange) and "a bug in the client" in closed.detail
        assert conn.status is LinkStatus.CLOSED
        assert any(
            "a bug in the client" in str(r.exc_info and r.exc_info[1]) for r in caplog.records
        )


async def test_a_server_that_drops_every_new_link_is_tried_ever_more_slowly() -> None:
    """Each link is up (welcomed) and lost at once (1011): the wait before the next one grows
    to its cap instead of starting again at the lowest after every link that opened."""
    loop = asyncio.get_running_loop()
    opened: list[float] = []
    enough = asyncio.Event()

    async def drop(n: int, ws: ServerConnection) -> None:
        opened.append(loop.time())
        if n == 7:
            enough.set()
        await internal_error(n, ws)

    async with welcoming_server(drop) as url:
        conn = Connection(url, name="ann", backoff_s=(0.02, 0.16), stable_after_s=60.0)
        await conn.connect()
        await asyncio.wait_for(enough.wait(), 10)
        await conn.close()
    gaps = [later - earlier for earlier, later in itertools.pairwise(opened)]
    # Steps 0.02, 0.04, 0.08, 0.16, 0.16, 0.16; a wait is at least half its step. Without the
    # carried-over backoff every gap is one lowest wait (0.01-0.02 s) and a connect.
    assert min(gaps[3:]) >= 0.08, gaps


async def test_a_reconnect_the_server_refuses_waits_as_long_as_its_retry_after(
    tmp_path: Path,
) -> None:
    """One handshake per 2.5 s from this address (Retry-After 3): the reconnect right after a
    drop is refused (429), and the next try waits for the Retry-After instead of the backoff's
    fraction of a second, so it is let in and nothing is refused twice."""
    app = App(server_settings(tmp_path, connect_burst=1, connect_per_s=0.4))
    await app.start()
    conn = Connection(f"ws://127.0.0.1:{app.port}", name="ann", backoff_s=(0.2, 0.4))
    try:
        await conn.connect()
        assert isinstance(conn.recv_nowait(), Welcome)
        (session,) = app.transport.sessions
        session.close(CloseCode.SERVICE_RESTART, "restart")  # the client comes back
        changes: list[StatusChange] = []
        async with asyncio.timeout(20):
            while not changes or changes[-1].status is not LinkStatus.CONNECTED:
                item = await conn.recv()
                if isinstance(item, StatusChange):
                    changes.append(item)
        refused = [c.detail for c in changes if "refused" in c.detail]
        assert refused == [
            f"ws://127.0.0.1:{app.port} refused the connection: HTTP 429: connecting too "
            "often from your address: wait a moment"
        ]
        value = app.metrics.registry.get_sample_value(
            "solrace_connections_refused_total", {"reason": "too_often"}
        )
        assert value == 1
    finally:
        await conn.close()
        await app.stop()
