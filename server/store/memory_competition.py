"""Ratings and tournaments for the `memory:` store (mixed into `MemoryStore`)."""

from __future__ import annotations

from solrace.server.protocol.competition_records import (
    RECENT_RESULTS_KEPT,
    RatingOutcome,
    RatingRecord,
    RatingUpdate,
    RecentResult,
    TournamentRecord,
)
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.store.base import TournamentVersion


class MemoryCompetition:
    """Dicts for ratings, rated races, recent results and tournament documents."""

    _ratings: dict[tuple[PlayerId, str], RatingRecord]
    _rated_races: set[RaceId]
    #: Finished rated races not rated yet, in finishing order (`rating_falls_due`).
    _rating_due: dict[RaceId, None]
    _recent: dict[PlayerId, list[RecentResult]]
    _tournaments: dict[str, TournamentRecord]

    def _competition(self) -> None:
        if not hasattr(self, "_ratings"):
            self._ratings = {}
            self._rated_races = set()
            self._rating_due = {}
            self._recent = {}
            self._tournaments = {}

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        self._competition()
        return [r for (player, _), r in self._ratings.items() if player == player_id]

    async def list_ratings(self, game: str) -> list[RatingRecord]:
        self._competition()
        return [r for (_, each), r in self._ratings.items() if each == game]

    async def apply_rating_update(self, update: RatingUpdate) -> RatingOutcome:
        self._competition()
        if update.race_id in self._rated_races:
            self._rating_due.pop(update.race_id, None)
            return RatingOutcome.ALREADY_APPLIED
        for change in update.changes:
            if self._ratings.get((change.player_id, change.after.game)) != change.before:
                return RatingOutcome.STALE
        for change in update.changes:
            self._ratings[(change.player_id, change.after.game)] = change.after
            recent = self._recent.setdefault(change.player_id, [])
            recent.insert(0, change.result)
            del recent[RECENT_RESULTS_KEPT:]
        self._rated_races.add(update.race_id)
        self._rating_due.pop(update.race_id, None)
        return RatingOutcome.APPLIED

    async def races_to_rate(self) -> list[RaceId]:
        self._competition()
        return list(self._rating_due)

    async def rating_settled(self, race_id: RaceId) -> None:
        self._competition()
        self._rating_due.pop(race_id, None)

    async def get_recent_results(self, player_id: PlayerId, limit: int) -> list[RecentResult]:
        self._competition()
        return self._recent.get(player_id, [])[: max(0, limit)]

    async def save_tournament(self, record: TournamentRecord, expected_version: int | None) -> bool:
        self._competition()
        stored = self._tournaments.get(record.tournament_id)
        if (None if stored is None else stored.version) != expected_version:
            return False
        self._tournaments[record.tournament_id] = record  # dicts keep first-insert order
        return True

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None:
        self._competition()
        return self._tournaments.get(tournament_id)

    async def list_open_tournaments(self) -> list[TournamentRecord]:
        self._competition()
        return [t for t in self._tournaments.values() if not t.settled]

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        self._competition()
        return [v for v in self._versions() if not self._tournaments[v.tournament_id].settled]

    async def finished_tournament_versions(
        self, skip: int, limit: int
    ) -> tuple[list[TournamentVersion], int]:
        self._competition()
        finished = [v for v in self._versions() if v.finished]
        end = max(0, len(finished) - max(0, skip))
        return finished[max(0, end - max(0, limit)) : end], len(finished)

    def _versions(self) -> list[TournamentVersion]:
        """Every tournament's version, in creation order (a scan: this store is for tests)."""
        return [
            TournamentVersion(t.tournament_id, t.version, order, t.is_finished)
            for order, t in enumerate(self._tournaments.values())
        ]
