"""Per-connection rate budget: a credit bucket that takes `now` as an argument."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def can_spend(self, now: float, cost: float = 1.0) -> bool:
        """Would `spend(now, cost)` succeed? Spends nothing."""
        elapsed = max(0.0, now - self.now)
        return min(self.capacity, self.credits + elapsed * self.refill_per_s) >= cost

    def spend(self, now: float, cost: float = 1.0) -> bool:
        """Spend `cost` credits at time `now`; False when the budget is exhausted."""
        elapsed = max(0.0, now - self.now)
        self.now = max(self.now, now)
        self.credits = min(self.capacity, self.credits + elapsed * self.refill_per_s)
        if self.credits < cost:
            return False
        self.credits -= cost
        return True
