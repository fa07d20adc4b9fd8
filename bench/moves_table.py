"""The SQLite moves table alone: CPU time a move to insert and commit, in batches (one batch a
commit, as the node's group commit does per turn of its loop), over 500 races of 2 racers,
with the `moves` table of schema version 2 (a rowid, the primary key and a unique seq index,
a foreign key, the ply checked by a subquery in the insert) against version 3's (the primary
key's B-tree alone, `server/store/sqlite_schema.py`; the node checks the rest in memory).

Run: python bench/moves_table.py [--moves 40000] [--batches 5 20 100]

The file is in WAL mode with synchronous=NORMAL, like the store's; a passive checkpoint runs
every 10,000 moves, in the measured time.
"""

from __future__ import annotations

import argparse
import random
import secrets
import sqlite3
import tempfile
import time
from pathlib import Path

from solrace.server.store.sqlite_schema import MOVES, MOVES_OF_VERSION_2

RACES = "CREATE TABLE races (race_id TEXT PRIMARY KEY, status TEXT NOT NULL, record TEXT NOT NULL)"

INSERT_2 = """
INSERT INTO moves (race_id, player_id, ply, seq, move, at_ms)
SELECT ?1, ?2, ?3, ?4, ?5, ?6
WHERE (SELECT COALESCE(MAX(ply) + 1, 0) FROM moves WHERE race_id = ?1 AND player_id = ?2) = ?3
"""
INSERT_3 = "INSERT INTO moves (race_id, player_id, ply, seq, move, at_ms) VALUES (?, ?, ?, ?, ?, ?)"

TABLES = {"version 2": (MOVES_OF_VERSION_2, INSERT_2), "version 3": (MOVES, INSERT_3)}


def cost_a_move(folder: Path, table: str, moves: int, batch: int) -> float:
    """Microseconds of CPU a move, inserted and committed `batch` at a time."""
    schema, insert = TABLES[table]
    path = folder / f"{table.replace(' ', '')}-{batch}.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(RACES)
    db.execute(schema)
    races = [secrets.token_urlsafe(12) for _ in range(500)]
    racers = [(r, secrets.token_urlsafe(12)) for r in races for _ in range(2)]
    db.executemany("INSERT INTO races VALUES (?, 'running', '{}')", [(r,) for r in races])
    plies = dict.fromkeys(racers, 0)
    rng = random.Random(1)
    began = time.process_time()
    done = 0
    while done < moves:
        rows = []
        for _ in range(batch):
            racer = rng.choice(racers)
            ply = plies[racer]
            plies[racer] += 1
            rows.append((*racer, ply, ply + 1, "t3-t5:2", 1_700_000_000_000 + ply))
        db.execute("BEGIN IMMEDIATE")
        stored = db.executemany(insert, rows).rowcount
        db.execute("COMMIT")
        assert stored == batch
        done += batch
        if done % 10_000 < batch:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    spent = time.process_time() - began
    db.close()
    return 1e6 * spent / done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=40_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[5, 20, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print("moves a commit | version 2 us/move | version 3 us/move")
        for batch in args.batches:
            old, new = (cost_a_move(Path(folder), t, args.moves, batch) for t in TABLES)
            print(f"{batch:14} | {old:17.1f} | {new:17.1f}")


if __name__ == "__main__":
    main()
