"""A node's pub/sub link to Redis that dies without a word: a TCP connection that a NAT,
a firewall or a failover forgot, so that nothing comes through it any more and nothing says
it closed (no FIN, no RST). The broker asks Redis for a pong on a link silent for a while; one
that does not answer in time is taken for lost: the broker connects again and gives every
subscription a gap, so the node reloads what it may have missed, and hears what comes next.
A TCP proxy in front of a real Redis stops passing the bytes of the connections it holds
(both ways, keeping them open), as such a link does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from solrace.server.broker import RedisBroker, open_broker
from tests.integration.wsclient import WAIT_S
from tests.redis_server import RedisServer

pytestmark = pytest.mark.redis

#: The broker's wait on a silent link before it asks Redis for a pong, here.
LINK_CHECK_S = 0.2
CHUNK = 65536


class SilencingProxy:
    """Passes bytes between its clients and Redis until `silence()`: from then on the
    connections it holds pass nothing either way (and stay open); new ones pass as before."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._server: asyncio.Server | None = None
        self._generation = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"redis://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/0"

    def silence(self) -> None:
        self._generation += 1

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        generation = self._generation
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        self._writers.update((writer, up_writer))
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer, generation)),
            asyncio.create_task(self._pump(up_reader, writer, generation)),
        ]
        self._tasks.update(pumps)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
            self._tasks.discard(pump)
        for end in (writer, up_writer):
            end.close()
            self._writers.discard(end)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, generation: int
    ) -> None:
        while data := await source.read(CHUNK):
            if generation == self._generation:  # a silenced connection drops what it reads
                sink.write(data)
                await sink.drain()


@pytest.fixture
async def proxy(redis_server: RedisServer, redis_url: str) -> AsyncIterator[SilencingProxy]:
    """In front of the test's Redis (emptied by `redis_url`)."""
    started = SilencingProxy("127.0.0.1", redis_server.port)
    await started.start()
    yield started
    await started.close()


async def test_a_pub_sub_link_that_died_silently_is_found_and_replaced_with_a_gap(
    proxy: SilencingProxy, redis_url: str
) -> None:
    deaf = RedisBroker(proxy.url, link_check_s=LINK_CHECK_S)
    other = open_broker(redis_url)
    await deaf.open()
    await other.open()
    try:
        subscription = await deaf.subscribe("race:r1")
        await other.publish("race:r1", b"before")
        assert await subscription.get(WAIT_S) == b"before"

        proxy.silence()
        await other.publish("race:r1", b"lost")  # never reaches the deaf node's old link
        # The silent link is found out: a gap, then what is published on the new link.
        assert await subscription.get(WAIT_S) is None
        await other.publish("race:r1", b"after")
        assert await subscription.get(WAIT_S) == b"after"
    finally:
        await deaf.close()
        await other.close()
