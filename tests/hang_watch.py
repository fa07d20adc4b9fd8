"""A last guard against a test that never ends: its process stops, with every thread's stack.

pytest-timeout (120 s, pyproject.toml) stops a slow test by raising in the main thread from a
signal handler. An exception raised there can be lost (in a finaliser, in a callback that
swallows it), and a test's teardown after it has no limit at all. A run stuck that way used to
go on until the machine's memory ran out (a helper looping forever on one deal in a thousand,
killed 20 minutes later with no word of where). Here a thread watches each test; one still
running `HUNG_PAST_TIMEOUT_S` after its own pytest-timeout limit ends its process at once with
the stacks: in one process (`-n 0`) the run ends there; under pytest-xdist the worker ends,
xdist reports the test as crashed and goes on in a new worker, and the run ends red. Either way
the output says where it hung. A test without a limit (`--timeout=0`) is not watched, nor one
stopped in the debugger (pytest-timeout stands down then too).
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections.abc import Generator

import pytest
import pytest_timeout

#: How long past its pytest-timeout limit a test may still run: only a test that limit
#: could not stop gets here (`HANG_WATCH_S` in the environment sets another, for the guard's
#: own test).
HUNG_PAST_TIMEOUT_S = float(os.environ.get("HANG_WATCH_S", "180"))

#: The exit status of a run the guard ended (pytest's own for failed tests).
HUNG_EXIT_STATUS = 1


class HangWatch:
    """One daemon thread; `watch(name, limit_s)` starts a test's clock, `done()` stops it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.limit_s = 0.0
        self._lock = threading.Lock()
        self._test: str | None = None
        self._deadline = 0.0
        self._changed = threading.Event()
        threading.Thread(target=self._run, name="hang-watch", daemon=True).start()

    def watch(self, test: str, limit_s: float) -> None:
        with self._lock:
            self._test, self.limit_s = test, limit_s
            self._deadline = time.monotonic() + limit_s
        self._changed.set()

    def done(self) -> None:
        with self._lock:
            self._test = None
        self._changed.set()

    def _run(self) -> None:
        while True:
            self._changed.clear()  # before reading: a change from now on ends the wait
            with self._lock:
                test, left = self._test, self._deadline - time.monotonic()
            if test is None or pytest_timeout.SUPPRESS_TIMEOUT:  # in the debugger: stand down
                self._changed.wait()
            elif left > 0:
                self._changed.wait(left)
            else:
                self._stop_the_run(test)

    def _stop_the_run(self, test: str) -> None:
        capture = self.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.suspend_global_capture(in_=True)  # write to the real terminal
        sys.stderr.write(
            f"\n+++ {test} still running after {self.limit_s:.0f} s, past its pytest-timeout: "
            "this process stops here; every thread's stack follows +++\n"
        )
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(HUNG_EXIT_STATUS)


_WATCH = pytest.StashKey[HangWatch]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_WATCH] = HangWatch(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    watch = item.config.stash[_WATCH]
    # pytest-timeout's own reading of the item's limit (marker, option, ini, environment).
    timeout = pytest_timeout._get_item_settings(item).timeout
    if timeout:
        watch.watch(item.nodeid, timeout + HUNG_PAST_TIMEOUT_S)
    try:
        return (yield)
    finally:
        watch.done()
