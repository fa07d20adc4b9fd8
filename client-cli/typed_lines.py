"""The command lines a line mode reads (`solrace play --plain`, a tournament's `--plain`).

Standard input is read by a thread (`stdin_lines`). While a mode runs, its input is read all
the while (`TypedLines.reading`): each command line is queued as it comes and taken in the order
typed (`next_line`), so that a command that waits for something (an open race's start, the
next tournament race) can look at the lines typed meanwhile (`waiting`, woken by `more`) and
let one of them end its wait.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from solrace.tasks import cancel_and_wait


async def stdin_lines() -> AsyncIterator[str]:
    """Lines of standard input without blocking the event loop.

    A daemon thread reads them: a program that ends on its own (a tournament that finishes)
    must not wait for one more line of input before it can exit."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def read() -> None:
        while True:
            line = sys.stdin.readline()
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
            except RuntimeError:  # the loop is closed: the program is ending
                return
            if not line:
                return

    threading.Thread(target=read, name="solrace-stdin", daemon=True).start()
    while True:
        got = await queue.get()
        if got is None:
            return
        yield got


@dataclass(slots=True, eq=False)
class Typed:
    """A command line read and not run yet."""

    text: str
    #: Said to wait for the start (plain mode: typed while another command waited for it).
    said: bool = False


class TypedLines:
    """The command lines read and not run yet, and news of each new one (or of the end)."""

    def __init__(self) -> None:
        #: Oldest first; a command that waits may take one out of its turn.
        self.waiting: deque[Typed] = deque()
        #: Set when a line is read or the input ends: cleared before looking at `waiting`, it
        #: wakes a wait for what is typed next.
        self.more = asyncio.Event()
        self.ended = False

    @asynccontextmanager
    async def reading(self, lines: AsyncIterator[str], name: str) -> AsyncIterator[None]:
        """Read `lines` into the queue while the block runs (the reading task is `name`)."""
        reader = asyncio.create_task(self._read(lines), name=name)
        try:
            yield
        finally:
            await cancel_and_wait([reader])

    async def _read(self, lines: AsyncIterator[str]) -> None:
        """Every command line of `lines` (not blank lines, nor `#` comments), queued as it
        comes; then the end of the input."""
        try:
            async for raw in lines:
                line = raw.strip()
                if line and not line.startswith("#"):
                    self.waiting.append(Typed(line))
                    self.more.set()
        finally:
            self.ended = True
            self.more.set()

    async def wait_more(self, other: asyncio.Future[Any]) -> None:
        """Wait for `more` (a line typed, or the end of the input) or for `other` to be done,
        whichever comes first; `more` is the caller's to clear before it looks."""
        more = asyncio.ensure_future(self.more.wait())
        try:
            await asyncio.wait({other, more}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            more.cancel()

    async def next_line(self) -> str | None:
        """The next command line in the order typed; None at the end of the input."""
        while not self.waiting:
            if self.ended:
                return None
            self.more.clear()
            await self.more.wait()
        return self.waiting.popleft().text
