"""The stored parts of a tournament: settings, rounds, matches, audit entries.

Dataclasses whose fields are the stored document (`Stored`): pydantic writes them as plain
JSON-able values (str keys, lists, numbers, booleans, None) and reads them back exactly, so
SQLite and Redis store the same document. A field is declared here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetPydanticSchema
from pydantic_core import core_schema

from .tournament_errors import InvalidSettingsError, MatchId, PlayerId
from .tournament_model import (
    AS_SORTED_LIST,
    BY_SORTED_KEY,
    FormatRules,
    MatchOutcome,
    Pairing,
    PlayedRound,
    RaceResult,
    RoundPlan,
    Stored,
)

__all__ = ["AuditEntry", "Match", "Phase", "Round", "TournamentSettings"]


class Phase(StrEnum):
    """A tournament's phase; on the wire as `vocab.PhaseName` (a test keeps the values equal)."""

    REGISTRATION = "registration"
    CHECK_IN = "check_in"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class TournamentSettings(Stored):
    """Format rules plus lifecycle settings. `no_show_grace` is in seconds (None: never)."""

    rules: FormatRules
    min_players: int = 2
    max_players: int | None = None
    check_in_required: bool = True
    no_show_grace: float | None = 120.0
    rated: bool = True

    def validate(self) -> None:
        self.rules.validate()
        if self.min_players < 2:
            raise InvalidSettingsError("min_players must be at least 2")
        if self.max_players is not None and self.max_players < self.min_players:
            raise InvalidSettingsError("max_players cannot be below min_players")
        if self.no_show_grace is not None and self.no_show_grace < 0:
            raise InvalidSettingsError("no_show_grace cannot be negative")


@dataclass
class Match(Stored):
    """One match of a round: its races so far and the race in progress, if any."""

    match_id: MatchId
    players: tuple[PlayerId, ...]
    races: list[RaceResult] = field(default_factory=list)
    pending_race: int | None = None
    requested_at: float | None = None
    present: Annotated[set[PlayerId], AS_SORTED_LIST] = field(default_factory=set)
    forfeited: Annotated[set[PlayerId], AS_SORTED_LIST] = field(default_factory=set)
    is_ended: bool = False

    @property
    def racing(self) -> tuple[PlayerId, ...]:
        """Players still taking part (not forfeited)."""
        return tuple(p for p in self.players if p not in self.forfeited)


def _matches_by_id(matches: list[Match]) -> dict[MatchId, Match]:
    by_id = {m.match_id: m for m in matches}
    if len(by_id) != len(matches):
        raise ValueError("two matches of a round have the same id")
    return by_id


def _listed(matches: dict[MatchId, Match]) -> list[Match]:
    return list(matches.values())


def _stored_as_list(_source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
    return core_schema.no_info_after_validator_function(
        _matches_by_id,
        handler.generate_schema(list[Match]),
        serialization=core_schema.plain_serializer_function_ser_schema(
            _listed, return_schema=handler.generate_schema(list[Match])
        ),
    )


MatchesById = Annotated[dict[MatchId, Match], GetPydanticSchema(_stored_as_list)]
"""A round's matches by id, stored as the list of the matches (each names its id)."""


@dataclass
class Round(Stored):
    """A round: its plan, matches, the deal of each race number (secret until it ends)."""

    number: int
    plan: RoundPlan
    matches: MatchesById
    game_numbers: Annotated[dict[int, str], BY_SORTED_KEY] = field(default_factory=dict)
    asked: Annotated[set[int], AS_SORTED_LIST] = field(default_factory=set)
    is_ended: bool = False

    @classmethod
    def open(cls, number: int, plan: RoundPlan) -> Round:
        matches = {p.match_id: Match(p.match_id, p.players) for p in plan.pairings}
        return cls(number, plan, matches)

    def pairing(self, match_id: MatchId) -> Pairing:
        return next(p for p in self.plan.pairings if p.match_id == match_id)

    def to_played(self, outcomes: Mapping[MatchId, MatchOutcome]) -> PlayedRound:
        return PlayedRound(self.plan, dict(outcomes))


@dataclass(frozen=True)
class AuditEntry(Stored):
    """One admin act: when, by whom, what, and the details an auditor needs."""

    at: float
    actor: PlayerId
    act: str
    detail: str = ""
