"""A line about an address at most once a minute, counting the events left unsaid."""

from __future__ import annotations

from solrace.server.log_throttle import LogThrottle


def test_a_line_a_minute_per_key_with_the_count_of_events_not_said() -> None:
    lines = LogThrottle(60.0)
    assert lines.due("a", 0.0) == 0  # the first is said
    assert lines.due("a", 10.0) is None
    assert lines.due("a", 59.0) is None
    assert lines.due("b", 30.0) == 0  # another address has its own minute
    assert lines.due("a", 60.0) == 2  # said again, two unsaid before it
    assert lines.due("a", 61.0) is None


def test_forget_drops_keys_a_minute_old_and_gives_their_unsaid_counts() -> None:
    lines = LogThrottle(60.0)
    lines.due("a", 0.0)
    lines.due("a", 5.0)
    lines.due("b", 0.0)
    lines.due("c", 30.0)
    assert lines.forget(60.0) == {"a": 1}  # b went quiet: dropped without a count
    assert set(lines.said_at) == {"c"}
    assert lines.due("a", 61.0) == 0  # a new minute for a, its count already given
