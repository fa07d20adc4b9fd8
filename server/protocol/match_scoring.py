"""Scoring a tournament match from its races (pure, deterministic).

Matches are best-of-N races (`FormatRules.best_of`): first to ceil(N/2) race wins. A race whose
winners tie gives nobody a win. After N races with wins level: a draw in Swiss and round robin;
in elimination formats up to two sudden-death races, then more cards on foundations over the
match, then the better seed. A heat plays exactly N races and ranks by the sum of finishing
places, then cards on foundations, then seed. Forfeits rank below everyone who played.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .tournament_errors import MatchId, PlayerId
from .tournament_model import FormatRules, MatchOutcome, RaceResult

__all__ = ["SUDDEN_DEATH_RACES", "race_wins", "score_match"]

SUDDEN_DEATH_RACES = 2
"""Extra races an elimination match may play when wins are level after best-of-N."""


def race_wins(players: Sequence[PlayerId], races: Iterable[RaceResult]) -> dict[PlayerId, int]:
    """Each player's race wins in a head-to-head match: a race whose best place is shared
    counts for nobody."""
    wins = {p: 0 for p in players}
    for race in races:
        winner = race.sole_winner
        if winner in wins:
            wins[winner] += 1
    return wins


def score_match(
    rules: FormatRules,
    match_id: MatchId,
    players: Sequence[PlayerId],
    races: Sequence[RaceResult],
    *,
    seeds: Sequence[PlayerId],
    forfeited: Iterable[PlayerId] = (),
) -> MatchOutcome | None:
    """The match's outcome, or None while it needs another race."""
    # Only the match's players' seeds (a view scores every match of the tournament: a map of
    # all the seeds per match made a 256-player Swiss's view cost ~100 ms).
    unseeded = len(seeds)
    seed_of = {p: seeds.index(p) if p in seeds else unseeded for p in players}
    gone = frozenset(forfeited) & set(players)
    playing = [p for p in players if p not in gone]
    cards = {p: sum(r.cards_of(p) for r in races) for p in players}
    quitters = sorted(gone, key=lambda p: seed_of[p])

    if not rules.is_head_to_head:
        if len(races) < rules.best_of and len(playing) > 1:
            return None
        places = {p: sum(r.place_of(p) for r in races) for p in playing}
        order = sorted(playing, key=lambda p: (places[p], -cards[p], seed_of[p]))
        return MatchOutcome(match_id, (*order, *quitters), False, gone, cards)

    wins = race_wins(players, races)
    if gone:
        return MatchOutcome(match_id, (*playing, *quitters), False, gone, cards, wins)

    def better_first(a: PlayerId, b: PlayerId) -> tuple[PlayerId, PlayerId]:
        key_a = (-wins[a], -cards[a], seed_of[a])
        key_b = (-wins[b], -cards[b], seed_of[b])
        return (a, b) if key_a <= key_b else (b, a)

    a, b = players
    first, second = better_first(a, b)
    if wins[first] >= rules.wins_needed:
        return MatchOutcome(match_id, (first, second), False, gone, cards, wins)
    if len(races) < rules.best_of:
        return None
    if wins[a] != wins[b]:
        return MatchOutcome(match_id, (first, second), False, gone, cards, wins)
    if rules.allows_draws:
        by_seed = tuple(sorted(players, key=lambda p: seed_of[p]))
        return MatchOutcome(match_id, by_seed, True, gone, cards, wins)
    if len(races) < rules.best_of + SUDDEN_DEATH_RACES:
        return None
    return MatchOutcome(match_id, (first, second), False, gone, cards, wins)
