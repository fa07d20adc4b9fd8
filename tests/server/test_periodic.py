"""The periodic loop (server/periodic.py): steps that fail are logged and the next comes, an
outage the caller names is said once, and a cancellation a step swallowed still ends the loop
(a node's shutdown waited forever on such a loop before)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from solrace.server.periodic import run_every

log = logging.getLogger("tests.periodic")


class AwayError(Exception):
    """An outage of something a step needs."""


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


async def test_failures_are_logged_and_the_next_step_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any failure but a named outage is an error with its traceback; a named outage, a
    warning once until a step works again."""
    failures: list[Exception] = [RuntimeError("boom"), AwayError("away"), AwayError("away")]
    done = asyncio.Event()

    async def step() -> None:
        if failures:
            raise failures.pop(0)
        done.set()

    with caplog.at_level(logging.INFO, logger="tests.periodic"):
        loop = asyncio.create_task(run_every(0.001, step, log, "the step", outages=(AwayError,)))
        await asyncio.wait_for(done.wait(), 5)
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop
    assert [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records] == [
        ("ERROR", "the step failed", True),
        ("WARNING", "the step failed: away (said once until it works again)", False),
        ("WARNING", "the step works again after 2 failure(s)", False),
    ]
