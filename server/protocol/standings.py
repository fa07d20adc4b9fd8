"""A tournament's live standings, for every format (pure, deterministic).

The elimination formats' come from the bracket (`tournament_bracket`), Swiss and round robin's
from points and a tiebreak (`points_tally`); heats rank the players still in first, then by the
round each player reached and his place in the last heat he raced, then by seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .heats import heat_advancers, is_final
from .pairing import plan_round
from .points_tally import buchholz, rank_scored, sonneborn_berger, tally_rounds
from .ranking import competition_ranks
from .tournament_bracket import elimination_standings
from .tournament_errors import PlayerId
from .tournament_model import Format, FormatRules, PlayedRound, Standing

__all__ = ["compute_standings"]


def compute_standings(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: Iterable[PlayerId] = (),
) -> list[Standing]:
    """Live standings, best first; once the tournament is over the first line still in (not
    dropped, not eliminated) is the champion (`Tournament.champion`)."""
    out = frozenset(dropped)
    if rules.format in (Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION):
        return elimination_standings(rules, seeds, history, out)
    if rules.format is Format.HEATS:
        return _heat_standings(rules, seeds, history, out)
    tiebreak = buchholz if rules.format is Format.SWISS else sonneborn_berger
    return rank_scored(tally_rounds(seeds, history), seeds, out, tiebreak)


def _heat_standings(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> list[Standing]:
    reached = {p: (0, 0) for p in seeds}  # (rounds raced, place in the last heat raced)
    alive = set(seeds)
    cards = {p: 0 for p in seeds}
    for number, played in enumerate(history, start=1):
        for player in played.plan.byes:
            reached[player] = (number, 1)
        for pairing in played.plan.pairings:
            outcome = played.outcomes[pairing.match_id]
            for place, player in enumerate(outcome.ranking, start=1):
                reached[player] = (number, place)
                cards[player] += outcome.cards.get(player, 0)
        alive = set() if is_final(played) else set(heat_advancers(rules, played))
    if history and is_final(history[-1]):
        final = history[-1].outcomes[history[-1].plan.pairings[0].match_id]
        alive = {final.ranking[0]} - final.forfeited
    seed_of = {p: i for i, p in enumerate(seeds)}
    finished = plan_round(rules, seeds, history, dropped) is None

    def key(p: PlayerId) -> tuple[int, int, int, int]:
        rounds, place = reached[p]
        survivor = p in alive and p not in dropped
        return (0 if survivor else 1, -rounds, place if finished or not survivor else 0, seed_of[p])

    order = sorted(seeds, key=key)
    ranks = competition_ranks([key(p)[:3] for p in order])  # the seed orders ties, breaks none
    return [
        Standing(
            rank,
            player,
            cards=cards[player],
            is_eliminated=player not in alive or player in dropped,
            is_dropped=player in dropped,
        )
        for player, rank in zip(order, ranks, strict=True)
    ]
