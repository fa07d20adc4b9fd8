"""Waiting in tests for what no message announces: a deadline-bound poll, never a bare sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

STEP_S = 0.01
"""How long to yield to the event loop between two looks."""


async def eventually(
    predicate: Callable[[], bool], *, within: float = 20.0, what: str | None = None
) -> None:
    """Return once `predicate()` holds; fail after `within` seconds, naming `what` (by default
    the predicate's name) in the message."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            waited_for = predicate.__name__ if what is None else what
            raise AssertionError(f"timed out after {within:g} s waiting for {waited_for}")
        await asyncio.sleep(STEP_S)


async def eventually_async(
    check: Callable[[], Awaitable[bool]], *, within: float = 20.0, what: str
) -> None:
    """`eventually` for a check that must await (a store read)."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}")
        await asyncio.sleep(STEP_S)
