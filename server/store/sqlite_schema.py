"""The `sqlite:` store's tables and their version: what a database must hold, and how a file
is checked and brought up to it when the store opens it.

The database carries the version of its tables in `PRAGMA user_version` (`SCHEMA_VERSION`):
a new file is stamped with it; an older file is brought up to it in place, in one
transaction: a file of version 0 (made before the stamp existed) gets any table it lacks, a
file of version 1 its tournaments' `finished` and `settled` columns (filled from the stored
records) and their indexes, a file of version 2 or before its moves copied into the table of
version 3 (`rebuild_moves`); and a file of a higher version (a newer solrace's tables) is
refused at open, `NewerSchemaError`, before anything in it is changed. So is a damaged file
(`DamagedDatabaseError`: SQLite's quick check of its pages at open finds a problem).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from solrace.server.store.base import StoreError
from solrace.server.store.sqlite_competition import (
    COMPETITION_SCHEMA,
    TOURNAMENT_INDEXES,
    add_tournament_columns,
)
from solrace.server.store.sqlite_tx import transaction

log = logging.getLogger("solrace.server.store")

#: The version of the tables (`SCHEMA`, `MOVES` and `COMPETITION_SCHEMA`) kept in the database's
#: `PRAGMA user_version`. A change to them that an older solrace could not use raises it
#: (2: the tournaments' `finished` and `settled` columns; 3: `moves` is its primary key's
#: B-tree alone, `MOVES`).
SCHEMA_VERSION = 3

#: The moves, one B-tree in key order (no rowid). A move's race and seq are checked by the
#: moves' writer (`sqlite_moves.py`): with a foreign key on the race and a unique index on the
#: seq, as up to version 2, a move's insert cost about twice as much (`bench/moves_table.py`).
MOVES = """
CREATE TABLE IF NOT EXISTS moves (
    race_id TEXT NOT NULL,
    player_id TEXT NOT NULL,
    ply INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    move TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (race_id, player_id, ply)
) WITHOUT ROWID;
"""

#: `moves` as versions 0 to 2 made it (`rebuild_moves` copies it into `MOVES`).
MOVES_OF_VERSION_2 = """
CREATE TABLE moves (
    race_id TEXT NOT NULL REFERENCES races (race_id),
    player_id TEXT NOT NULL,
    ply INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    move TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (race_id, player_id, ply),
    UNIQUE (race_id, player_id, seq)
)
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    created_at_ms INTEGER NOT NULL
);
-- Names are owned case-blind beyond ASCII (COLLATE NOCASE folds ASCII only): the key is
-- Python's str.casefold() of the name, as in the other stores.
CREATE TABLE IF NOT EXISTS player_names (
    name_key TEXT PRIMARY KEY,
    player_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS races (
    race_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS races_status ON races (status);
"""


class NewerSchemaError(StoreError):
    """The database's tables are of a later version than this solrace knows (its
    `user_version` is above `SCHEMA_VERSION`); nothing in it was changed."""

    def __init__(self, path: Path, found: int) -> None:
        self.path = path
        self.found = found
        super().__init__(
            f"the SQLite database {path} has schema version {found}, this version knows up to "
            f"{SCHEMA_VERSION}: written by a newer solrace, or damaged: start the version that "
            "wrote it, or restore a backup"
        )


class DamagedDatabaseError(StoreError):
    """SQLite's quick check of the database found a problem in it (a page damaged, a link
    between pages broken); nothing in it was changed."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"the SQLite database {path} is damaged ({problem}): restore a backup, or save "
            f"what is left of it (sqlite3 {path} .recover | sqlite3 NEW-FILE)"
        )


def check_intact(db: sqlite3.Connection, path: Path) -> None:
    """`DamagedDatabaseError` with the first problem SQLite's quick check finds in the file
    (`PRAGMA quick_check`: every page and the links between them, not whether the indexes
    match their tables). It reads the whole file once: 0.7 s for 410 MiB, cached."""
    (first,) = db.execute("PRAGMA quick_check(1)").fetchone()
    if first != "ok":
        problem = " ".join(str(first).split()).removeprefix("*** in database main *** ")
        raise DamagedDatabaseError(path, problem)


def schema_version(db: sqlite3.Connection) -> int:
    (version,) = db.execute("PRAGMA user_version").fetchone()
    return int(version)


def create_tables(db: sqlite3.Connection, path: Path) -> None:
    """Bring a database of an older version (0: new, or made before the version was kept)
    to `SCHEMA_VERSION` in one transaction: create the tables it lacks, give the players of a
    file made before `player_names` existed their keys, give its tournaments the columns
    their indexes need (`add_tournament_columns`), stamp the version. The version is
    read again under the write lock: another process may have stamped it meanwhile (ours:
    nothing to do; a higher one: `NewerSchemaError`, nothing written)."""

    def create() -> None:
        found = schema_version(db)
        if found == SCHEMA_VERSION:
            return
        if not 0 <= found < SCHEMA_VERSION:
            raise NewerSchemaError(path, found)
        began = time.monotonic()
        upgrading = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone()
        if upgrading:  # not a new file: the upgrade may take a while; say so first
            log.info(
                "upgrading %s from schema version %d to %d (once; a large database takes "
                "a while, in one transaction: a stop meanwhile leaves it as it was)",
                path,
                found,
                SCHEMA_VERSION,
            )
        rebuild_moves(db)
        for statement in _statements(SCHEMA + MOVES + COMPETITION_SCHEMA):
            db.execute(statement)
        db.executemany(
            "INSERT OR IGNORE INTO player_names (name_key, player_id) VALUES (?, ?)",
            [(n.casefold(), p) for p, n in db.execute("SELECT player_id, name FROM players")],
        )
        add_tournament_columns(db)
        for statement in _statements(TOURNAMENT_INDEXES):
            db.execute(statement)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        if upgrading:
            log.info("upgraded %s in %.1f s", path, time.monotonic() - began)

    transaction(db, create)


def rebuild_moves(db: sqlite3.Connection) -> None:
    """Copy a `moves` table of version 2 or before (a rowid, a foreign key, a unique seq) into
    one of `MOVES`, inside the upgrade's transaction; nothing if there is none."""
    (old,) = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'moves'"
    ).fetchone()
    if not old:
        return
    db.execute("ALTER TABLE moves RENAME TO moves_before_3")
    for statement in _statements(MOVES):
        db.execute(statement)
    columns = "race_id, player_id, ply, seq, move, at_ms"
    db.execute(f"INSERT INTO moves ({columns}) SELECT {columns} FROM moves_before_3")
    db.execute("DROP TABLE moves_before_3")


def _statements(script: str) -> list[str]:
    """The statements of a script of `CREATE ... ;` (one `execute` each: `executescript`
    would commit the transaction it runs in)."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


__all__ = [
    "MOVES",
    "MOVES_OF_VERSION_2",
    "SCHEMA",
    "SCHEMA_VERSION",
    "DamagedDatabaseError",
    "NewerSchemaError",
    "check_intact",
    "create_tables",
    "schema_version",
]
