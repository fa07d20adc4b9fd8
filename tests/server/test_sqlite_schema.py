"""The version of the SQLite store's tables (server/store/sqlite_schema.py), kept in the database's
`PRAGMA user_version`: a new file is stamped, a file made before the stamp existed (version
0, the tables already there) opens and is stamped, and a file of a later version (a newer
solrace's tables) is refused at open with nothing in it changed. Real files on disk."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.store import NameTakenError, SqliteStore
from solrace.server.store.sqlite_competition import COMPETITION_SCHEMA
from solrace.server.store.sqlite_schema import SCHEMA, SCHEMA_VERSION, NewerSchemaError
from tests.server.test_store_contract import race


def user_version(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
    return int(version)


def tables(database: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in rows}


def file_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_a_new_database_is_stamped_with_the_schema_version(tmp_path: Path) -> None:
    database = tmp_path / "new.sqlite3"
    store = SqliteStore(database)
    await store.open()
    await store.close()
    assert SCHEMA_VERSION >= 1
    assert user_version(database) == SCHEMA_VERSION
    assert {"players", "player_names", "races", "moves", "ratings", "tournaments"} <= tables(
        database
    )


async def test_a_database_made_before_the_version_was_kept_opens_and_is_stamped(
    tmp_path: Path,
) -> None:
    """As solrace wrote it before: the tables, user_version 0; here from before player_names
    existed too, with a player and a race in it."""
    database = tmp_path / "old.sqlite3"
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA + COMPETITION_SCHEMA)
        db.execute("DROP TABLE player_names")
        db.execute("INSERT INTO players VALUES ('p1', 'Émile', 5)")
        db.execute(
            "INSERT INTO races (race_id, status, record) VALUES (?, ?, ?)",
            ("r1", "open", race().model_dump_json()),
        )
    assert user_version(database) == 0

    store = SqliteStore(database)
    await store.open()
    try:
        assert await store.get_race(RaceId("r1")) == race()
        player = await store.get_player(PlayerId("p1"))
        assert player is not None and player.name == "Émile"
        # The name got its case-blind key (the table's NOCASE folds ASCII only).
        with pytest.raises(NameTakenError):
            await store.create_player(PlayerId("p2"), "éMILE", 6)
    finally:
        await store.close()
    assert user_version(database) == SCHEMA_VERSION


async def test_a_database_of_a_later_schema_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    """A newer solrace's file: another log mode, a table gone, its version above ours."""
    database = tmp_path / "newer.sqlite3"
    store = SqliteStore(database)
    await store.open()
    assert await store.save_race_if(race(), None)
    await store.close()
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("DROP TABLE rating_due")
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = database.read_bytes()
    files = file_names(tmp_path)

    later = SqliteStore(database)
    with pytest.raises(NewerSchemaError) as refused:
        await later.open()
    assert str(refused.value) == (
        f"the SQLite database {database} has schema version {SCHEMA_VERSION + 1}, this "
        f"version knows up to {SCHEMA_VERSION}: written by a newer solrace, or damaged: start "
        "the version that wrote it, or restore a backup"
    )
    assert database.read_bytes() == before
    assert file_names(tmp_path) == files  # the lock file is the first store's
    assert "rating_due" not in tables(database)

    # Put back to this version's (the version that wrote it, a backup): it opens again.
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        db.execute("CREATE TABLE rating_due (race_id TEXT PRIMARY KEY)")
    await later.open()
    try:
        assert await later.get_race(RaceId("r1")) == race()
    finally:
        await later.close()
