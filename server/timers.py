"""The node's periodic work: one loop for every timer (ticks, the node watch, the lobby poll).

`run_every` runs a step every so often until its task is cancelled. A step that fails is
logged and the loop goes on. A cancellation ends the loop even when a library inside the step
swallowed it (a Redis client may turn it into an error, or drop it): the task still says it is
being cancelled, and the loop looks after each step. Without that, a node's shutdown waited
forever on a tick loop that had lost its cancellation (seen in the tests, on Redis).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable


async def run_every(
    every_s: float, step: Callable[[], Awaitable[None]], log: logging.Logger, what: str
) -> None:
    """Await `step()` every `every_s` seconds (after each pause) until cancelled; a failure
    is logged as `what failed` and the next step comes as usual."""
    task = asyncio.current_task()
    while True:
        await asyncio.sleep(every_s)  # the node's timer, not a wait in a test
        try:
            await step()
        except Exception:
            log.exception("%s failed", what)
        if task is not None and task.cancelling():
            raise asyncio.CancelledError  # asked to stop during the step, which lost it
