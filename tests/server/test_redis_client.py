"""`redis_client`: a burst of requests past the pool's size waits for connections instead of
failing (redis-py's own pool refused the 101st at once, which the node took for an outage).
A real redis-server on loopback."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from solrace.server.protocol.ids import PlayerId
from solrace.server.redis_client import redis_client
from solrace.server.store.redis import RedisStore

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
