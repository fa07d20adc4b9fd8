"""`cancel_and_wait`: tasks end, failures are logged, the caller's own cancellation goes on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from solrace.tasks import cancel_and_wait, raise_lost_cancellation, stop_requests


async def idle(started: asyncio.Event) -> None:
    started.set()
    await asyncio.Event().wait()


async def test_cancelled_tasks_end_and_nothing_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    started = asyncio.Event()
    task = asyncio.create_task(idle(started))
    await asyncio.wait_for(started.wait(), 5)
    with caplog.at_level(logging.DEBUG, logger="solrace.tasks"):
        await cancel_and_wait([task])
        await cancel_and_wait([])
    assert task.cancelled()
    assert not caplog.records


async def test_a_task_that_failed_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def crash() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(crash(), name="crasher")
    await asyncio.wait([task], timeout=5)
    with caplog.at_level(logging.ERROR, logger="solrace.tasks"):
        await cancel_and_wait([task])
    [record] = caplog.records
    assert "crasher" in record.getMessage()
    assert record.exc_info is not None and "boom" in str(record.exc_info[1])


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    """The reaper is cancelled while a task it reaps is still stopping: once that task has
    ended, the reaper ends cancelled too (`suppress(BaseException)` returned normally)."""
    started = asyncio.Event()
    stopping = asyncio.Event()
    may_stop = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await idle(started)
        except asyncio.CancelledError:
            stopping.set()
            await may_stop.wait()
            raise

    task = asyncio.create_task(slow_to_stop())
    await asyncio.wait_for(started.wait(), 5)
    reaper = asyncio.create_task(cancel_and_wait([task]))
    await asyncio.wait_for(stopping.wait(), 5)
    reaper.cancel()
    may_stop.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(reaper, 5)
    assert task.cancelled()


async def test_a_cancellation_swallowed_by_work_is_raised_again_after_it() -> None:
    """The work catches its task's cancellation and returns; `raise_lost_cancellation` (from
    the count before the work) raises it again."""
    inside = asyncio.Event()
    after: list[str] = []

    async def swallowing() -> None:
        try:
            inside.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass  # lost, as redis-py's `wait_for` on Python 3.11 can lose it

    async def loop_step() -> None:
        since = stop_requests()
        await swallowing()
        after.append(f"ended with {stop_requests() - since} lost")
        raise_lost_cancellation(since)
        after.append("went on")

    task = asyncio.create_task(loop_step())
    await asyncio.wait_for(inside.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after == ["ended with 1 lost"]

    raise_lost_cancellation()  # a task not asked to stop: nothing to raise
