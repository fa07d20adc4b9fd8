"""`redis_client`: a burst of requests past the pool's size waits for connections instead of
failing (redis-py's own pool refused the 101st at once, which the node took for an outage).
A real redis-server on loopback."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from solrace.server.protocol.ids import PlayerId
from solrace.server.redis_client import WaitingPool, redis_client
from solrace.server.store.redis import RedisStore
from tests.redis_server import free_port
from tests.waiting import eventually

pytestmark = pytest.mark.redis


async def blocked_reads(client: aioredis.Redis, count: int) -> list[object]:
    """`count` requests at once, each holding its connection 50 ms on the server."""
    return await asyncio.gather(
        *(client.blpop([f"nothing-{i}"], timeout=0.05) for i in range(count)),
        return_exceptions=True,
    )


async def test_requests_past_the_pool_wait_for_a_connection(redis_url: str) -> None:
    client = redis_client(redis_url, max_connections=4)
    try:
        outcomes = await blocked_reads(client, 24)
        assert outcomes == [None] * 24  # each one timed out empty on the server, none failed
    finally:
        await client.aclose()
    # What redis-py's own pool does with the same burst: it refuses past its size.
    plain = aioredis.Redis.from_url(redis_url, max_connections=4)
    try:
        outcomes = await blocked_reads(plain, 24)
        assert any(isinstance(o, RedisConnectionError) for o in outcomes)
    finally:
        await plain.aclose()


async def test_a_request_that_finds_no_connection_in_time_fails_as_redis_away(
    redis_url: str,
) -> None:
    """Past the pool's wait a request fails with `ConnectionError` (what the store and the
    broker treat as Redis away), and the pool is whole again afterwards."""
    pool = WaitingPool.from_url(redis_url, max_connections=1, wait_s=0.05)
    client = aioredis.Redis.from_pool(pool)
    try:

        async def hold() -> object:
            return await client.blpop(["nothing"], timeout=2)

        holder = asyncio.create_task(hold())
        await eventually(lambda: pool.full, what="the holder to take the connection")
        with pytest.raises(RedisConnectionError, match="no Redis connection came free"):
            await client.get("key")
        assert await holder is None
        assert await client.set("key", "v")  # the room came back with the connection
    finally:
        await client.aclose()


async def test_failed_connects_give_their_room_back() -> None:
    """Requests to a Redis that is not there fail, each at once, however many: a failed
    connect does not keep its place in the pool."""
    pool = WaitingPool.from_url(f"redis://127.0.0.1:{free_port()}/0", max_connections=2, wait_s=5)
    client = aioredis.Redis.from_pool(pool)
    try:
        for _ in range(5):
            with pytest.raises(RedisConnectionError) as failure:
                await client.get("key")
            assert "came free" not in str(failure.value)
        assert not pool.full
    finally:
        await client.aclose()


async def test_a_connection_released_twice_gives_back_one_place(redis_url: str) -> None:
    """A second release of one connection (refused by the plain pool) gave back a second
    place: a third request at once then found the plain pool full and was refused."""
    pool = WaitingPool.from_url(redis_url, max_connections=2, wait_s=5)
    client = aioredis.Redis.from_pool(pool)
    try:
        connection = await pool.get_connection()
        await pool.release(connection)
        with pytest.raises(KeyError):
            await pool.release(connection)
        outcomes = await blocked_reads(client, 3)
        assert outcomes == [None] * 3
    finally:
        await client.aclose()


async def test_a_release_cancelled_midway_still_returns_its_connection(redis_url: str) -> None:
    """Cancelled while waiting for the pool's lock, a release left its connection in use for
    good (and its place given back): the pool ended up refusing requests."""
    pool = WaitingPool.from_url(redis_url, max_connections=1, wait_s=5)
    client = aioredis.Redis.from_pool(pool)
    try:
        connection = await pool.get_connection()
        async with pool._lock:  # the release waits for it
            releasing = asyncio.create_task(pool.release(connection))
            await asyncio.sleep(0)
            releasing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await releasing
        await eventually(lambda: not pool.full, what="the connection back in the pool")
        assert await blocked_reads(client, 2) == [None, None]
    finally:
        await client.aclose()


async def test_the_store_takes_a_burst_larger_than_the_library_s_default_pool(
    redis_url: str,
) -> None:
    """300 requests at once, as a storm of hellos makes them (the default pool held 100)."""
    store = RedisStore(redis_url)
    await store.open()
    try:
        players = await asyncio.gather(
            *(store.get_player(PlayerId(f"p{i}")) for i in range(300)), return_exceptions=True
        )
        assert players == [None] * 300
    finally:
        await store.close()


def open_sockets(pool: WaitingPool) -> int:
    """How many of `pool`'s connections hold an open socket."""
    every = [*pool._available_connections, *pool._in_use_connections]
    return sum(1 for connection in every if connection.is_connected)


async def test_a_closed_client_opens_no_new_connection(redis_url: str) -> None:
    """A request after the client closed (a task the stop did not end) is refused as Redis
    away: a connection it opened would stay open, nothing left to close it."""
    client = redis_client(redis_url)
    pool = client.connection_pool
    assert isinstance(pool, WaitingPool)
    assert await client.ping()
    await client.aclose()
    assert open_sockets(pool) == 0
    with pytest.raises(RedisConnectionError, match="closed"):
        await client.ping()
    assert open_sockets(pool) == 0


async def test_a_connection_in_use_while_the_client_closes_is_closed_when_given_back(
    redis_url: str,
) -> None:
    """A request under way when the client closes: its connection, given back afterwards,
    is closed rather than left open in the closed pool."""
    client = redis_client(redis_url)
    pool = client.connection_pool
    assert isinstance(pool, WaitingPool)
    connection = await pool.get_connection()
    await client.aclose()
    await connection.connect()  # what a request that was connecting then does
    assert connection.is_connected
    await pool.release(connection)
    assert not connection.is_connected
    assert open_sockets(pool) == 0
