"""The `redis://` store's checked writes (store/redis_tx.py): a watched key that changes
between the check and the write makes the check run again on what is there now; a link lost
on the way is raised."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from solrace.server.store.redis_tx import watched
from tests.server.reply_losing_proxy import reply_losing_proxy


async def test_a_key_changed_under_the_check_is_checked_again(redis_url: str) -> None:
    client: Any = aioredis.Redis.from_url(redis_url, decode_responses=True)
    other: Any = aioredis.Redis.from_url(redis_url, decode_responses=True)
    await client.set("counter", "1")
    seen: list[str] = []

    async def increment(pipe: Any) -> str:
        value: str = await pipe.get("counter")
        seen.append(value)
        if len(seen) == 1:
            await other.set("counter", "10")  # another writer, between the check and the write
        pipe.multi()
        pipe.set("counter", str(int(value) + 1))
        await pipe.execute()
        return value

    try:
        assert await watched(client, ["counter"], increment) == "10"
        assert seen == ["1", "10"]  # the first write was refused, the check ran again
        assert await client.get("counter") == "11"  # not 2: the other write is not lost
    finally:
        await client.aclose()
        await other.aclose()


async def test_a_lost_exec_reply_is_a_connection_error_not_a_refusal(redis_url: str) -> None:
    """redis-py reports a link lost while keys are watched as a WatchError; `watched` raises
    the connection error instead of checking again (the EXEC may have been applied)."""
    async with reply_losing_proxy(redis_url) as proxy:
        client: Any = aioredis.Redis.from_url(proxy.url, decode_responses=True)
        seen: list[str | None] = []

        async def create(pipe: Any) -> None:
            seen.append(await pipe.get("counter"))
            pipe.multi()
            pipe.incr("counter")
            await pipe.execute()

        try:
            proxy.lose_next_reply("EXEC")
            with pytest.raises(RedisConnectionError):
                await watched(client, ["counter"], create)
            assert proxy.lost == 1
            assert seen == [None]  # checked once: the second look would find the write
            assert await client.get("counter") == "1"  # applied, its reply lost
        finally:
            await client.aclose()
