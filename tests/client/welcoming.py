"""A bare WebSocket server that welcomes every hello, for the tests of a link the server closes
or drops right after its welcome (tests/client/test_connection_drops.py,
test_link_supervisor.py).

The server listens on a loopback port from the OS, answers every hello with a welcome and then
does what the test says: close at once (as a restarting server does with 1012, or with 4003
for a newer session), or keep the link open. The welcome and the close frame go out in one
step of the event loop, so the client reads both together and its resume (a `Sync` for a
followed race) meets a closing link every time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from websockets.asyncio.server import ServerConnection, serve

from solrace.client.connection import Connection
from solrace.client.link_status import Incoming, LinkStatus, StatusChange
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode
from solrace.server.protocol.ids import PlayerId
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


async def internal_error(n: int, ws: ServerConnection) -> None:
    await ws.close(CloseCode.INTERNAL_ERROR, "boom")
