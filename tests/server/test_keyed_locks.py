"""`KeyedLocks`: one holder per key, and nothing kept for a key nobody holds or waits for."""

from __future__ import annotations

import asyncio

from solrace.server.keyed_locks import KeyedLocks


async def test_holders_of_one_key_take_turns_and_other_keys_do_not_wait() -> None:
    locks = KeyedLocks()
    order: list[str] = []
    first_in = asyncio.Event()
    let_go = asyncio.Event()

    async def first() -> None:
        async with locks.hold("t1"):
            order.append("first in")
            first_in.set()
            await let_go.wait()
            order.append("first out")

    async def second() -> None:
        async with locks.hold("t1"):
            order.append("second in")

    holding = asyncio.create_task(first())
    await first_in.wait()
    waiting = asyncio.create_task(second())
    async with locks.hold("t2"):  # another key: free while t1 is held
        order.append("other key")
    assert len(locks) == 1
    let_go.set()
    await asyncio.gather(holding, waiting)
    assert order == ["first in", "other key", "first out", "second in"]
    assert len(locks) == 0


async def test_a_waiter_cancelled_leaves_nothing_behind() -> None:
    locks = KeyedLocks()
    held = asyncio.Event()
    let_go = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("t1"):
            held.set()
            await let_go.wait()

    async def waiter() -> None:
        async with locks.hold("t1"):
            raise AssertionError("a cancelled waiter never holds the lock")

    holding = asyncio.create_task(holder())
    await held.wait()
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0)  # one turn: the waiter is queued on the lock
    waiting.cancel()
    let_go.set()
    await holding
    assert waiting.cancelled()
    assert len(locks) == 0
