"""`solrace serve` as a real subprocess (for kill -9 and SIGTERM), always cleaned up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

LISTENING = re.compile(r"listening on ws://[\d.]+:(\d+)")


class ServerProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.ready = asyncio.Event()
        self.port = 0
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, data_dir: Path, *extra: str, env: dict[str, str] | None = None
    ) -> ServerProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "solrace.server.serve_cli",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            "--secret",
            "test-secret-for-tokens",
            "--countdown-s",
            "0",
            "--min-time-limit-s",
            "1",
            *extra,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        server = cls(process)
        try:
            async with asyncio.timeout(30):
                await server.ready.wait()
        except TimeoutError:
            await server.kill()
            raise AssertionError("server did not start:\n" + "".join(server.lines)) from None
        return server

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            found = LISTENING.search(line)
            if found and not self.ready.is_set():
                self.port = int(found.group(1))
                self.ready.set()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def kill(self) -> None:
        """kill -9, then reap."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.wait(10)

    async def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return await self.wait(30)

    async def wait(self, within: float) -> int:
        async with asyncio.timeout(within):
            code = await self.process.wait()
            await self.reader
        return code
