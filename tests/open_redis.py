"""A test that leaves a redis-py connection open fails at its own teardown, saying where the
connection was made.

Left open, such a connection is only found when the garbage collector frees it, in whatever test
runs then: its `ResourceWarning`s ("unclosed Connection", "loop is closed") fail that innocent
test, and which one depends on timing (with two worker processes, on a different test each
run). Here every asyncio redis-py connection is noted as it is made (a weak reference and the
stack that made it); after each test's teardown, one still open is that test's error. The
connections it names are then closed quietly, so that no later test pays for them.
"""

from __future__ import annotations

import gc
import traceback
import warnings
import weakref
from collections.abc import Generator
from typing import Any

import pytest
from redis.asyncio.connection import AbstractConnection

#: Every asyncio redis-py connection made and not yet freed, with the stack that made it.
_made: weakref.WeakKeyDictionary[AbstractConnection, traceback.StackSummary] = (
    weakref.WeakKeyDictionary()
)
_init = AbstractConnection.__init__


def _noted_init(self: AbstractConnection, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    _made[self] = traceback.StackSummary.from_list(traceback.extract_stack(limit=40)[:-1])


AbstractConnection.__init__ = _noted_init  # type: ignore[method-assign]


def left_open() -> list[tuple[AbstractConnection, traceback.StackSummary]]:
    """The connections made so far that are still open (a stream writer not closed)."""
    return [(conn, stack) for conn, stack in list(_made.items()) if conn.is_connected]


def _close_quietly(connections: list[AbstractConnection]) -> None:
    """Let go of connections whose event loop is gone: their streams are freed (and their
    sockets closed) now, with the warnings that says silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for conn in connections:
            conn._reader = None
            conn._writer = None
        connections.clear()
        gc.collect()


#: Frames that say nothing of who made a connection: the event loop's, pytest's, redis-py's.
_PLUMBING = ("/asyncio/", "/_pytest/", "/pluggy/", "/redis/")


def describe(conn: AbstractConnection, stack: traceback.StackSummary) -> str:
    ours = [frame for frame in stack if not any(part in frame.filename for part in _PLUMBING)]
    made = "".join(traceback.format_list(ours or stack))
    return f"{conn!r}, made at (most recent call last):\n{made}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    yield  # every fixture of the test is torn down, its event loop closed
    found = left_open()
    if found:
        said = f"{item.nodeid} left {len(found)} redis connection(s) open:\n" + "\n".join(
            describe(conn, stack) for conn, stack in found
        )
        connections = [conn for conn, _ in found]
        found.clear()
        _close_quietly(connections)
        raise AssertionError(said)
