"""Keeping a bot inside the server's rate budget (docs/protocol.md, "Rate budget").

The server gives each connection a bucket of credits (100 by default, refilled at 5 per
second; one credit per message and per WebSocket ping) and closes a connection that sends with
none left (1008). A bot playing with `--delay 0` sends a move as soon as the last one is acked,
so it would empty that bucket within a race. `RateBudget` is the same bucket on the client's
side, a little smaller: a bot spends one credit per move and waits when none is left, keeping a
reserve for what else goes out on its connection (hello, join, start, resign, resent moves,
the client's and websockets' pings).

The server says its budget in the `welcome` (`rate`); a bot follows it once connected, and the
server's defaults before that (or with a server too old to say it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from solrace.server.protocol.messages import RateBudgetInfo
from solrace.server.protocol.ratelimit import (
    DEFAULT_RATE_CAPACITY,
    DEFAULT_RATE_REFILL_PER_S,
    CreditBucket,
)

#: The server's default budget (`SOLRACE_RATE_CAPACITY`, `SOLRACE_RATE_REFILL_PER_S`).
SERVER_RATE_CAPACITY: Final = DEFAULT_RATE_CAPACITY
SERVER_RATE_REFILL_PER_S: Final = DEFAULT_RATE_REFILL_PER_S
#: Credits of the server's bucket a bot leaves for its other messages.
RESERVE: Final = 10.0
#: Refill a bot leaves for its other messages (pings take 0.15 a second).
REFILL_MARGIN_PER_S: Final = 0.5


class RateBudget:
    """The server's credit bucket, kept on the client's clock: `wait_s()` says how long until
    a credit is there, `spend()` takes it."""

    def __init__(
        self, capacity: float, refill_per_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self.bucket = CreditBucket(capacity, refill_per_s, clock())

    @property
    def capacity(self) -> float:
        return self.bucket.capacity

    @property
    def refill_per_s(self) -> float:
        return self.bucket.refill_per_s

    def wait_s(self) -> float:
        """Seconds until one credit is there (0: now)."""
        return self.bucket.wait_s(self.clock())

    def spend(self) -> None:
        """Take a credit (after `wait_s()` came to 0; none is there to take otherwise)."""
        self.bucket.spend(self.clock())

    @classmethod
    def for_server(cls, said: RateBudgetInfo | None = None) -> RateBudget:
        """The budget the server `said` (its welcome's `rate`; None: the server's defaults)
        less a reserve for other messages."""
        capacity = SERVER_RATE_CAPACITY if said is None else said.capacity
        refill = SERVER_RATE_REFILL_PER_S if said is None else said.refill_per_s
        return cls(max(1.0, capacity - RESERVE), max(refill / 2, refill - REFILL_MARGIN_PER_S))
