"""The waits between a client's tries to open a link again: `Backoff`."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(slots=True)
class Backoff:
    """The waits between tries to open a link: exponential from `low` up to `high`, with
    jitter (each wait is 50-100 % of its step).

    A link that lived `stable_after_s` starts the next round of tries at `low` again; one that
    died sooner (a server that welcomes and closes at once) does not, so a server that keeps
    dropping new links is tried ever more slowly, down to one try per `high`."""

    low: float
    high: float
    stable_after_s: float
    _step: float = 0.0

    def __post_init__(self) -> None:
        self._step = self.low

    def next_wait(self, not_before_s: float = 0.0) -> float:
        """Seconds to wait before the next try (never less than `not_before_s`, a server's
        Retry-After); the step after it doubles, up to `high`."""
        wait = max(not_before_s, self._step * (0.5 + random.random() / 2))
        self._step = min(self.high, self._step * 2)
        return wait

    def link_lost(self, lived_s: float) -> None:
        """A link that was up for `lived_s` is lost: the backoff restarts if it lived long."""
        if lived_s >= self.stable_after_s:
            self._step = self.low


__all__ = ["Backoff"]
