"""The node's timers (ticks, the node watch, the lobby poll, the rating sweep): the periodic
loop of `periodic.run_every`, with an outage of the store or of Redis said once until a step
works again, not a traceback a step."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from solrace.server import periodic
from solrace.server.broker import BrokerUnavailableError
from solrace.server.store import StoreUnavailableError

#: Failures that are an outage of the store or of Redis: said once, not with a traceback.
OUTAGES = (StoreUnavailableError, BrokerUnavailableError)


async def run_every(
    every_s: float, step: Callable[[], Awaitable[None]], log: logging.Logger, what: str
) -> None:
    """Await `step()` every `every_s` seconds (after each pause) until cancelled; a failure
    is logged as `what failed` and the next step comes as usual (an outage of the store or of
    Redis once until a step works again, with no traceback)."""
    await periodic.run_every(every_s, step, log, what, outages=OUTAGES)
