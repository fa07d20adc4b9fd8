"""The stored parts of a tournament: settings, rounds, matches, audit entries.

Each has `to_dict()` / `from_dict()` producing plain JSON-able values (str keys, lists, numbers,
booleans, None) that round-trip exactly, so SQLite and Redis store the same document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .pairing import FormatRules, MatchOutcome, Pairing, PlayedRound, RaceResult, RoundPlan
from .tournament_errors import InvalidSettingsError, MatchId, PlayerId

__all__ = ["AuditEntry", "Match", "Phase", "Round", "TournamentSettings"]


class Phase(StrEnum):
    REGISTRATION = "registration"
    CHECK_IN = "check_in"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class TournamentSettings:
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "rules": self.rules.to_dict(),
            "min_players": self.min_players,
            "max_players": self.max_players,
            "check_in_required": self.check_in_required,
            "no_show_grace": self.no_show_grace,
            "rated": self.rated,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TournamentSettings:
        grace = data["no_show_grace"]
        most = data["max_players"]
        return cls(
            rules=FormatRules.from_dict(data["rules"]),
            min_players=int(data["min_players"]),
            max_players=None if most is None else int(most),
            check_in_required=bool(data["check_in_required"]),
            no_show_grace=None if grace is None else float(grace),
            rated=bool(data["rated"]),
        )


@dataclass
class Match:
    """One match of a round: its races so far and the race in progress, if any."""

    match_id: MatchId
    players: tuple[PlayerId, ...]
    races: list[RaceResult] = field(default_factory=list)
    pending_race: int | None = None
    requested_at: float | None = None
    present: set[PlayerId] = field(default_factory=set)
    forfeited: set[PlayerId] = field(default_factory=set)
    is_ended: bool = False

    @property
    def racing(self) -> tuple[PlayerId, ...]:
        """Players still taking part (not forfeited)."""
        return tuple(p for p in self.players if p not in self.forfeited)

    def to_dict(self) -> dict[str, Any]:
        return {
            "match_id": self.match_id,
            "players": list(self.players),
            "races": [r.to_dict() for r in self.races],
            "pending_race": self.pending_race,
            "requested_at": self.requested_at,
            "present": sorted(self.present),
            "forfeited": sorted(self.forfeited),
            "is_ended": self.is_ended,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Match:
        requested = data["requested_at"]
        pending = data["pending_race"]
        return cls(
            match_id=MatchId(data["match_id"]),
            players=tuple(PlayerId(p) for p in data["players"]),
            races=[RaceResult.from_dict(r) for r in data["races"]],
            pending_race=None if pending is None else int(pending),
            requested_at=None if requested is None else float(requested),
            present={PlayerId(p) for p in data["present"]},
            forfeited={PlayerId(p) for p in data["forfeited"]},
            is_ended=bool(data["is_ended"]),
        )


@dataclass
class Round:
    """A round: its plan, matches, the deal of each race number (secret until it ends)."""

    number: int
    plan: RoundPlan
    matches: dict[MatchId, Match]
    game_numbers: dict[int, str] = field(default_factory=dict)
    asked: set[int] = field(default_factory=set)
    is_ended: bool = False

    @classmethod
    def open(cls, number: int, plan: RoundPlan) -> Round:
        matches = {p.match_id: Match(p.match_id, p.players) for p in plan.pairings}
        return cls(number, plan, matches)

    def pairing(self, match_id: MatchId) -> Pairing:
        return next(p for p in self.plan.pairings if p.match_id == match_id)

    def to_played(self, outcomes: Mapping[MatchId, MatchOutcome]) -> PlayedRound:
        return PlayedRound(self.plan, dict(outcomes))

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "plan": self.plan.to_dict(),
            "matches": [m.to_dict() for m in self.matches.values()],
            "game_numbers": {str(k): v for k, v in sorted(self.game_numbers.items())},
            "asked": sorted(self.asked),
            "is_ended": self.is_ended,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Round:
        matches = [Match.from_dict(m) for m in data["matches"]]
        return cls(
            number=int(data["number"]),
            plan=RoundPlan.from_dict(data["plan"]),
            matches={m.match_id: m for m in matches},
            game_numbers={int(k): str(v) for k, v in data["game_numbers"].items()},
            asked={int(k) for k in data["asked"]},
            is_ended=bool(data["is_ended"]),
        )


@dataclass(frozen=True)
class AuditEntry:
    """One admin act: when, by whom, what, and the details an auditor needs."""

    at: float
    actor: PlayerId
    act: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "actor": self.actor, "act": self.act, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditEntry:
        return cls(
            float(data["at"]), PlayerId(data["actor"]), str(data["act"]), str(data["detail"])
        )
