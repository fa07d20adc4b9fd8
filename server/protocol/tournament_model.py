"""The value types of tournaments: format rules, race results, pairings, outcomes, standings.

Frozen dataclasses. Those stored with a tournament derive from `Stored`: the tournament's
document is their fields as pydantic serializes them (see `Tournament.to_dict`). The rules
that use them live in `pairing` (planning, a module per format: `tournament_bracket`, `swiss`,
`round_robin`, `heats`), `match_scoring` and `standings`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    GetCoreSchemaHandler,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    WrapSerializer,
)
from pydantic_core import core_schema

from .tournament_errors import InvalidResultError, InvalidSettingsError, MatchId, PlayerId
from .tournament_messages import CreateTournament

__all__ = [
    "AS_SORTED_LIST",
    "BY_SORTED_KEY",
    "Format",
    "FormatRules",
    "MatchOutcome",
    "Pairing",
    "PlayedRound",
    "RaceResult",
    "RoundPlan",
    "Standing",
    "Stored",
]


class Stored:
    """Base of the dataclasses stored in a tournament's document, which pydantic reads and
    writes from their fields. Reading one needs every field: a default fills in a new value,
    never a gap in a stored document (that fails, as does a value of the wrong type)."""

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        names = [f.name for f in dataclasses.fields(source)]

        def require_every_field(data: Any) -> Any:
            if isinstance(data, Mapping):
                missing = [name for name in names if name not in data]
                if missing:
                    raise ValueError(f"{source.__name__} is missing {', '.join(missing)}")
            return data

        schema = dict(handler(source))
        # The check wraps the class's whole schema, so it takes over the schema's reference:
        # other fields of this type point there, and must get the check too.
        ref = schema.pop("ref", None)
        return core_schema.no_info_before_validator_function(require_every_field, schema, ref=ref)


def _as_sorted_list(items: Iterable[Any]) -> list[Any]:
    return sorted(items)


def _by_sorted_key(mapping: Mapping[Any, Any], handler: SerializerFunctionWrapHandler) -> Any:
    return handler(dict(sorted(mapping.items())))


AS_SORTED_LIST = PlainSerializer(_as_sorted_list)
"""`Annotated[set[...], AS_SORTED_LIST]`: a set stored as a sorted list, so equal sets store
the same document."""

BY_SORTED_KEY = WrapSerializer(_by_sorted_key)
"""`Annotated[dict[...], BY_SORTED_KEY]`: a mapping stored with its keys in order."""


class Format(StrEnum):
    """A tournament's format; on the wire as `vocab.FormatName` (a test keeps the values equal)."""

    SINGLE_ELIMINATION = "single_elimination"
    DOUBLE_ELIMINATION = "double_elimination"
    SWISS = "swiss"
    ROUND_ROBIN = "round_robin"
    HEATS = "heats"


@dataclass(frozen=True)
class FormatRules(Stored):
    """How a tournament pairs and scores; stored with the tournament."""

    format: Format
    best_of: int = 1
    third_place_match: bool = False
    bracket_reset: bool = True
    swiss_rounds: int | None = None
    heat_size: int = 4
    advance_per_heat: int = 2

    def validate(self) -> None:
        if self.best_of < 1:
            raise InvalidSettingsError(f"best_of must be at least 1, not {self.best_of}")
        if self.swiss_rounds is not None and self.swiss_rounds < 1:
            raise InvalidSettingsError("swiss_rounds must be at least 1 (or unset for automatic)")
        if self.heat_size < 2:
            raise InvalidSettingsError(f"heat_size must be at least 2, not {self.heat_size}")
        if self.advance_per_heat < 1:
            raise InvalidSettingsError("advance_per_heat must be at least 1")

    @property
    def is_head_to_head(self) -> bool:
        return self.format is not Format.HEATS

    @property
    def allows_draws(self) -> bool:
        return self.format in (Format.SWISS, Format.ROUND_ROBIN)

    @property
    def wins_needed(self) -> int:
        return math.ceil(self.best_of / 2)


def format_rules(request: CreateTournament) -> FormatRules:
    """The format rules a `create_tournament` asks for, checked (`InvalidSettingsError`).

    Besides `FormatRules.validate`, a request is held to what the server offers: a
    head-to-head match of an odd number of races, so that someone wins it (the rules can
    score a drawn round-robin match; a tournament created here never has one)."""
    if request.best_of % 2 == 0 and request.format != Format.HEATS.value:
        raise InvalidSettingsError(
            f"best_of {request.best_of}: a head-to-head match needs an odd number of races"
            " (1, 3, 5, 7 or 9: first to a majority wins); only heats play an even number"
        )
    rules = FormatRules(
        format=Format(request.format),
        best_of=request.best_of,
        third_place_match=request.third_place_match,
        bracket_reset=request.bracket_reset,
        swiss_rounds=request.swiss_rounds,
        heat_size=request.heat_size,
        advance_per_heat=request.advance_per_heat,
    )
    rules.validate()
    return rules


