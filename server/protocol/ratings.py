"""Ratings per game id with openskill's Plackett-Luce model (pure, deterministic).

A rated race updates every participant at once from its full finishing order, so a 6-player
race counts as the 15 pairwise results it contains; players who tie share a place. Ratings are
kept per game id (Klondike skill says little about FreeCell skill): the caller keeps one
`Mapping[PlayerId, Rating]` per game id and stores `Rating.to_dict()`.

Shown to people: the conservative rating ``offset + scale * (mu - 3 * sigma)`` (rounded, never
below zero): it starts at `RatingConfig.display_offset` and only climbs as the system grows
sure of a player. A player is provisional until `provisional_races` rated races.

Usage::

    changes = rate_race(table, [[winner], [second_a, second_b], [last]])  # ties share a place
    table.update({c.player: c.after for c in changes})
    top = leaderboard(table)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from .competition_records import RatingChangeRecord, RatingRecord, RatingUpdate, RecentResult
from .ids import RaceId
from .tournament_errors import PlayerId, RatingError

__all__ = [
    "DEFAULT_CONFIG",
    "LeaderboardEntry",
    "Rating",
    "RatingChange",
    "RatingConfig",
    "build_rating_update",
    "leaderboard",
    "rate_order",
    "rate_race",
    "to_rating",
]


@dataclass(frozen=True)
class RatingConfig:
    """Model parameters (openskill's defaults) and how ratings are shown."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    display_offset: float = 1000.0
    display_scale: float = 40.0
    provisional_races: int = 10

    def new_rating(self) -> Rating:
        return Rating(self.mu, self.sigma)


DEFAULT_CONFIG = RatingConfig()


@dataclass(frozen=True)
class Rating:
    """A player's skill estimate for one game id, with their rated race count and wins."""

    mu: float
    sigma: float
    races: int = 0
    wins: int = 0

    def conservative(self) -> float:
        """mu - 3 sigma: the player is ~99.7% likely to be at least this good."""
        return self.mu - 3.0 * self.sigma

    def display(self, config: RatingConfig = DEFAULT_CONFIG) -> int:
        """The number shown to people (see the module docstring)."""
        return max(0, round(config.display_offset + config.display_scale * self.conservative()))

    def is_provisional(self, config: RatingConfig = DEFAULT_CONFIG) -> bool:
        return self.races < config.provisional_races

    def to_dict(self) -> dict[str, Any]:
        return {"mu": self.mu, "sigma": self.sigma, "races": self.races, "wins": self.wins}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rating:
        return cls(float(data["mu"]), float(data["sigma"]), int(data["races"]), int(data["wins"]))


@dataclass(frozen=True)
class RatingChange:
    player: PlayerId
    place: int
    before: Rating
    after: Rating


def rate_race(
    ratings: Mapping[PlayerId, Rating],
    placings: Sequence[Sequence[PlayerId]],
    config: RatingConfig = DEFAULT_CONFIG,
) -> list[RatingChange]:
    """Update everyone in a rated race from its finishing order.

    `placings` holds groups of tied players, best first (``[[a], [b, c], [d]]``: b and c tie
    for second). Players missing from `ratings` start from `config.new_rating()`. Returns one
    change per player, in finishing order; `ratings` itself is not modified.
    """
    groups = [list(group) for group in placings]
    players = [p for group in groups for p in group]
    if any(not group for group in groups):
        raise RatingError("a finishing order contains an empty group of tied players")
    if len(set(players)) != len(players):
        raise RatingError("a player appears twice in the finishing order")
    if len(players) < 2:
        raise RatingError("a rated race needs at least two players")
    model = PlackettLuce(mu=config.mu, sigma=config.sigma, beta=config.beta, tau=config.tau)
    before = [ratings.get(p) or config.new_rating() for p in players]
    teams = [[model.rating(mu=r.mu, sigma=r.sigma)] for r in before]
    places: list[int] = []
    for group in groups:
        places += [len(places) + 1] * len(group)
    updated = model.rate(teams, ranks=[float(x) for x in places])
    return [
        RatingChange(
            player,
            place,
            old,
            Rating(
                float(team[0].mu),
                float(team[0].sigma),
                old.races + 1,
                old.wins + (place == 1),
            ),
        )
        for player, place, old, team in zip(players, places, before, updated, strict=True)
    ]


def rate_order(
    ratings: Mapping[PlayerId, Rating],
    order: Iterable[PlayerId],
    config: RatingConfig = DEFAULT_CONFIG,
) -> list[RatingChange]:
    """`rate_race` for an order without ties (best first)."""
    return rate_race(ratings, [[p] for p in order], config)


def to_rating(record: RatingRecord) -> Rating:
    """A stored rating as the model's `Rating`."""
    return Rating(record.mu, record.sigma, record.races, record.wins)


def build_rating_update(
    race_id: RaceId,
    game: str,
    placings: Sequence[Sequence[PlayerId]],
    stored: Mapping[PlayerId, RatingRecord],
    at_ms: int,
    config: RatingConfig = DEFAULT_CONFIG,
) -> RatingUpdate:
    """What the store applies for a rated race of `game`: each racer's rating after it (from
    `rate_race` over `placings`, starting from `stored`, the racers' ratings for `game` as
    read; a racer missing there is new), the rating it replaces and the racer's line among
    their recent results, all stamped `at_ms` (when the race finished). Pure: the caller reads
    `stored` and, if the store answers that a rating moved meanwhile, reads and builds again."""
    changes = rate_race({p: to_rating(r) for p, r in stored.items()}, placings, config)
    return RatingUpdate(
        race_id=race_id,
        game=game,
        changes=[
            RatingChangeRecord(
                player_id=change.player,
                before=stored.get(change.player),
                after=RatingRecord(
                    player_id=change.player,
                    game=game,
                    mu=change.after.mu,
                    sigma=change.after.sigma,
                    races=change.after.races,
                    wins=change.after.wins,
                    updated_at_ms=at_ms,
                ),
                result=RecentResult(
                    race_id=race_id,
                    game=game,
                    rank=change.place,
                    racers=len(changes),
                    rating_before=change.before.display(config),
                    rating_after=change.after.display(config),
                    at_ms=at_ms,
                ),
            )
            for change in changes
        ],
    )


@dataclass(frozen=True)
class LeaderboardEntry:
    rank: int
    player: PlayerId
    rating: int
    races: int
    wins: int
    is_provisional: bool


def leaderboard(
    ratings: Mapping[PlayerId, Rating],
    config: RatingConfig = DEFAULT_CONFIG,
    *,
    include_provisional: bool = True,
    limit: int | None = None,
) -> list[LeaderboardEntry]:
    """One game's leaderboard: established players first, then provisional ones; each part by
    displayed rating, then mu, then more races, then player id (so the order is total)."""
    rows = [
        (p, r) for p, r in ratings.items() if include_provisional or not r.is_provisional(config)
    ]
    rows.sort(
        key=lambda row: (
            row[1].is_provisional(config),
            -row[1].display(config),
            -row[1].mu,
            -row[1].races,
            row[0],
        )
    )
    if limit is not None:
        rows = rows[:limit]
    return [
        LeaderboardEntry(i + 1, p, r.display(config), r.races, r.wins, r.is_provisional(config))
        for i, (p, r) in enumerate(rows)
    ]
