"""Which handler answers each client message type: the hub's own, or a service's (tournaments,
ratings) that the composition root plugs in (`Hub.plug_in`). Each type has exactly one: a
second handler for a type is refused when it is added, not left to lose silently to the first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from solrace.server.session import Session

#: Answers one client message of its type (decoded and schema-checked) for a session; a
#: refusal is raised (`RaceError`, or `StoreError` for a store away), and the hub answers it.
Handler = Callable[[Session, Any], Awaitable[None]]


class Routes:
    """Each client message type and the one handler that answers it."""

    def __init__(self) -> None:
        self._handlers: dict[type[Any], Handler] = {}

    def add(self, handlers: Mapping[type[Any], Handler]) -> None:
        """Route each message type of `handlers` to its handler. `ValueError`, and nothing
        added, if a type has a handler already."""
        taken = sorted(kind.__name__ for kind in handlers if kind in self._handlers)
        if taken:
            raise ValueError(f"message types answered already: {', '.join(taken)}")
        self._handlers.update(handlers)

    def handler_of(self, message: object) -> Handler | None:
        """The handler of `message`'s type; None if no one answers it."""
        return self._handlers.get(type(message))


__all__ = ["Handler", "Routes"]
