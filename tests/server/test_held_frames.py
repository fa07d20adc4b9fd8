"""`HeldFrames`: each connection holding frames writes them once its hold is over, in the
order they started holding, with one timer for all of them; one whose socket is gone leaves
the queue at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from solrace.server.held_frames import SLACK_S, HeldFrames
from tests.waiting import eventually


class Holder:
    def __init__(
        self, name: str, log: list[tuple[str, float]], then: Callable[[], object] | None = None
    ) -> None:
        self.name = name
        self.log = log
        self.then = then
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def write_held(self) -> None:
        self.log.append((self.name, asyncio.get_running_loop().time()))
        if self.then is not None:
            self.then()


async def test_each_holder_writes_once_its_hold_is_over_in_order() -> None:
    loop = asyncio.get_running_loop()
    log: list[tuple[str, float]] = []
    held = HeldFrames(0.05)
    started: dict[str, float] = {}
    for name in ("first", "second", "third"):
        started[name] = loop.time()
        held.started_holding(Holder(name, log))
    done = asyncio.Event()
    late = Holder("late", log, then=done.set)

    def more() -> None:
        # A connection that starts holding after the timer ran: the timer is set again.
        started["late"] = loop.time()
        held.started_holding(late)

    held.started_holding(Holder("fourth", log, then=more))
    await asyncio.wait_for(done.wait(), 5)

    assert [name for name, _ in log] == ["first", "second", "third", "fourth", "late"]
    for name, at in log:
        if name in started:
            assert at >= started[name] + 0.05 - SLACK_S  # never before its hold (less slack)


async def test_a_holder_holding_again_while_queued_keeps_its_deadline() -> None:
    # A connection whose frames went out with another frame stays queued: frames it holds
    # again by then go out at that (earlier) deadline; it is queued once, asked once.
    log: list[tuple[str, float]] = []
    held = HeldFrames(0.01)
    holder = Holder("again", log)
    done = asyncio.Event()
    held.started_holding(holder)
    held.started_holding(holder)
    held.started_holding(Holder("last", log, then=done.set))
    assert len(held) == 2
    await asyncio.wait_for(done.wait(), 5)
    assert [name for name, _ in log] == ["again", "last"]
    assert len(held) == 0 and holder not in held


async def test_a_holder_whose_socket_is_gone_leaves_the_queue_at_once() -> None:
    """Its frames are dropped when its socket goes (`WebSocketSession.connection_lost`): it
    is not kept queued, nor asked, until its deadline; the others are asked at theirs."""
    log: list[tuple[str, float]] = []
    held = HeldFrames(0.05)
    done = asyncio.Event()
    gone, staying = Holder("gone", log), Holder("staying", log, then=done.set)
    held.started_holding(gone)
    held.started_holding(staying)
    gone.lost.set_result(None)
    await eventually(lambda: gone not in held, within=5, what="the gone holder unqueued")
    await asyncio.wait_for(done.wait(), 5)
    assert [name for name, _ in log] == ["staying"]  # the gone one was never asked
    assert len(held) == 0


async def test_a_holder_that_raises_leaves_the_others_their_timer() -> None:
    log: list[tuple[str, float]] = []
    held = HeldFrames(0.01)
    done = asyncio.Event()

    def fail() -> None:
        raise RuntimeError("a bug in one connection's write")

    held.started_holding(Holder("failing", log, then=fail))
    held.started_holding(Holder("next", log, then=done.set))
    await asyncio.wait_for(done.wait(), 5)
    assert [name for name, _ in log] == ["failing", "next"]
