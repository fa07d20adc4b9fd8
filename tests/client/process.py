"""A `solrace` command in a child process, read line by line with timeouts (no bare sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from .conftest import child_env


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child before it runs: SIGINT handled as in a terminal. A test run started in
    the background by a non-interactive shell (CI) ignores SIGINT, and a child would inherit
    that, so a test sending it Ctrl-C would wait for nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Child:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []

    @classmethod
    async def start(cls, tmp_path: Path, *args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "solrace.cli",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=child_env(tmp_path),
            preexec_fn=_ctrl_c_as_in_a_terminal,
        )
        return cls(proc)

    async def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

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
        """Close stdin, read the rest, and wait for the exit code."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout_s)
        self.lines += rest.decode().splitlines()
        return await asyncio.wait_for(self.proc.wait(), timeout_s)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)
