"""A link the server closes right after its welcome, before the client's resume is through
(the welcoming server of tests/client/welcoming.py: it sends the welcome and the close in one
step, so the client's resume meets a closing link every time)."""

from __future__ import annotations

import gc
import warnings

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection

from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import Connection
from solrace.client.link_status import LinkStatus
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Welcome

from .welcoming import internal_error, received_until, restart, welcoming_server


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
