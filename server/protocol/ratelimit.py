"""Per-connection rate budget: a credit bucket that takes `now` as an argument."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

#: A connection's budget unless the node is told otherwise (`SOLRACE_RATE_CAPACITY`,
#: `SOLRACE_RATE_REFILL_PER_S`): what a client assumes until the welcome says the node's.
DEFAULT_RATE_CAPACITY: Final = 100.0
DEFAULT_RATE_REFILL_PER_S: Final = 5.0


@dataclass
class CreditBucket:
    """`capacity` credits, refilled at `refill_per_s`; each message spends one."""

    capacity: float
    refill_per_s: float
    now: float
    credits: float = field(init=False)

    def __post_init__(self) -> None:
        self.credits = self.capacity

    def is_full(self, now: float) -> bool:
        """Refilled to its capacity by `now` (as good as a new bucket)."""
        elapsed = max(0.0, now - self.now)
        return self.credits + elapsed * self.refill_per_s >= self.capacity

    def credits_at(self, now: float) -> float:
        """The credits there at `now` (spends nothing)."""
        elapsed = max(0.0, now - self.now)
        return min(self.capacity, self.credits + elapsed * self.refill_per_s)

    def can_spend(self, now: float, cost: float = 1.0) -> bool:
        """Would `spend(now, cost)` succeed? Spends nothing."""
        return self.credits_at(now) >= cost

    def wait_s(self, now: float, cost: float = 1.0) -> float:
        """Seconds from `now` until `cost` credits are there (0: now)."""
        return max(0.0, (cost - self.credits_at(now)) / self.refill_per_s)

    def give_back(self, cost: float = 1.0) -> None:
        """Return `cost` credits spent for something that did not happen (up to capacity)."""
        self.credits = min(self.capacity, self.credits + cost)

    def spend(self, now: float, cost: float = 1.0) -> bool:
        """Spend `cost` credits at time `now`; False when the budget is exhausted."""
        elapsed = max(0.0, now - self.now)
        self.now = max(self.now, now)
        self.credits = min(self.capacity, self.credits + elapsed * self.refill_per_s)
        if self.credits < cost:
            return False
        self.credits -= cost
        return True
