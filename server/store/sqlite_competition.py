"""Ratings and tournaments for the `sqlite:` store (mixed into `SqliteStore`).

Each write is one `BEGIN IMMEDIATE` transaction on the store's one worker thread, so its
checks (rated once per race, ratings unchanged since read, tournament version) and its writes
cannot interleave with another writer, in this process or another one on the same file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
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
from solrace.server.store.sqlite_tx import transaction

T = TypeVar("T")

#: Ids bound in one `IN (...)` (SQLite before 3.32 takes at most 999 variables a statement).
IDS_PER_QUERY = 500

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
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    record TEXT NOT NULL
);
"""


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

        def compare_and_set(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "SELECT version FROM tournaments WHERE tournament_id = ?",
                (record.tournament_id,),
            ).fetchone()
            if (None if row is None else int(row[0])) != expected_version:
                return False
            db.execute(
                "INSERT INTO tournaments (tournament_id, version, record) VALUES (?, ?, ?) "
                "ON CONFLICT (tournament_id) DO UPDATE SET version = excluded.version, "
                "record = excluded.record",
                (record.tournament_id, record.version, text),
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

    async def list_tournaments(self) -> list[TournamentRecord]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute("SELECT record FROM tournaments ORDER BY rowid").fetchall()
            return [str(row[0]) for row in rows]

        return [TournamentRecord.model_validate_json(t) for t in await self._run(select)]

    async def tournament_versions(self) -> list[tuple[str, int]]:
        def select(db: sqlite3.Connection) -> list[tuple[str, int]]:
            rows = db.execute(
                "SELECT tournament_id, version FROM tournaments ORDER BY rowid"
            ).fetchall()
            return [(str(tournament_id), int(version)) for tournament_id, version in rows]

        return await self._run(select)

    async def get_tournament_versions(self, tournament_ids: Collection[str]) -> dict[str, int]:
        ids = list(tournament_ids)

        def select(db: sqlite3.Connection) -> dict[str, int]:
            versions: dict[str, int] = {}
            for start in range(0, len(ids), IDS_PER_QUERY):
                chunk = ids[start : start + IDS_PER_QUERY]
                rows = db.execute(
                    "SELECT tournament_id, version FROM tournaments WHERE tournament_id IN "
                    f"({', '.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                versions.update((str(tid), int(version)) for tid, version in rows)
            return versions

        return await self._run(select) if ids else {}
