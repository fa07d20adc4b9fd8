"""The `redis://` store (server/store/redis.py) and the cancellation of a task waiting on
it: the call ends in `CancelledError` wherever in the call the cancellation comes. On Python
3.11 redis-py sends each command through `asyncio.wait_for`, which loses a cancellation that
comes as the send ends (it returns the send's result instead): a node's reader of the
tournaments' channel went on after its stop cancelled it, and the stop waited out its whole
deadline. A real redis-server on loopback."""

from __future__ import annotations

import asyncio

import pytest

from solrace.server.protocol.ids import RaceId
from solrace.server.store.redis import RedisStore

pytestmark = pytest.mark.redis

#: Turns of the event loop after which a call is cancelled, at most: far more than a read
#: of a missing race takes on a connection that is open already.
MOST_TURNS = 200


async def test_a_store_call_cancelled_anywhere_on_its_way_ends_cancelled(redis_url: str) -> None:
    store = RedisStore(redis_url)  # a socket timeout, as a node's store has
    await store.open()
    try:
        await store.get_race(RaceId("r0"))  # an open connection in the pool for the calls below
        cancelled_at: list[int] = []
        answered_though_cancelled: list[int] = []
        for turns in range(MOST_TURNS):
            call = asyncio.create_task(store.get_race(RaceId("r1")))
            for _ in range(turns):
                await asyncio.sleep(0)  # one turn of the event loop, not a wait for time
            if call.done():  # answered before this many turns: every earlier point was tried
                assert call.result() is None
                break
            call.cancel()
            try:
                await call
            except asyncio.CancelledError:
                cancelled_at.append(turns)
            else:
                answered_though_cancelled.append(turns)
        else:
            pytest.fail(f"a read still unanswered after {MOST_TURNS} turns of the event loop")
    finally:
        await store.close()
    assert answered_though_cancelled == []
    assert len(cancelled_at) >= 3  # the call was cancelled at several points on its way
