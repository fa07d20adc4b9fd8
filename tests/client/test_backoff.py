"""The backoff between tries to open a link: its steps, its jitter, when it starts again."""

from __future__ import annotations

from solrace.client.backoff import Backoff


def test_the_backoff_restarts_only_after_a_link_that_lived() -> None:
    backoff = Backoff(1.0, 8.0, stable_after_s=5.0)

    def waits(count: int) -> list[float]:
        return [backoff.next_wait() for _ in range(count)]

    def within(got: list[float], steps: list[float]) -> bool:
        """Each wait is 50-100 % of its step (the jitter)."""
        return all(step / 2 <= wait <= step for wait, step in zip(got, steps, strict=True))

    assert within(waits(3), [1.0, 2.0, 4.0])
    backoff.link_lost(lived_s=0.1)  # welcomed and dropped at once: the waits keep growing
    assert within(waits(3), [8.0, 8.0, 8.0])
    backoff.link_lost(lived_s=5.0)  # a link that lived: from the start again
    assert within(waits(2), [1.0, 2.0])
    assert backoff.next_wait(not_before_s=30.0) == 30.0  # a server's Retry-After
