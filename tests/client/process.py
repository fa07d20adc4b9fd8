"""A `solrace` command in a child process, read line by line with timeouts (no bare sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import signal
import sys
import termios
from pathlib import Path

from .conftest import child_env


def _signals_as_in_a_terminal() -> None:
    """In the child before it runs: SIGINT and SIGHUP handled as in a terminal. A test run
    started in the background by a non-interactive shell (CI) ignores SIGINT, and one started
    under `nohup` ignores SIGHUP; a child would inherit that, so a test sending it Ctrl-C or a
    hangup would wait for nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _as_under_nohup() -> None:
    """In the child before it runs: as `_signals_as_in_a_terminal`, then SIGHUP ignored, as
    `nohup` starts a program."""
    _signals_as_in_a_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


class Child:
    def __init__(self, proc: asyncio.subprocess.Process, terminal: int | None = None) -> None:
        self.proc = proc
        self.lines: list[str] = []
        #: With `start(..., terminal=True)`: our end of the terminal the child reads.
        self.terminal = terminal

    @classmethod
    async def start(
        cls, tmp_path: Path, *args: str, terminal: bool = False, nohup: bool = False
    ) -> Child:
        """`solrace ARGS` in a child; with `terminal`, its input is a terminal (a person
        typing, `isatty()`: no echo), else a pipe (a script); with `nohup`, it starts with
        SIGHUP ignored."""
        ours: int | None = None
        stdin: int = asyncio.subprocess.PIPE
        if terminal:
            ours, stdin = pty.openpty()
            attributes = termios.tcgetattr(stdin)
            attributes[3] &= ~termios.ECHO  # what is typed is not written back
            termios.tcsetattr(stdin, termios.TCSANOW, attributes)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "solrace.cli",
                *args,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=child_env(tmp_path),
                preexec_fn=_as_under_nohup if nohup else _signals_as_in_a_terminal,
            )
        finally:
            if terminal:
                os.close(stdin)  # the child's end: it holds its own
        return cls(proc, ours)

    async def send(self, line: str) -> None:
        if self.terminal is not None:
            os.write(self.terminal, (line + "\n").encode())
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

    def _end_input(self) -> None:
        if self.terminal is not None:
            with contextlib.suppress(OSError):
                os.write(self.terminal, b"\x04")  # Ctrl-D at a line's start: the end
        elif self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def expect(self, needle: str, timeout_s: float = 30.0) -> str:
        """Read lines until one contains `needle`; returns it."""
        assert self.proc.stdout is not None

        async def scan() -> str:
            assert self.proc.stdout is not None
            while True:
                raw = await self.proc.stdout.readline()
                if not raw:
                    raise AssertionError(f"{needle!r} never came; got:\n" + "\n".join(self.lines))
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                if needle in line:
                    return line

        try:
            return await asyncio.wait_for(scan(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"timed out waiting for {needle!r}; got:\n" + "\n".join(self.lines)
            ) from None

    async def finish(self, timeout_s: float = 30.0) -> int:
        """End the input, read the rest, and wait for the exit code."""
        self._end_input()
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout_s)
        self.lines += rest.decode().splitlines()
        return await asyncio.wait_for(self.proc.wait(), timeout_s)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        if self.terminal is not None:
            os.close(self.terminal)
            self.terminal = None

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


class FullTerminal:
    """A `solrace` command whose input and output are one terminal (a pseudo-terminal of
    `columns` x `lines`), as a person at a terminal runs it: the full-screen views run, not
    their text forms. What it writes is read as bytes (the screen's escape codes and all)."""

    def __init__(self, proc: asyncio.subprocess.Process, ours: int) -> None:
        self.proc = proc
        self.ours = ours
        self.output = b""
        self._more = asyncio.Event()
        self._ended = False
        asyncio.get_running_loop().add_reader(ours, self._read)

    @classmethod
    async def start(
        cls, tmp_path: Path, *args: str, columns: int = 100, lines: int = 30
    ) -> FullTerminal:
        ours, theirs = pty.openpty()
        os.set_blocking(ours, False)
        env = child_env(tmp_path)
        env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(lines))
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "solrace.cli",
                *args,
                stdin=theirs,
                stdout=theirs,
                stderr=theirs,
                env=env,
                start_new_session=True,  # the terminal is its own, as a person's would be
            )
        finally:
            os.close(theirs)  # the child holds its own
        return cls(proc, ours)

    def _read(self) -> None:
        try:
            data = os.read(self.ours, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the child has closed the terminal
            data = b""
        if not data:
            self._ended = True
            asyncio.get_running_loop().remove_reader(self.ours)
        self.output += data
        self._more.set()

    async def expect(self, needle: bytes, timeout_s: float = 30.0) -> None:
        """Wait until `needle` has been written (or fail, showing the output's end)."""

        async def scan() -> None:
            while needle not in self.output:
                if self._ended:
                    raise AssertionError(f"{needle!r} never came; got: {self.output[-500:]!r}")
                self._more.clear()
                await self._more.wait()

        try:
            await asyncio.wait_for(scan(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"timed out waiting for {needle!r}; got: {self.output[-500:]!r}"
            ) from None

    def type(self, keys: bytes) -> None:
        os.write(self.ours, keys)

    async def finish(self, timeout_s: float = 30.0) -> int:
        """Wait for the exit code, then for the rest of what was written."""
        status = await asyncio.wait_for(self.proc.wait(), timeout_s)
        with contextlib.suppress(AssertionError):
            await self.expect(b"\0never\0", 2.0)  # up to the end of the output
        return status

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        if self.ours >= 0:
            with contextlib.suppress(ValueError):
                asyncio.get_running_loop().remove_reader(self.ours)
            os.close(self.ours)
            self.ours = -1
