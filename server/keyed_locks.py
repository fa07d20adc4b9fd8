"""One asyncio lock per key (a tournament's id), kept only while it is held or waited for.

A dict that made a lock for every key ever asked for grew without end: requests naming
tournaments that do not exist, each within its rate budget, left a lock behind every time
(the fuzz audit's 21,000 after a few minutes from one address)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class KeyedLocks:
    """`async with locks.hold(key)`: one holder per key at a time, the others wait in turn."""

    def __init__(self) -> None:
        #: key -> its lock and how many hold it or wait for it.
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        """How many keys are held or waited for now."""
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            _, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


__all__ = ["KeyedLocks"]
