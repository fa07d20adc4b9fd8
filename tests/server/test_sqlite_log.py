"""The SQLite store's write-ahead log under steady moves (server/store/sqlite.py): a log the
checkpoint cannot copy to its end while moves keep coming is copied with the moves' writer
held, so it starts over and is cut back instead of growing for ever. Both of the store's
connections (the moves' writer and the worker's) take the same settings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest

from solrace.server.protocol.ids import RaceId
from solrace.server.store import SqliteStore, sqlite
from tests.server.test_store_contract import move, race
from tests.waiting import eventually

PAGE = 4096


def log_bytes(database: Path) -> int:
    log = database.with_name(database.name + "-wal")
    return log.stat().st_size if log.exists() else 0


async def test_a_long_log_starts_over_while_moves_keep_coming(tmp_path: Path) -> None:
    database = tmp_path / "moves.sqlite3"
    store = SqliteStore(database)
    store.log_restart_pages = 64
    store.log_kept_bytes = 128 * PAGE
    await store.open()
    assert await store.save_race_if(race(), None)
    stored = 0
    last: int | None = None  # the mover stops after this many moves

    async def keep_moving() -> None:
        nonlocal stored
        while last is None or stored < last:
            await store.append_move(move(stored))
            stored += 1

    mover = asyncio.create_task(keep_moving())
    try:
        await eventually(lambda: log_bytes(database) > 8 * store.log_kept_bytes, what="a long log")
        started_over = restarts(database)
        await store.checkpoint()  # moves keep coming: PASSIVE alone never reaches the end
        last = stored + 20
        await asyncio.wait_for(mover, 10)
    finally:
        mover.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await mover
    assert restarts(database) > started_over
    # Cut back to its limit, then 20 moves of a few pages each.
    assert log_bytes(database) <= store.log_kept_bytes + 20 * 8 * PAGE
    moves = await store.get_moves(RaceId("r1"))
    assert [m.ply for m in moves] == list(range(stored))  # nothing lost while held
    await store.close()


async def test_a_checkpoint_that_fails_is_logged_and_the_next_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Any failure of one checkpoint (made to fail here: nothing real fails on demand but a
    store error) is logged and the checkpoints go on: one that was not a store error ended
    them, and the log grew for ever."""
    monkeypatch.setattr(sqlite, "CHECKPOINT_EVERY_S", 0.01)
    store = SqliteStore(tmp_path / "moves.sqlite3")
    checkpoint = store.checkpoint
    calls = 0
    again = asyncio.Event()

    async def fails_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a bug in one checkpoint")
        await checkpoint()
        again.set()

    monkeypatch.setattr(store, "checkpoint", fails_once)
    await store.open()
    try:
        with caplog.at_level(logging.ERROR, logger="solrace.server.store"):
            await asyncio.wait_for(again.wait(), 10)
    finally:
        await store.close()
    assert [r.getMessage() for r in caplog.records] == ["checkpointing the SQLite log failed"]


def restarts(database: Path) -> int:
    """The log's checkpoint sequence number (its header's bytes 12-15): one more each time
    the log starts over."""
    header = database.with_name(database.name + "-wal").read_bytes()[:16]
    return int.from_bytes(header[12:16], "big")


@pytest.mark.parametrize("durable", [False, True])
async def test_both_connections_take_the_same_settings(tmp_path: Path, durable: bool) -> None:
    """SQLite keeps synchronous, journal_size_limit and foreign_keys per connection: the
    moves' writer commits as durably, and cuts the log back as far, as the worker does."""

    def settings(db: sqlite3.Connection) -> tuple[int, int, int]:
        names = ("synchronous", "journal_size_limit", "foreign_keys")
        first, second, third = (db.execute(f"PRAGMA {name}").fetchone()[0] for name in names)
        return int(first), int(second), int(third)

    store = SqliteStore(tmp_path / "settings.sqlite3", durable=durable)
    store.log_kept_bytes = 96 * PAGE
    await store.open()
    try:
        assert store._writer is not None
        writer = settings(store._writer)
        worker = await store._run(settings)
    finally:
        await store.close()
    full, normal = 2, 1  # PRAGMA synchronous's numbers
    assert writer == worker == (full if durable else normal, 96 * PAGE, 1)
