"""Each player's points, results and opponents over the rounds played, and the standings of
the formats scored by points (pure, deterministic).

Swiss: points (win 1, draw 1/2, bye 1, loss 0), then Buchholz (sum of the points of the
opponents met), then total cards on foundations over all races, then seed. Round robin:
points, then Sonneborn-Berger (points of beaten opponents plus half those of drawn ones), then
cards on foundations, then seed. From round 2 on, a Swiss pairs in the order of its standings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .tournament_errors import PlayerId
from .tournament_model import PlayedRound, Standing

__all__ = ["Tally", "buchholz", "rank_scored", "sonneborn_berger", "tally_rounds"]


@dataclass
class Tally:
    points: float = 0.0
    cards: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    byes: int = 0
    opponents: list[PlayerId] = field(default_factory=list)
    results: list[float] = field(default_factory=list)


def tally_rounds(
    seeds: Sequence[PlayerId], history: Sequence[PlayedRound]
) -> dict[PlayerId, Tally]:
    tally = {p: Tally() for p in seeds}
    for played in history:
        for player in played.plan.byes:
            tally[player].points += 1.0
            tally[player].byes += 1
        for pairing in played.plan.pairings:
            outcome = played.outcomes[pairing.match_id]
            for player in pairing.players:
                line = tally[player]
                score = outcome.points_of(player)
                line.points += score
                line.cards += outcome.cards.get(player, 0)
                line.wins += score == 1.0
                line.draws += score == 0.5
                line.losses += score == 0.0
                for other in pairing.players:
                    if other != player:
                        line.opponents.append(other)
                        line.results.append(score)
    return tally


def buchholz(tally: Mapping[PlayerId, Tally], player: PlayerId) -> float:
    return sum(tally[o].points for o in tally[player].opponents)


def sonneborn_berger(tally: Mapping[PlayerId, Tally], player: PlayerId) -> float:
    line = tally[player]
    return sum(tally[o].points * r for o, r in zip(line.opponents, line.results, strict=True))


def rank_scored(
    tally: Mapping[PlayerId, Tally],
    seeds: Sequence[PlayerId],
    dropped: frozenset[PlayerId],
    tiebreak: Callable[[Mapping[PlayerId, Tally], PlayerId], float],
) -> list[Standing]:
    lines = [
        Standing(
            rank=0,
            player=p,
            points=tally[p].points,
            tiebreak=tiebreak(tally, p),
            cards=tally[p].cards,
            wins=tally[p].wins,
            draws=tally[p].draws,
            losses=tally[p].losses,
            is_dropped=p in dropped,
        )
        for p in seeds
    ]
    seed_of = {p: i for i, p in enumerate(seeds)}
    lines.sort(key=lambda s: (-s.points, -s.tiebreak, -s.cards, seed_of[s.player]))
    return [_with_rank(s, i + 1) for i, s in enumerate(lines)]


def _with_rank(line: Standing, rank: int) -> Standing:
    return Standing(
        rank,
        line.player,
        line.points,
        line.tiebreak,
        line.cards,
        line.wins,
        line.draws,
        line.losses,
        line.is_eliminated,
        line.is_dropped,
    )
