"""The node's timer loop: steps that fail are logged, and a cancellation a step swallowed
still ends the loop (a node's shutdown waited forever on such a loop before)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from solrace.server.store import StoreUnavailableError
from solrace.server.timers import run_every

log = logging.getLogger("tests.timers")


async def test_a_cancellation_a_step_swallows_still_ends_the_loop() -> None:
    in_step = asyncio.Event()
    steps = 0

    async def swallowing_step() -> None:
        # As a library might: the cancellation arrives during its wait and is dropped.
        nonlocal steps
        steps += 1
        in_step.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(10)

    loop = asyncio.create_task(run_every(0.001, swallowing_step, log, "the step"))
    await asyncio.wait_for(in_step.wait(), 5)
    loop.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(loop, 5)
    assert steps == 1


async def test_a_failing_step_is_logged_and_the_next_one_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0
    second = asyncio.Event()

    async def step() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        second.set()

    with caplog.at_level(logging.ERROR, logger="tests.timers"):
        loop = asyncio.create_task(run_every(0.001, step, log, "the step"))
        await asyncio.wait_for(second.wait(), 5)
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert [r.getMessage() for r in caplog.records] == ["the step failed"]


async def test_an_outage_is_said_once_when_it_starts_and_once_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A store or Redis outage fails every step until it ends: one warning then, without a
    traceback, and one when a step works again (the log flooded with one per step before)."""
    calls = 0
    back = asyncio.Event()

    async def step() -> None:
        nonlocal calls
        calls += 1
        if calls <= 5:
            raise StoreUnavailableError("redis unreachable")
        back.set()

    with caplog.at_level(logging.INFO, logger="tests.timers"):
        loop = asyncio.create_task(run_every(0.001, step, log, "rating the races left unrated"))
        await asyncio.wait_for(back.wait(), 5)
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records] == [
        (
            "WARNING",
            "rating the races left unrated failed: redis unreachable (said once until it works "
            "again)",
            None,
        ),
        ("WARNING", "rating the races left unrated works again after 5 failure(s)", None),
    ]
