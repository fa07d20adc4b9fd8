"""A link the server closes right after its welcome, before the client's resume is through.

A bare WebSocket server on a loopback port from the OS answers every hello with a welcome and
then does what the test says: close at once (as a restarting server does with 1012, or with
4003 for a newer session), or keep the link open. The welcome and the close frame go out in one
step of the event loop, so the client reads both together and its resume (a `Sync` for a
followed race) meets a closing link every time.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection, serve

from solrace.client.connection import (
    Backoff,
    Connection,
    ConnectionFailedError,
    Incoming,
    LinkStatus,
    StatusChange,
)
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Welcome

WELCOME = Welcome(
    protocol=PROTOCOL_VERSION,
    player_id=PlayerId("p1"),
    name="ann",
    token="t",
    ratings={},
    active_races=[],
    server_time_ms=0,
)

AfterWelcome = Callable[[int, ServerConnection], Awaitable[None]]


@asynccontextmanager
async def welcoming_server(after_welcome: AfterWelcome) -> AsyncIterator[str]:
    """A server that welcomes each hello, then runs `after_welcome(n, ws)` for the n-th link
    (counted from 1); yields its URL."""
    links = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal links
        links += 1
        n = links
        await ws.recv()
        await ws.send(encode(WELCOME))
        await after_welcome(n, ws)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


async def restart(n: int, ws: ServerConnection) -> None:
    await ws.close(CloseCode.SERVICE_RESTART, "restart")


async def received_until(conn: Connection, last: Callable[[Incoming], bool]) -> list[Incoming]:
    """What `conn` delivers up to and including the first item `last` accepts."""
    items: list[Incoming] = []
    async with asyncio.timeout(10):
        while not items or not last(items[-1]):
            items.append(await conn.recv())
    return items


def is_status(status: LinkStatus) -> Callable[[Incoming], bool]:
    return lambda item: isinstance(item, StatusChange) and item.status is status


async def test_connect_fails_with_the_close_code_when_the_link_closes_after_the_welcome() -> None:
    async with welcoming_server(restart) as url:
        conn = Connection(url, name="ann")
        conn.followed.add(RaceId("r1"))  # the resume sends a Sync: on a closing link
        conn.versions[RaceId("r1")] = ("e", 3)
        with pytest.raises(ConnectionFailedError) as failed:
            await conn.connect()
        assert failed.value.close_code == CloseCode.SERVICE_RESTART
        assert not failed.value.fatal
        assert conn.status is LinkStatus.CLOSED
        assert conn.recv_nowait() is None  # no welcome for a link that never came up
        await conn.close()


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


async def internal_error(n: int, ws: ServerConnection) -> None:
    await ws.close(CloseCode.INTERNAL_ERROR, "boom")


async def test_a_link_closed_before_its_tasks_start_leaves_no_coroutine_unawaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that closes right after its welcome: when the close is through before the
    client has read the welcome, the new link's tasks are cancelled before their first step.
    No coroutine of theirs may be left unawaited (`RuntimeWarning`: an error in the tests)."""
    hello = Connection._hello

    async def hello_once_closed(self: Connection, ws: ClientConnection) -> Welcome:
        welcome = await hello(self, ws)
        await ws.wait_closed()  # the order a busy client sees: all of the close before the read
        return welcome

    monkeypatch.setattr(Connection, "_hello", hello_once_closed)
    links = 0

    async def count_and_close(n: int, ws: ServerConnection) -> None:
        nonlocal links
        links = n
        await internal_error(n, ws)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with welcoming_server(count_and_close) as url:
            conn = Connection(url, name="ann", backoff_s=(0.001, 0.002))
            await conn.connect()
            await received_until(conn, lambda _: links >= 4)
            await conn.close()
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_the_backoff_restarts_only_after_a_link_that_lived() -> None:
    backoff = Backoff(1.0, 8.0, stable_after_s=5.0)

    def waits(count: int) -> list[float]:
        return [backoff.next_wait() for _ in range(count)]

    def within(got: list[float], steps: list[float]) -> bool:
        """Each wait is 50-100 % of its step (the jitter)."""
        return all(step / 2 <= wait <= step for wait, step in zip(got, steps, strict=True))

    assert within(waits(3), [1.0, 2.0, 4.0])
    backoff.link_lost(lived_s=0.1)  # welcomed and dropped at once: the waits keep growing
    assert within(waits(3), [8.0, 8.0, 8.0])
    backoff.link_lost(lived_s=5.0)  # a link that lived: from the start again
    assert within(waits(2), [1.0, 2.0])
    assert backoff.next_wait(not_before_s=30.0) == 30.0  # a server's Retry-After


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
