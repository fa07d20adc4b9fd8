"""How the client's long-running commands stop: one mechanism for Ctrl-C, a kill and a hangup.

`solrace play --plain`, `solrace bot`, `solrace tournament bots` and `solrace tournament play
--plain` hold something on the server while they run (open races, seats, registrations).
SIGINT (Ctrl-C), SIGTERM (a kill, a service stop) and SIGHUP (a closed terminal, a lost ssh
session) all stop them the same way: `run_until_stopped` cancels the command's work, runs its
`on_stop` (leave or withdraw what it holds, and say so), and returns `Stopped(signum)`; the
command then exits with `Stopped.status`, 128 + the signal's number (130, 143, 129), as a
program killed by the signal would.

- A signal ignored when the command starts is left ignored: `nohup solrace tournament bots
  ...` keeps running when its terminal closes, and a background job of a non-interactive
  shell (SIGINT ignored) is not stopped by a Ctrl-C meant for the foreground.
- Once stopping, a second Ctrl-C gives up the leaving at once (a person in a hurry); a
  repeated SIGTERM or SIGHUP is ignored (a closed terminal may send two hangups, the
  kernel's and the shell's, and the leaving is bounded by its own timeouts anyway).
- Where the signals cannot be handled (not the main thread, Windows), Ctrl-C still reaches
  the command as `asyncio.run` cancelling it: `run_until_stopped` then does the same (the work
  cancelled, `on_stop`), and passes the cancellation on (`KeyboardInterrupt` out of
  `asyncio.run`, exit status 130).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from solrace.tasks import cancel_and_wait

T = TypeVar("T")

#: The signals that stop a command: Ctrl-C, a kill, a closed terminal (no SIGHUP on Windows).
STOP_SIGNALS: Final[tuple[signal.Signals, ...]] = tuple(
    signum
    for signum in (getattr(signal, name, None) for name in ("SIGINT", "SIGTERM", "SIGHUP"))
    if signum is not None
)


@dataclass(frozen=True, slots=True)
class Stopped:
    """The work was stopped by signal `signum` (and `on_stop` has run)."""

    signum: int

    @property
    def status(self) -> int:
        """The exit status: 128 + the signal's number, as a shell reports a killed program."""
        return 128 + self.signum


class _Stops:
    """The signals received while `run_until_stopped` runs."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        #: The first stop signal's number.
        self.first: asyncio.Future[int] = loop.create_future()
        #: `on_stop` once it runs: a second Ctrl-C cancels it.
        self.leaving: asyncio.Task[None] | None = None

    def on_signal(self, signum: int) -> None:
        if self.leaving is not None:
            if signum == signal.SIGINT:
                self.leaving.cancel()
        elif not self.first.done():
            self.first.set_result(signum)

    async def leave(self, on_stop: Callable[[], Awaitable[None]], name: str) -> None:
        """Run `on_stop` as a task of its own (a second Ctrl-C cancels it, and then this
        returns); its failure is raised."""
        self.leaving = asyncio.create_task(_run(on_stop), name=name)
        await asyncio.wait({self.leaving})
        if not self.leaving.cancelled():
            self.leaving.result()


def _handle(
    loop: asyncio.AbstractEventLoop, signals: Iterable[int], callback: Callable[[int], None]
) -> dict[int, Any]:
    """Route `signals` to `callback` on `loop`, except those ignored now; the ones handled,
    each with the Python handler it had before (None: one not set from Python)."""
    handled: dict[int, Any] = {}
    for signum in signals:
        before = signal.getsignal(signum)
        if before == signal.SIG_IGN:
            continue
        try:
            loop.add_signal_handler(signum, callback, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # Windows, or not the main thread
        handled[signum] = before
    return handled


def _restore(loop: asyncio.AbstractEventLoop, handled: dict[int, Any]) -> None:
    """Undo `_handle`: each signal goes back to the handler it had (`asyncio.run`'s own for
    SIGINT: a later Ctrl-C cancels the program's task again)."""
    for signum, before in handled.items():
        loop.remove_signal_handler(signum)
        if before is not None:
            with contextlib.suppress(TypeError, ValueError, OSError):
                signal.signal(signum, before)


async def run_until_stopped(
    work: Coroutine[Any, Any, T],
    *,
    on_stop: Callable[[], Awaitable[None]] | None = None,
    signals: Iterable[int] = STOP_SIGNALS,
    name: str = "solrace-work",
) -> T | Stopped:
    """Run `work` to its end (its result, or its exception raised), unless one of `signals`
    comes first: then `work` is cancelled (and waited for), `on_stop` runs, and the result
    is `Stopped` with the first signal's number. The handlers stay in place until the end,
    `on_stop` included (see the module's text for repeated signals); `on_stop` raising
    raises here, after the handlers are restored.

    A work that has ended wins over a signal that came at the same time: it has nothing
    left to stop."""
    loop = asyncio.get_running_loop()
    stops = _Stops(loop)
    handled = _handle(loop, signals, stops.on_signal)
    task = asyncio.create_task(work, name=name)
    try:
        try:
            either: set[asyncio.Future[Any]] = {task, stops.first}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # Ctrl-C where it could not be handled (asyncio.run)
            await cancel_and_wait((task,))
            if on_stop is not None:
                await stops.leave(on_stop, f"{name}-stopping")
            raise
        if task.done():
            return task.result()
        await cancel_and_wait((task,))
        if on_stop is not None:
            await stops.leave(on_stop, f"{name}-stopping")
        return Stopped(stops.first.result())
    finally:
        _restore(loop, handled)
        await cancel_and_wait(t for t in (task, stops.leaving) if t is not None and not t.done())


async def _run(action: Callable[[], Awaitable[None]]) -> None:
    await action()


__all__ = ["STOP_SIGNALS", "Stopped", "run_until_stopped"]
