"""What the node's services do once this node finished a race: the finish hooks.

A service (ratings, tournaments) adds a hook to the race keeper (`RaceKeeper.add_finish_hook`);
`FinishHooks` keeps them in the order they were added and calls each with the race's record
once this node finished it (after the change that finished it was stored, or after a reload
found a race finished that a save whose answer was lost may have finished). A hook that fails
is logged; the next ones still run.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from solrace.server.protocol.records import RaceRecord
from solrace.server.runtime import RaceRuntime

log = logging.getLogger("solrace.server.race_finish_hooks")

#: What a service does once this node finished a race (ratings, tournaments), given its record.
RaceFinishedHook = Callable[[RaceRecord], Awaitable[None]]


class FinishHooks:
    """The finish hooks of a node's races, called in the order they were added."""

    def __init__(self) -> None:
        #: Called, in this order, with each race this node finished (`add`).
        self._finish_hooks: list[RaceFinishedHook] = []

    def add(self, hook: RaceFinishedHook) -> None:
        """Call `hook` with each race this node finishes, after the hooks added before it (a
        hook that fails is logged; the next ones still run)."""
        self._finish_hooks.append(hook)

    def remove(self, hook: RaceFinishedHook) -> None:
        """Stop calling `hook` (the first one added equal to it); `ValueError` if it was
        never added."""
        self._finish_hooks.remove(hook)

    async def run(self, runtime: RaceRuntime) -> None:
        """The finish hooks, in order, with the race's record (one that fails is logged)."""
        for hook in self._finish_hooks:
            try:
                await hook(runtime.race.to_record())
            except Exception:
                log.exception("race %s: a finish hook failed", runtime.race_id)


__all__ = [
    "FinishHooks",
    "RaceFinishedHook",
]
