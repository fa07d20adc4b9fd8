"""The command lines of a line mode: queued as they come while the mode runs, taken in the
order typed, and looked at meanwhile by a command that waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from solrace.client.typed_lines import TypedLines

#: The end of the input, for `fed`.
END = None


async def fed(queue: asyncio.Queue[str | None]) -> AsyncIterator[str]:
    """The input as typed: each line put in `queue`, until `END`."""
    while (line := await queue.get()) is not END:
        yield line


async def test_lines_come_in_the_order_typed_without_blanks_or_comments() -> None:
    typed = TypedLines()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    for line in ("board\n", "\n", "  # a comment\n", "  w-t3 \n", "quit\n", END):
        queue.put_nowait(line)
    async with typed.reading(fed(queue), name="test-input"):
        got = [await typed.next_line() for _ in range(4)]
    assert got == ["board", "w-t3", "quit", None]
    assert typed.ended


async def test_a_wait_wakes_for_a_line_typed_meanwhile_or_for_what_it_waits_with() -> None:
    typed = TypedLines()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    elsewhere: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    async with typed.reading(fed(queue), name="test-input"):
        waiting = asyncio.create_task(typed.wait_more(elsewhere))
        queue.put_nowait("start")
        await asyncio.wait_for(waiting, 10)
        assert [t.text for t in typed.waiting] == ["start"]  # looked at, still to run

        typed.more.clear()
        waiting = asyncio.create_task(typed.wait_more(elsewhere))
        elsewhere.set_result(None)
        await asyncio.wait_for(waiting, 10)
        assert not typed.more.is_set()
        assert await typed.next_line() == "start"


async def test_the_reading_stops_with_its_block() -> None:
    typed = TypedLines()
    queue: asyncio.Queue[str | None] = asyncio.Queue()  # never ends by itself
    async with typed.reading(fed(queue), name="test-input"):
        queue.put_nowait("list")
        assert await asyncio.wait_for(typed.next_line(), 10) == "list"
    assert [t for t in asyncio.all_tasks() if t.get_name() == "test-input"] == []
    assert typed.ended  # what is left to run is taken, then the end
    assert await typed.next_line() is None
