"""What the store keeps for ratings and tournaments: plain JSON-able models.

Ratings are kept per (player, game id); a rated race updates every racer at once through one
`RatingUpdate`, which the store applies at most once per race and only over the ratings it was
computed from (see `Store.apply_rating_update`). A tournament is stored as one versioned
document (`TournamentRecord.document`, owned by `server/tournament_changes.py`) so two nodes
cannot both move it on: each save names the version it read.
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.tournament_state import Phase

RECENT_RESULTS_KEPT = 50
"""Recent results kept per player (older ones are dropped by the store)."""


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RatingRecord(Record):
    """One player's openskill rating for one game id."""

    player_id: PlayerId
    game: str
    mu: float
    sigma: float
    races: int = 0
    wins: int = 0
    updated_at_ms: int = 0


class RecentResult(Record):
    """One rated race as it shows in a player's profile."""

    race_id: RaceId
    game: str
    rank: int
    racers: int
    rating_before: int
    rating_after: int
    at_ms: int


class RatingChangeRecord(Record):
    """One racer's part of a rated race: the rating read (None: none yet), the new one."""

    player_id: PlayerId
    before: RatingRecord | None
    after: RatingRecord
    result: RecentResult


class RatingUpdate(Record):
    """Every racer's new rating after one rated race."""

    race_id: RaceId
    game: str
    changes: list[RatingChangeRecord]


class RatingOutcome(StrEnum):
    APPLIED = "applied"
    ALREADY_APPLIED = "already_applied"
    """This race's ratings were applied before (by this node or another): nothing changed."""
    STALE = "stale"
    """A racer's stored rating is no longer the `before` it was computed from: read again."""


class TournamentRecord(Record):
    """A tournament's stored document; `version` grows by one per save. `settled`: finished,
    with no round's deals still held, so a node's start has nothing left to do for it: the
    store lists every other one as open (`Store.list_open_tournaments`)."""

    tournament_id: str
    version: int
    phase: str
    created_at_ms: int
    document: str
    settled: bool = False

    @property
    def is_finished(self) -> bool:
        return self.phase == Phase.FINISHED.value


def document_holds_deals(document: str) -> bool:
    """Whether a tournament's document (`TournamentRecord.document`) may note ended rounds
    whose deals are still held: its `held_deals` is not empty, or is missing (a document
    stored before releases were noted)."""
    data = json.loads(document)
    return not isinstance(data, dict) or data.get("held_deals") != {}


def settled_by_document(record: TournamentRecord) -> bool:
    """Whether a tournament stored before records said whether it is settled is: finished,
    and its document notes no deal held."""
    return record.is_finished and not document_holds_deals(record.document)


__all__ = [
    "RECENT_RESULTS_KEPT",
    "RatingChangeRecord",
    "RatingOutcome",
    "RatingRecord",
    "RatingUpdate",
    "RecentResult",
    "TournamentRecord",
    "document_holds_deals",
    "settled_by_document",
]
