"""The `redis://` store's checked writes (store/redis_tx.py): a watched key that changes
between the check and the write makes the check run again on what is there now."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from solrace.server.store.redis_tx import watched


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