@dataclass(frozen=True)
class RaceResult(Stored):
    """One race's finishing order: groups of tied players, best first, and cards on foundations."""

    placings: tuple[tuple[PlayerId, ...], ...]
    cards: Annotated[Mapping[PlayerId, int], BY_SORTED_KEY] = field(default_factory=dict)

    @classmethod
    def from_order(
        cls, order: Iterable[PlayerId], cards: Mapping[PlayerId, int] | None = None
    ) -> RaceResult:
        """A result with no ties: `order` is best first."""
        return cls(tuple((p,) for p in order), dict(cards or {}))

    @classmethod
    def from_groups(
        cls, groups: Iterable[Iterable[PlayerId]], cards: Mapping[PlayerId, int] | None = None
    ) -> RaceResult:
        """A result with ties: each group holds the players sharing one place, best first."""
        return cls(tuple(tuple(g) for g in groups), dict(cards or {}))

    @property
    def players(self) -> tuple[PlayerId, ...]:
        return tuple(p for group in self.placings for p in group)

    @property
    def sole_winner(self) -> PlayerId | None:
        """The winner, or None when the best place is shared."""
        if self.placings and len(self.placings[0]) == 1:
            return self.placings[0][0]
        return None

    def place_of(self, player: PlayerId) -> int:
        """1-based place; tied players share the better place; absent players come last."""
        ahead = 0
        for group in self.placings:
            if player in group:
                return ahead + 1
            ahead += len(group)
        return ahead + 1

    def without(self, players: Iterable[PlayerId]) -> RaceResult:
        """The same result with `players` taken out (e.g. those who forfeited meanwhile)."""
        gone = set(players)
        if not gone & set(self.players):
            return self
        groups = tuple(
            g for g in (tuple(p for p in grp if p not in gone) for grp in self.placings) if g
        )
        return RaceResult(groups, {p: n for p, n in self.cards.items() if p not in gone})

    def cards_of(self, player: PlayerId) -> int:
        return self.cards.get(player, 0)

    def validate(self, expected: Iterable[PlayerId]) -> None:
        """Refuse a result that does not rank exactly `expected`, once each."""
        listed = self.players
        if any(not group for group in self.placings):
            raise InvalidResultError("a finishing order contains an empty group of tied players")
        if len(set(listed)) != len(listed):
            raise InvalidResultError("a player appears twice in the finishing order")
        want = set(expected)
        if set(listed) != want:
            missing = sorted(want - set(listed))
            extra = sorted(set(listed) - want)
            raise InvalidResultError(
                f"the finishing order must list exactly the match's players;"
                f" missing {missing}, not in the match {extra}"
            )
        for player, count in self.cards.items():
            if player not in want:
                raise InvalidResultError(f"cards given for {player!r}, who is not in the match")
            if count < 0:
                raise InvalidResultError(f"cards on foundations cannot be negative ({player!r})")


@dataclass(frozen=True)
class Pairing(Stored):
    """A match to play: its id and players (two, or a heat's N), better seed first."""

    match_id: MatchId
    players: tuple[PlayerId, ...]


@dataclass(frozen=True)
class RoundPlan(Stored):
    """The next round: matches to create and players scoring a bye (Swiss and round robin)."""

    pairings: tuple[Pairing, ...]
    byes: tuple[PlayerId, ...] = ()


@dataclass(frozen=True)
class MatchOutcome:
    """How a decided match ended. `ranking` lists every player, best first."""

    match_id: MatchId
    ranking: tuple[PlayerId, ...]
    is_draw: bool = False
    forfeited: frozenset[PlayerId] = frozenset()
    cards: Mapping[PlayerId, int] = field(default_factory=dict)
    wins: Mapping[PlayerId, int] = field(default_factory=dict)

    @property
    def winner(self) -> PlayerId | None:
        """The winner; None for a draw or when every player forfeited."""
        if self.is_draw or not self.ranking or self.ranking[0] in self.forfeited:
            return None
        return self.ranking[0]

    @property
    def loser(self) -> PlayerId | None:
        """The loser of a head-to-head match with a winner."""
        if self.winner is None or len(self.ranking) != 2:
            return None
        return self.ranking[1]

    def points_of(self, player: PlayerId) -> float:
        """Swiss/round-robin points: 1 for a win, 1/2 for a draw, 0 otherwise."""
        if self.is_draw:
            return 0.5
        return 1.0 if player == self.winner else 0.0


@dataclass(frozen=True)
class PlayedRound:
    """A round as it was planned, with the outcome of each of its matches."""

    plan: RoundPlan
    outcomes: Mapping[MatchId, MatchOutcome]


@dataclass(frozen=True)
class Standing:
    """One line of the standings. `rank` is shared by players the format cannot separate."""

    rank: int
    player: PlayerId
    points: float = 0.0
    tiebreak: float = 0.0
    cards: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    is_eliminated: bool = False
    is_dropped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "player": self.player,
            "points": self.points,
            "tiebreak": self.tiebreak,
            "cards": self.cards,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "is_eliminated": self.is_eliminated,
            "is_dropped": self.is_dropped,
        }
