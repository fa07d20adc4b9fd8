"""`run_until_stopped`, in this process: signals sent to ourselves with `os.kill` (delivered
before it returns), handled by the loop in the order sent. SIGUSR1 and SIGUSR2 stand for the
stop signals where a mistake must not stop the test run; SIGINT and SIGTERM are sent only
while `run_until_stopped` handles them.

The commands' own stops (a real child process, a real server) are in test_plain.py,
test_bot_cli.py and test_tournament_play.py."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from solrace.client.stopping import STOP_SIGNALS, Stopped, run_until_stopped


@pytest.fixture(autouse=True)
def stop_signals_as_in_a_terminal() -> Iterator[None]:
    """The stop signals as a command run from a terminal finds them: a test run started in
    the background (SIGINT ignored) or under nohup (SIGHUP ignored) would otherwise test the
    ignored-signal rule instead (a second Ctrl-C never came: the test hung)."""
    before = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, signal.SIG_DFL),
        signal.SIGHUP: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    }
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@pytest.fixture
def ignoring_usr2() -> Iterator[None]:
    before = signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGUSR2, before)


async def endless_work(started: asyncio.Event, steps: list[str] | None = None) -> int:
    """A command's work: says it has started, then runs until cancelled (noted in `steps`)."""
    started.set()
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        if steps is not None:
            steps.append("work cancelled")
        raise
    return 0


def test_the_stop_signals_are_ctrl_c_a_kill_and_a_hangup() -> None:
    assert STOP_SIGNALS == (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    assert [Stopped(s).status for s in STOP_SIGNALS] == [130, 143, 129]


async def test_a_work_that_ends_gives_its_result_and_the_handlers_back() -> None:
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    stopped: list[str] = []

    async def work() -> int:
        return 7

    async def on_stop() -> None:
        stopped.append("on_stop")

    assert await run_until_stopped(work(), on_stop=on_stop) == 7
    assert stopped == []
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before


async def test_a_failing_work_raises_its_failure() -> None:
    async def work() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await run_until_stopped(work(), signals=(signal.SIGUSR1,))
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


async def test_a_signal_cancels_the_work_then_runs_on_stop() -> None:
    steps: list[str] = []
    started = asyncio.Event()

    async def on_stop() -> None:
        steps.append("on_stop")

    running = asyncio.create_task(
        run_until_stopped(endless_work(started, steps), on_stop=on_stop, signals=(signal.SIGUSR1,))
    )
    await asyncio.wait_for(started.wait(), 10)
    os.kill(os.getpid(), signal.SIGUSR1)
    assert await asyncio.wait_for(running, 10) == Stopped(signal.SIGUSR1)
    assert steps == ["work cancelled", "on_stop"]
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


@pytest.mark.usefixtures("ignoring_usr2")
async def test_a_signal_ignored_at_the_start_stays_ignored() -> None:
    """`nohup` (SIGHUP ignored): a closed terminal does not stop the command."""
    started = asyncio.Event()

    running = asyncio.create_task(
        run_until_stopped(endless_work(started), signals=(signal.SIGUSR2, signal.SIGUSR1))
    )
    await asyncio.wait_for(started.wait(), 10)
    os.kill(os.getpid(), signal.SIGUSR2)  # dropped by the kernel: nobody handles it
    os.kill(os.getpid(), signal.SIGUSR1)
    assert await asyncio.wait_for(running, 10) == Stopped(signal.SIGUSR1)
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN


async def test_a_second_ctrl_c_gives_up_the_leaving() -> None:
    steps: list[str] = []
    started = asyncio.Event()

    async def on_stop() -> None:
        steps.append("leaving")
        os.kill(os.getpid(), signal.SIGINT)  # handled here: run_until_stopped's handler
        try:
            await asyncio.Event().wait()  # a server that does not answer
        except asyncio.CancelledError:
            steps.append("given up")
            raise

    before = signal.getsignal(signal.SIGINT)
    running = asyncio.create_task(run_until_stopped(endless_work(started), on_stop=on_stop))
    await asyncio.wait_for(started.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(running, 10) == Stopped(signal.SIGTERM)
    assert steps == ["leaving", "given up"]
    assert signal.getsignal(signal.SIGINT) == before


async def test_a_repeated_hangup_or_kill_does_not_cut_the_leaving_short() -> None:
    """A closed terminal may send two hangups (the kernel's and the shell's)."""
    steps: list[str] = []
    started = asyncio.Event()
    after_them = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def on_stop() -> None:
        steps.append("leaving")
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGUSR1)  # handled after the two before it
        await asyncio.wait_for(after_them.wait(), 10)
        steps.append("left")

    loop.add_signal_handler(signal.SIGUSR1, after_them.set)
    try:
        running = asyncio.create_task(run_until_stopped(endless_work(started), on_stop=on_stop))
        await asyncio.wait_for(started.wait(), 10)
        os.kill(os.getpid(), signal.SIGHUP)
        assert await asyncio.wait_for(running, 10) == Stopped(signal.SIGHUP)
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
    assert steps == ["leaving", "left"]
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL


async def test_cancelled_instead_it_stops_the_same_way_and_passes_the_cancellation_on() -> None:
    """Ctrl-C where the signal cannot be handled reaches the command as `asyncio.run`
    cancelling its task."""
    steps: list[str] = []
    started = asyncio.Event()

    async def on_stop() -> None:
        steps.append("on_stop")

    running = asyncio.create_task(
        run_until_stopped(endless_work(started, steps), on_stop=on_stop, signals=())
    )
    await asyncio.wait_for(started.wait(), 10)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, 10)
    assert steps == ["work cancelled", "on_stop"]
