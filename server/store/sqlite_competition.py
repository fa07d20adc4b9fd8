"""Ratings and tournaments for the `sqlite:` store (mixed into `SqliteStore`).

Each write is one `BEGIN IMMEDIATE` transaction on the store's one worker thread, so its
checks (rated once per race, ratings unchanged since read, tournament version) and its writes
cannot interleave with another writer, in this process or another one on the same file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from solrace.server.protocol.competition_records import (
    RECENT_RESULTS_KEPT,
    RatingOutcome,
    RatingRecord,
    RatingUpdate,
    RecentResult,
    TournamentRecord,
)
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.store.base import TournamentVersion, flags_of_stored_tournament
from solrace.server.store.sqlite_tx import transaction

T = TypeVar("T")

COMPETITION_SCHEMA = """
CREATE TABLE IF NOT EXISTS ratings (
    player_id TEXT NOT NULL,
    game TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (player_id, game)
);
CREATE INDEX IF NOT EXISTS ratings_game ON ratings (game);
CREATE TABLE IF NOT EXISTS rated_races (race_id TEXT PRIMARY KEY);
-- Finished rated races not rated yet (`rating_falls_due`): written with the finish.
CREATE TABLE IF NOT EXISTS rating_due (race_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS recent_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    player_id TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recent_results_player ON recent_results (player_id, id);
-- `finished`: the record's phase is finished; `settled`: the record is settled (1 or 0).
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    record TEXT NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0,
    settled INTEGER NOT NULL DEFAULT 0
);
"""

#: Made once `tournaments` has its `finished` and `settled` columns (`add_tournament_columns`):
#: the open tournaments and the finished ones are each read without a scan of the others.
TOURNAMENT_INDEXES = """
CREATE INDEX IF NOT EXISTS tournaments_open ON tournaments (settled) WHERE settled = 0;
CREATE INDEX IF NOT EXISTS tournaments_finished ON tournaments (finished) WHERE finished = 1;
"""


def add_tournament_columns(db: sqlite3.Connection) -> None:
    """Give a `tournaments` table made before `finished` and `settled` existed those columns,
    filled from each stored record, then make their indexes. Run inside the upgrade's
    transaction."""
    columns = {str(row[1]) for row in db.execute("PRAGMA table_info(tournaments)")}
    if "settled" not in columns:
        db.execute("ALTER TABLE tournaments ADD COLUMN finished INTEGER NOT NULL DEFAULT 0")
        db.execute("ALTER TABLE tournaments ADD COLUMN settled INTEGER NOT NULL DEFAULT 0")
        rows = db.execute("SELECT tournament_id, record FROM tournaments").fetchall()
        db.executemany(
            "UPDATE tournaments SET finished = ?, settled = ? WHERE tournament_id = ?",
            [(*map(int, flags_of_stored_tournament(str(text))), str(tid)) for tid, text in rows],
        )


def _apply(db: sqlite3.Connection, update: RatingUpdate) -> RatingOutcome:
    if db.execute("SELECT 1 FROM rated_races WHERE race_id = ?", (update.race_id,)).fetchone():
        db.execute("DELETE FROM rating_due WHERE race_id = ?", (update.race_id,))
        return RatingOutcome.ALREADY_APPLIED
    for change in update.changes:
        row = db.execute(
            "SELECT record FROM ratings WHERE player_id = ? AND game = ?",
            (change.player_id, change.after.game),
        ).fetchone()
        stored = None if row is None else RatingRecord.model_validate_json(row[0])
        if stored != change.before:
            return RatingOutcome.STALE
    for change in update.changes:
        db.execute(
            "INSERT INTO ratings (player_id, game, record) VALUES (?, ?, ?) "
            "ON CONFLICT (player_id, game) DO UPDATE SET record = excluded.record",
            (change.player_id, change.after.game, change.after.model_dump_json()),
        )
        db.execute(
            "INSERT INTO recent_results (player_id, record) VALUES (?, ?)",
            (change.player_id, change.result.model_dump_json()),
        )
        db.execute(
            "DELETE FROM recent_results WHERE player_id = ? AND id NOT IN "
            "(SELECT id FROM recent_results WHERE player_id = ? ORDER BY id DESC LIMIT ?)",
            (change.player_id, change.player_id, RECENT_RESULTS_KEPT),
        )
    db.execute("INSERT INTO rated_races (race_id) VALUES (?)", (update.race_id,))
    db.execute("DELETE FROM rating_due WHERE race_id = ?", (update.race_id,))
    return RatingOutcome.APPLIED


class SqliteCompetition:
    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError  # provided by SqliteStore

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT record FROM ratings WHERE player_id = ?", (player_id,)
            ).fetchall()
            return [str(row[0]) for row in rows]

        return [RatingRecord.model_validate_json(text) for text in await self._run(select)]

    async def list_ratings(self, game: str) -> list[RatingRecord]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute("SELECT record FROM ratings WHERE game = ?", (game,)).fetchall()
            return [str(row[0]) for row in rows]

        return [RatingRecord.model_validate_json(text) for text in await self._run(select)]

    async def apply_rating_update(self, update: RatingUpdate) -> RatingOutcome:
        return await self._run(lambda db: transaction(db, lambda: _apply(db, update)))

    async def races_to_rate(self) -> list[RaceId]:
        def select(db: sqlite3.Connection) -> list[RaceId]:
            rows = db.execute("SELECT race_id FROM rating_due ORDER BY rowid").fetchall()
            return [RaceId(str(row[0])) for row in rows]

        return await self._run(select)

    async def rating_settled(self, race_id: RaceId) -> None:
        def delete(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM rating_due WHERE race_id = ?", (race_id,))

        await self._run(lambda db: transaction(db, lambda: delete(db)))

    async def get_recent_results(self, player_id: PlayerId, limit: int) -> list[RecentResult]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT record FROM recent_results WHERE player_id = ? ORDER BY id DESC LIMIT ?",
                (player_id, max(0, limit)),
            ).fetchall()
            return [str(row[0]) for row in rows]

        return [RecentResult.model_validate_json(text) for text in await self._run(select)]

    async def save_tournament(self, record: TournamentRecord, expected_version: int | None) -> bool:
        text = record.model_dump_json()
        finished = int(record.is_finished)

        def compare_and_set(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "SELECT version FROM tournaments WHERE tournament_id = ?",
                (record.tournament_id,),
            ).fetchone()
            if (None if row is None else int(row[0])) != expected_version:
                return False
            db.execute(
                "INSERT INTO tournaments (tournament_id, version, record, finished, settled) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tournament_id) DO UPDATE SET "
                "version = excluded.version, record = excluded.record, "
                "finished = excluded.finished, settled = excluded.settled",
                (record.tournament_id, record.version, text, finished, int(record.settled)),
            )
            return True

        return await self._run(lambda db: transaction(db, lambda: compare_and_set(db)))

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None:
        def select(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                "SELECT record FROM tournaments WHERE tournament_id = ?", (tournament_id,)
            ).fetchone()
            return None if row is None else str(row[0])

        text = await self._run(select)
        return None if text is None else TournamentRecord.model_validate_json(text)

    async def list_open_tournaments(self) -> list[TournamentRecord]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT record FROM tournaments WHERE settled = 0 ORDER BY rowid"
            ).fetchall()
            return [str(row[0]) for row in rows]

        return [TournamentRecord.model_validate_json(t) for t in await self._run(select)]

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        def select(db: sqlite3.Connection) -> list[TournamentVersion]:
            rows = db.execute(
                "SELECT tournament_id, version, rowid, finished FROM tournaments "
                "WHERE settled = 0 ORDER BY rowid"
            ).fetchall()
            return [TournamentVersion(str(t), int(v), int(o), bool(f)) for t, v, o, f in rows]

        return await self._run(select)

    async def finished_tournament_versions(
        self, skip: int, limit: int
    ) -> tuple[list[TournamentVersion], int]:
        def select(db: sqlite3.Connection) -> tuple[list[TournamentVersion], int]:
            rows = db.execute(
                "SELECT tournament_id, version, rowid FROM tournaments WHERE finished = 1 "
                "ORDER BY rowid DESC LIMIT ? OFFSET ?",
                (max(0, limit), max(0, skip)),
            ).fetchall()
            (total,) = db.execute("SELECT COUNT(*) FROM tournaments WHERE finished = 1").fetchone()
            page = [TournamentVersion(str(t), int(v), int(o), True) for t, v, o in rows]
            return page[::-1], int(total)

        return await self._run(select)
