"""The process of `solrace serve` around its node: `run` starts an `App` and serves until a
signal (`StopSignals`: SIGTERM, Ctrl-C), undoes a start that fails or is stopped (the data
folder it created goes again), and sets the garbage collector up for serving."""

from __future__ import annotations

import asyncio
import gc
import logging
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from solrace.server.admission import fit_to_descriptors
from solrace.server.app import App
from solrace.server.settings import Settings
from solrace.server.startup_errors import StartupError

__all__ = ["StopSignals", "first_missing_folder", "run", "tune_gc_for_serving"]

# The node itself (docs/operations.md, "Loggers"), as in app.py.
log = logging.getLogger("solrace.server")


def tune_gc_for_serving() -> None:
    """Set the garbage collector up for a node that has started: call once, after start-up.

    What is loaded by now (modules, pydantic schemas, recovered races) lives as long as the
    process: frozen out of the collector's sight, every full collection under load skips
    those ~50,000 objects."""
    gc.collect()
    gc.freeze()
    # Young collections at the default threshold (700) cost ~15% of a node's throughput at
    # 1,000 connections (measured): the young generation is collected 70x less often.
    gc.set_threshold(50_000, 50, 100)


def first_missing_folder(path: Path) -> Path | None:
    """The outermost folder of `path` (itself or a parent) that does not exist yet: the one
    to remove to undo creating `path`; None if `path` exists."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


class StopSignals:
    """SIGTERM and SIGINT (Ctrl-C), handled from before the node starts, so that none finds
    it without a handler: while it starts, the first one cancels the start (`run` undoes it);
    once it serves (`started`), it asks for a clean stop (`stop`)."""

    def __init__(self, starting: asyncio.Task[Any] | None) -> None:
        #: The first signal received, if any.
        self.received: signal.Signals | None = None
        self.stop = asyncio.Event()
        self._starting = starting
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)

    def started(self) -> None:
        """The node serves: a signal now stops it cleanly."""
        self._starting = None

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.received is None:
            self.received = sig
        self.stop.set()
        if self._starting is not None:
            self._starting.cancel()
            self._starting = None


async def run(settings: Settings) -> int:
    # A node that cannot start, or is stopped while starting (Ctrl-C, SIGTERM: the start is
    # cancelled), leaves no trace: a data folder this start created (the secret, an empty
    # database) goes again, so a mistyped port or Redis URL is harmless to retry.
    created = first_missing_folder(settings.data_dir.absolute())
    signals = StopSignals(asyncio.current_task())
    try:
        app = App(fit_to_descriptors(settings))  # a process-wide limit: here, not in App
        await app.start()
    except (StartupError, asyncio.CancelledError):
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        if signals.received is signal.SIGINT:
            raise KeyboardInterrupt from None  # `main` says so: interrupted while starting
        if signals.received is signal.SIGTERM:
            print("solrace serve: stopped while starting (SIGTERM)", file=sys.stderr)
            return 0
        raise
    signals.started()
    # A process-wide choice, so here and not in App (tests run many in one process).
    tune_gc_for_serving()
    await signals.stop.wait()
    log.info("signal received: shutting down")
    await app.stop()
    return 0
