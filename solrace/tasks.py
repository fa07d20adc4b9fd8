"""Reaping background tasks: cancel them, wait until they end, and keep their failures.

Shared by the server and the client (it belongs to neither layer: both stop tasks of theirs).

`suppress(BaseException)` around `await task` hides two things: a task that crashed (its
exception is gone without a trace) and a cancellation aimed at the *caller* (the awaiting task
can no longer be stopped). `cancel_and_wait` does neither.

A cancellation can also be lost inside a task, by code that catches it and goes on:
`raise_lost_cancellation` raises it again where the task would otherwise carry on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until every one has ended.

    A task that ended with an exception other than its cancellation is logged (with its
    traceback), not raised: the caller is tidying up. A cancellation of the caller itself
    while it waits is not swallowed: it is raised once the tasks have ended (`gather` waits
    for its cancelled children before it passes a cancellation on)."""
    reaped = list(tasks)
    for task in reaped:
        task.cancel()
    if not reaped:
        return
    outcomes = await asyncio.gather(*reaped, return_exceptions=True)
    for task, outcome in zip(reaped, outcomes, strict=True):
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            log.error("task %s failed", task.get_name(), exc_info=outcome)


def stop_requests() -> int:
    """How many cancellations of the current task are pending (`Task.cancelling()`; 0 outside
    a task): taken before some work, it is the `since` of `raise_lost_cancellation`."""
    task = asyncio.current_task()
    return 0 if task is None else task.cancelling()


def raise_lost_cancellation(since: int = 0) -> None:
    """Raise `CancelledError` if the current task was asked to stop more than `since` times
    (`stop_requests()` before the work) though the work ended without raising it: something in
    it swallowed the cancellation (redis-py's commands on Python 3.11 can, through
    `asyncio.wait_for`). A loop going on after such work would run as if never asked to stop."""
    if stop_requests() > since:
        raise asyncio.CancelledError
