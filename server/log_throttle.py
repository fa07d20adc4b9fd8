"""Log lines about a client address at most once a minute, counting the ones left unsaid: a
flood from one address is a line a minute, not a line an event (wrong guesses, abuse closes)."""

from __future__ import annotations


class LogThrottle:
    """When to say a line about a key (a client's address): at most once every `every_s`."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        #: Each key's last line (monotonic seconds).
        self.said_at: dict[str, float] = {}
        #: Each key's events not said since its last line.
        self.unsaid: dict[str, int] = {}

    def due(self, key: str, now: float) -> int | None:
        """An event about `key` at `now`: None if its line must wait (the event is counted),
        else the line is said now, and this is how many events went unsaid before it."""
        last = self.said_at.get(key)
        if last is not None and now - last < self.every_s:
            self.unsaid[key] = self.unsaid.get(key, 0) + 1
            return None
        self.said_at[key] = now
        return self.unsaid.pop(key, 0)

    def forget(self, now: float) -> dict[str, int]:
        """Forget the keys whose last line is `every_s` old (what a flood from many addresses
        leaves behind stays bounded): those with events unsaid since, and how many."""
        left: dict[str, int] = {}
        for key in [k for k, at in self.said_at.items() if now - at >= self.every_s]:
            del self.said_at[key]
            unsaid = self.unsaid.pop(key, 0)
            if unsaid:
                left[key] = unsaid
        return left


__all__ = ["LogThrottle"]
