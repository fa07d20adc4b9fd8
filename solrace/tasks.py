"""Reaping background tasks: cancel them, wait until they end, and keep their failures.

Shared by the server and the client (it belongs to neither layer: both stop tasks of theirs).

`suppress(BaseException)` around `await task` hides two things: a task that crashed (its
exception is gone without a trace) and a cancellation aimed at the *caller* (the awaiting task
can no longer be stopped). `cancel_and_wait` does neither.
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
