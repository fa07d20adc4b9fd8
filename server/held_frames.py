"""Frames that may wait a little: a racer's progress sent to the other racers and spectators.

Every frame written on its own is a `send` system call, and on loopback or a busy host that
call, not the Python around it, is the larger part of a frame's cost at the edge (py-spy, one
node under `bench/load.py`: about a fifth of the event loop's time was spent inside `send`).
A progress event tells an opponent how far a racer got; it does not answer anything. So a
session holds such frames back (`WebSocketSession.hold_frame`) until the next frame it writes
anyway (an ack, an answer, a change of the race), which takes them along in the same write, or
until `hold_s` has passed since the first of them was held, whichever comes first. A session's
frames keep their order: held frames always go out before the frame that takes them along.

`HeldFrames` keeps the deadline of every connection on the node with frames held, in one queue
and one timer: every frame waits the same `hold_s`, so the queue is in deadline order.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

#: Deadlines this close together are met by one run of the timer.
SLACK_S = 0.005


class Holder(Protocol):
    """A connection that holds frames back (`WebSocketSession`)."""

    def write_held(self) -> None:
        """Write the frames it holds, if any, now."""


class HeldFrames:
    """The node's connections holding frames back, each written out `hold_s` after its first
    held frame at the latest."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        #: (deadline, connection) in deadline order. A connection whose frames went out with
        #: another frame before its deadline stays queued: if it holds frames again by then,
        #: they go out at that earlier deadline (earlier, never later, than `hold_s`).
        self._queue: deque[tuple[float, Holder]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def started_holding(self, holder: Holder) -> None:
        """`holder` held its first frame since it last wrote: it writes it `hold_s` from now
        at the latest."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.hold_s
        self._queue.append((due, holder))
        if self._timer is None:
            self._timer = loop.call_at(due, self._write_due)

    def _write_due(self) -> None:
        self._timer = None
        queue = self._queue
        loop = asyncio.get_running_loop()
        horizon = loop.time() + SLACK_S
        try:
            while queue and queue[0][0] <= horizon:
                queue.popleft()[1].write_held()
        finally:  # one that raised (a bug, logged by the loop) leaves the others their timer
            if queue:
                self._timer = loop.call_at(queue[0][0], self._write_due)


__all__ = ["SLACK_S", "HeldFrames", "Holder"]
