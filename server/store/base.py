"""The store interface every backend implements, and its errors.

Moves are appended **before** they are acknowledged, guarded by the expected ply: a duplicate
or stale write fails cleanly with `PlyConflictError` and stores nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from solrace.server.protocol.competition_records import (
    RatingOutcome,
    RatingRecord,
    RatingUpdate,
    RecentResult,
    TournamentRecord,
    settled_by_document,
)
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import MoveRecord, PlayerRecord, RaceRecord, RaceStatus


class StoreError(Exception):
    """Base of the store's errors."""


class NameTakenError(StoreError):
    """Another player already owns this name."""


class PlyConflictError(StoreError):
    """The move's ply or seq is already stored: a duplicate or a stale write."""


class UnknownRaceError(StoreError):
    """No such race."""


class NotPlayingError(StoreError):
    """The stored race takes no more moves from this racer (the race is not running, or the
    racer is out): another node moved it on while this one's copy was stale."""


class UncountedMovesError(StoreError):
    """The record would put a racer out of the race (its state final: finished, stuck,
    resigned, gone, timed out) without counting every move stored for it: another node
    acknowledged moves whose progress it has not folded into the race yet. Read the moves and
    save again with their figures."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached or used just now (Redis restarting; a SQLite file another
    connection keeps locked, or a full or failing disk): retry later. A write that raised
    this may or may not have been stored, so read before writing it again."""


def rating_falls_due(race: RaceRecord, expected: RaceRecord | None) -> bool:
    """Whether saving `race` over `expected` finishes a rated race: the save then also puts
    the race among the races to rate (`Store.races_to_rate`), in the same write, so that a
    crash between the finish and its rating loses nothing."""
    finished = RaceStatus.FINISHED
    return (
        race.rated
        and race.status is finished
        and (expected is None or expected.status is not finished)
    )


def flags_of_stored_tournament(text: str) -> tuple[bool, bool]:
    """Whether the tournament of a stored record's JSON is finished, and whether it is
    settled (a record stored before records said so: `settled_by_document`): what a store's
    upgrade fills its indexes with. One this version cannot read is neither (left open: a
    node's start reads it, and says so)."""
    try:
        record = TournamentRecord.model_validate_json(text)
        if "settled" in record.model_fields_set:
            settled = record.settled
        else:
            settled = settled_by_document(record)
    except ValueError:
        return False, False
    return record.is_finished, settled


class TournamentVersion(NamedTuple):
    """A stored tournament's version without its document: `order` grows with creation (the
    order the store lists tournaments in), `finished` says whether its phase is finished."""

    tournament_id: str
    version: int
    order: int
    finished: bool


class Store(Protocol):
    """Durable state: players, races, move logs (with server times), results, replays."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def claim_secret(self, fingerprint: str) -> str:
        """The fingerprint of the token secret of the nodes sharing this store: the one
        stored, else `fingerprint`, stored now. A store of one node keeps none and returns
        `fingerprint` (its node may change its secret: every token then stops working)."""
        ...

    async def create_player(self, player_id: PlayerId, name: str, now_ms: int) -> PlayerRecord:
        """A new player; `NameTakenError` if the name is owned (names compare case-blind) or
        the player id is another name's (nothing stored either way)."""
        ...

    async def get_player(self, player_id: PlayerId) -> PlayerRecord | None: ...

    async def get_player_by_name(self, name: str) -> PlayerRecord | None:
        """The player who owns `name` (names compare case-blind); None if nobody does."""
        ...

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        """Save `race` only if the stored record still equals `expected` (None: no record yet);
        False stores nothing. The compare-and-set behind transitions that must happen once
        across nodes: of two nodes moving a race on from the same record, one gets True.
        A save that finishes a rated race puts it among the races to rate (`rating_falls_due`).
        A store several nodes share (Redis) also refuses, with `UncountedMovesError`, a record
        that puts a racer out with a move count below the number of its stored moves: a
        racer's figures are final once it is out, and its results must be those of its moves
        (once it is out, `append_move` takes no more of them). A count above it (moves lost
        from the store) is taken as it is. One node's store relies on its hub, whose boards
        hold every stored move."""
        ...

    async def get_race(self, race_id: RaceId) -> RaceRecord | None: ...

    async def list_races(self, statuses: Sequence[RaceStatus]) -> list[RaceRecord]: ...

    async def append_move(self, move: MoveRecord) -> None:
        """Store a move whose `ply` must be the player's next one in the race and whose `seq`
        must be new, else `PlyConflictError` (nothing stored). A store several nodes share
        (Redis) also refuses a move the stored race no longer takes (`NotPlayingError`):
        a node's copy of the race may be behind; one node's store relies on its hub."""
        ...

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        """Every stored move of a race, per player in ply order."""
        ...

    # --- ratings -----------------------------------------------------------------------

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        """A player's ratings, one per game id played rated (any order)."""
        ...

    async def list_ratings(self, game: str) -> list[RatingRecord]:
        """Every rating of one game id (any order: the leaderboard sorts)."""
        ...

    async def apply_rating_update(self, update: RatingUpdate) -> RatingOutcome:
        """Store every racer's new rating and recent result of one rated race, all or nothing:
        `ALREADY_APPLIED` if this race was applied before (once-only, across nodes), `STALE`
        if a stored rating is not the change's `before` (None: no rating yet), else `APPLIED`.
        Each player keeps the newest `RECENT_RESULTS_KEPT` results. Applied (now or before),
        the race is no longer among the races to rate."""
        ...

    async def races_to_rate(self) -> list[RaceId]:
        """The finished rated races not rated yet, nor settled as rating nobody (oldest
        first): a crash, an outage or a race of changes left them (see `rating_falls_due`)."""
        ...

    async def rating_settled(self, race_id: RaceId) -> None:
        """A finished rated race that rates nobody (too few took part) leaves the races to
        rate."""
        ...

    async def get_recent_results(self, player_id: PlayerId, limit: int) -> list[RecentResult]:
        """A player's newest rated results first."""
        ...

    # --- tournaments -------------------------------------------------------------------

    async def save_tournament(self, record: TournamentRecord, expected_version: int | None) -> bool:
        """Save only if the stored version is `expected_version` (None: nothing stored yet);
        False stores nothing. Of two nodes advancing one tournament, one gets True."""
        ...

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None: ...

    async def list_open_tournaments(self) -> list[TournamentRecord]:
        """Every tournament not settled (`TournamentRecord.settled`), in creation order: what
        a node's start loads. The settled ones, most of a store after a while, are not read."""
        ...

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        """The id, version and creation order of every tournament not settled, in creation
        order (no documents)."""
        ...

    async def finished_tournament_versions(
        self, skip: int, limit: int
    ) -> tuple[list[TournamentVersion], int]:
        """Finished tournaments (phase finished, settled or not) page by page, newest last:
        the `limit` created before the `skip` newest, oldest first (no documents); and how
        many finished ones are stored in all."""
        ...
