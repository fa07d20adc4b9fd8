"""The node's timers (server/timers.py): an outage of the store or of Redis is said once, not
a traceback a step (the loop itself: tests/server/test_periodic.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from solrace.server.store import StoreUnavailableError
from solrace.server.timers import run_every

log = logging.getLogger("tests.timers")


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
