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
and one timer: every frame waits the same `hold_s`, so the queue is in deadline order. A
connection is queued once at a time, and leaves the queue when its socket is gone (its `lost`),
not at its deadline: what it held is dropped then, and nothing is kept for it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Protocol

#: Deadlines this close together are met by one run of the timer.
SLACK_S = 0.005


class Holder(Protocol):
    """A connection that holds frames back (`WebSocketSession`)."""

    #: Done once the connection is gone (nothing can be written to it any more).
    lost: asyncio.Future[None]

    def write_held(self) -> None:
        """Write the frames it holds, if any, now."""


class HeldFrames:
    """The node's connections holding frames back, each written out `hold_s` after its first
    held frame at the latest."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        #: Each connection queued (by its `lost`): its deadline, in deadline order. One whose
        #: frames went out with another frame before its deadline stays queued: if it holds
        #: frames again by then, they go out at that deadline (earlier, never later, than
        #: `hold_s`). One whose socket is gone leaves it at once (`_gone`).
        self._queue: OrderedDict[asyncio.Future[None], tuple[float, Holder]] = OrderedDict()
        self._timer: asyncio.TimerHandle | None = None
        self._gone_callback = self._gone  # one bound method: `remove_done_callback` finds it

    def __contains__(self, holder: Holder) -> bool:
        """`holder` is queued: its frames go out at its deadline at the latest."""
        return holder.lost in self._queue

    def __len__(self) -> int:
        return len(self._queue)

    def started_holding(self, holder: Holder) -> None:
        """`holder` held its first frame since it last wrote: it writes it `hold_s` from now
        at the latest."""
        lost = holder.lost
        if lost in self._queue:
            return  # its deadline, earlier, stands
        loop = asyncio.get_running_loop()
        due = loop.time() + self.hold_s
        self._queue[lost] = (due, holder)
        lost.add_done_callback(self._gone_callback)
        if self._timer is None:
            self._timer = loop.call_at(due, self._write_due)

    def _gone(self, lost: asyncio.Future[None]) -> None:
        """A queued connection's socket is gone: it leaves the queue (its frames are dropped)."""
        self._queue.pop(lost, None)

    def _write_due(self) -> None:
        self._timer = None
        queue = self._queue
        loop = asyncio.get_running_loop()
        horizon = loop.time() + SLACK_S
        try:
            while queue:
                lost, (due, holder) = next(iter(queue.items()))
                if due > horizon:
                    break
                del queue[lost]
                lost.remove_done_callback(self._gone_callback)
                holder.write_held()
        finally:  # one that raised (a bug, logged by the loop) leaves the others their timer
            if queue:
                first_due = next(iter(queue.values()))[0]
                self._timer = loop.call_at(first_due, self._write_due)


__all__ = ["SLACK_S", "HeldFrames", "Holder"]
