"""The `sqlite:` store's moves' writer (server/store/sqlite_moves.py) on a database another
connection keeps locked: it waits for the lock off the event loop. Real SQLite files on disk;
the lock is another connection's, as a backup tool or a second process would hold it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from solrace.server.protocol.ids import RaceId
from solrace.server.store import SqliteStore
from tests.server.conftest import Holder
from tests.server.test_store_contract import move, race
from tests.waiting import eventually


async def test_a_locked_database_holds_the_moves_not_the_event_loop(
    database: Path, holder: Holder
) -> None:
    """The moves' writer runs on the event loop's thread: it waits `LOOP_BUSY_TIMEOUT_S` for a
    lock, then hands its batch to a thread of its own, which waits the store's busy timeout
    (30 s here). The loop goes on meanwhile (it stood still for the whole busy timeout);
    moves that come meanwhile wait behind the batch, and all are stored in order once the
    lock goes. The lock is let go by another thread once the loop has turned, or after 10 s:
    a loop that stood still would only turn after that. The batch does not wait for the
    worker thread either, busy here until the end (reads and checkpoints queue there)."""
    store = SqliteStore(database, busy_timeout_s=30)
    await store.open()
    worker_free = threading.Event()
    try:
        assert await store.save_race_if(race(), None)
        holder.lock()
        turned = threading.Event()

        def release_once_the_loop_turns() -> bool:
            seen = turned.wait(10)
            holder.release()
            return seen

        busy_worker = asyncio.create_task(store._run(lambda _: worker_free.wait(30)))
        first = asyncio.create_task(store.append_move(move(0)))
        releasing = asyncio.get_running_loop().run_in_executor(None, release_once_the_loop_turns)
        await eventually(lambda: store.moves_wait_for_lock, what="the batch handed over")
        second = asyncio.create_task(store.append_move(move(1)))
        turned.set()
        assert await releasing, "the loop stood still while the lock was held"
        await asyncio.wait_for(asyncio.gather(first, second), 30)
        assert not busy_worker.done()
        worker_free.set()
        assert await busy_worker
        assert await store.get_moves(RaceId("r1")) == [move(0), move(1)]
        assert not store.moves_wait_for_lock
    finally:
        worker_free.set()
        await store.close()
