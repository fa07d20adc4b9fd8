"""The `sqlite:` store's checks of each move (server/store/sqlite_moves.py): made in memory on
each racer's tally (its next ply, its seqs), read from the table the first time the racer
moves, given back when a batch is not stored, dropped when the race is over; and `moves`, its
primary key's B-tree alone from schema version 3 on, files of version 2 copied into it. Real
SQLite files on disk; a connection of the test's own writes behind the store's back."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import MoveRecord, RaceStatus
from solrace.server.store import PlyConflictError, SqliteStore, StoreError, StoreUnavailableError
from solrace.server.store.sqlite_schema import MOVES_OF_VERSION_2, SCHEMA_VERSION
from tests.server.conftest import Holder
from tests.server.test_store_contract import move, race


async def opened(database: Path, busy_timeout_s: float | None = None) -> SqliteStore:
    store = SqliteStore(database, busy_timeout_s=busy_timeout_s)
    await store.open()
    return store


def plies(moves: list[MoveRecord]) -> list[tuple[str, int, int]]:
    return [(m.player_id, m.ply, m.seq) for m in moves]


@pytest.mark.parametrize(
    "bad",
    [move(3, seq=50), move(1, seq=9), move(2, seq=1)],
    ids=["gap", "stale-ply", "reused-seq"],
)
async def test_a_racer_of_a_race_over_is_checked_on_its_stored_moves(
    database: Path, bad: MoveRecord
) -> None:
    """Stored finished, the race's tallies are dropped: a move that comes all the same is
    checked on what the table holds of its racer, as after a restart."""
    store = await opened(database)
    try:
        running = race(status=RaceStatus.RUNNING)
        assert await store.save_race_if(running, None)
        await store.append_move(move(0))
        await store.append_move(move(1))
        assert set(store._tallies) == {"r1"}
        assert await store.save_race_if(race(status=RaceStatus.FINISHED), running)
        assert store._tallies == {}
        with pytest.raises(PlyConflictError):
            await store.append_move(bad)
        await store.append_move(move(2))
        assert [m.ply for m in await store.get_moves(RaceId("r1"))] == [0, 1, 2]
    finally:
        await store.close()


async def test_a_reused_seq_is_refused_after_a_restart(database: Path) -> None:
    store = await opened(database)
    assert await store.save_race_if(race(), None)
    await store.append_move(move(0, seq=7))
    await store.close()
    store = await opened(database)
    try:
        with pytest.raises(PlyConflictError, match="seq 7 is already stored"):
            await store.append_move(move(1, seq=7))
        await store.append_move(move(1, seq=8))
        assert plies(await store.get_moves(RaceId("r1"))) == [("p1", 0, 7), ("p1", 1, 8)]
    finally:
        await store.close()


async def test_a_batch_the_lock_kept_out_leaves_its_plies_free(
    database: Path, holder: Holder
) -> None:
    """A batch not stored (the database locked past the busy timeout) gives its plies and
    seqs back: the same moves are stored once the lock goes."""
    store = await opened(database, busy_timeout_s=0.05)
    try:
        assert await store.save_race_if(race(), None)
        await store.append_move(move(0))
        holder.lock()
        try:
            with pytest.raises(StoreUnavailableError):
                await store.append_move(move(1))
        finally:
            holder.release()
        await store.append_move(move(1))
        await store.append_move(move(2))
        assert [m.ply for m in await store.get_moves(RaceId("r1"))] == [0, 1, 2]
    finally:
        await store.close()


async def test_a_ply_the_table_holds_already_is_refused_and_the_tally_read_again(
    database: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A move written behind the store's back (the lock keeps other stores out, not a
    `sqlite3` session): the table's key refuses the ply the tally allowed; nothing of the
    batch is stored, the error is logged, and the racer's next move is checked on the table."""
    store = await opened(database)
    try:
        assert await store.save_race_if(race(), None)
        await store.append_move(move(0))
        with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
            db.execute(
                "INSERT INTO moves VALUES (?, ?, ?, ?, ?, ?)", ("r1", "p1", 1, 2, "deal", 10_001)
            )
        with (
            caplog.at_level(logging.ERROR, logger="solrace.server.store"),
            pytest.raises(StoreError, match="UNIQUE constraint failed"),
        ):
            await store.append_move(move(1, seq=5))
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        with pytest.raises(PlyConflictError, match="expected ply 2, got 1"):
            await store.append_move(move(1, seq=5))
        await store.append_move(move(2, seq=6))
        assert plies(await store.get_moves(RaceId("r1"))) == [
            ("p1", 0, 1),
            ("p1", 1, 2),
            ("p1", 2, 6),
        ]
    finally:
        await store.close()


async def test_a_version_2_file_has_its_moves_copied_into_the_new_table(
    database: Path,
) -> None:
    """`moves` of version 2 (a rowid, a foreign key, a unique seq): copied into the table of
    version 3, every move kept, and the store checks moves on them."""
    store = await opened(database)
    assert await store.save_race_if(race(), None)
    await store.close()
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
        db.execute("DROP TABLE moves")
        db.execute(MOVES_OF_VERSION_2)
        db.executemany(
            "INSERT INTO moves VALUES (?, ?, ?, ?, ?, ?)",
            [("r1", "p1", 0, 1, "deal", 10_000), ("r1", "p2", 0, 4, "t0f", 10_001)],
        )
        db.execute("PRAGMA user_version=2")
    store = await opened(database)
    try:
        assert plies(await store.get_moves(RaceId("r1"))) == [("p1", 0, 1), ("p2", 0, 4)]
        with pytest.raises(PlyConflictError):
            await store.append_move(move(1, seq=1))
        await store.append_move(move(1))
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(database)) as db:
        (definition,) = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'moves'"
        ).fetchone()
        (version,) = db.execute("PRAGMA user_version").fetchone()
        names = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "WITHOUT ROWID" in definition and "UNIQUE" not in definition
    assert version == SCHEMA_VERSION == 3
    assert "moves_before_3" not in names


async def test_a_store_closed_and_opened_again_reads_its_racers_again(database: Path) -> None:
    """Closed, the store lets go of the file: what it knew of the racers may be wrong by the
    time it opens it again (another store wrote it, or a backup was put back)."""
    store = await opened(database)
    try:
        assert await store.save_race_if(race(), None)
        await store.append_move(move(0))
        await store.close()
        other = await opened(database)
        await other.append_move(move(1))
        await other.close()
        await store.open()
        await store.append_move(move(2))
        await store.close()
        with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
            db.execute("DELETE FROM moves WHERE ply = 2")  # a copy from before it was put back
        await store.open()
        await store.append_move(move(2, seq=30))
        assert plies(await store.get_moves(RaceId("r1"))) == [
            ("p1", 0, 1),
            ("p1", 1, 2),
            ("p1", 2, 30),
        ]
    finally:
        await store.close()
