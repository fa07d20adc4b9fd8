"""Periodic work: `run_every` runs a step every so often until its task is cancelled.

A step that fails is logged and the loop goes on: one exception must not end the work for the
whole node (the transport's watchdog, with no `except`, ended every connection's idle timeout
and keepalive at its first). Failures of the kinds the caller names as outages are said once
until a step works again, with no traceback (`Outage`). A cancellation ends the loop even when
a library inside the step swallowed it (a Redis client may turn it into an error, or drop it):
the task still says it is being cancelled, and the loop looks after each step. Without that, a
node's shutdown waited forever on a tick loop that had lost its cancellation (seen in the
tests, on Redis).

It imports neither the store nor the broker, so the store may use it too (and the transport);
`timers.run_every` names their outages for the node's timers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from solrace.server.outage import Outage
from solrace.tasks import raise_lost_cancellation


async def run_every(
    every_s: float,
    step: Callable[[], Awaitable[None]],
    log: logging.Logger,
    what: str,
    *,
    outages: tuple[type[Exception], ...] = (),
) -> None:
    """Await `step()` every `every_s` seconds (after each pause) until cancelled; a failure
    is logged as `what failed` and the next step comes as usual (one of `outages` once until
    a step works again, with no traceback)."""
    outage = Outage(log, what)
    while True:
        await asyncio.sleep(every_s)  # the node's timer, not a wait in a test
        try:
            await step()
        except outages as exc:
            outage.failed(exc)
        except Exception:
            log.exception("%s failed", what)
        else:
            outage.worked()
        raise_lost_cancellation()  # asked to stop during the step, which lost it
