"""Planning a Swiss round (pure, deterministic).

A fixed number of rounds (default ceil(log2 N)); round 1 pairs the top half of the seeds
against the bottom half, later rounds pair neighbours in the standings with no rematch,
looking ahead so the rounds left can be paired without one too (a rematch only when no
rematch-free pairing is found, each search within a budget of work shared by the whole
round: `swiss_search`); dropped players are not paired (the state machine drops a player who
forfeits as a no-show); with an odd count of players still in, the lowest-ranked of them who
has not had a bye gets one (a bye is worth a win). A field of over 32 players set to over 60%
of its most rounds takes each round whole from the round robin's schedule instead (the
unplayed one that best pairs equal points), rematch-free by construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .points_tally import Tally, buchholz, rank_scored, tally_rounds
from .round_robin import circle_round
from .swiss_search import (
    AHEAD_BUDGET,
    SEARCH_BUDGET,
    can_finish,
    pair_at_last,
    pair_plainly,
    rematch_free_pairings,
)
from .tournament_errors import MatchId, PlayerId
from .tournament_model import FormatRules, Pairing, PlayedRound, RoundPlan

__all__ = ["plan_swiss", "swiss_round_count"]

_SCHEDULE_MIN_PLAYERS = 33
"""A Swiss of at least this many players set to many rounds (`_SCHEDULE_MIN_SHARE`) takes
its rounds from the round robin's schedule (`_follows_schedule`). With random results the
search paired every smaller field measured without a rematch (10 to 20 Swisses each of 24,
28 and 32 players over N - 1 rounds)."""

_SCHEDULE_MIN_SHARE = 0.6
"""The share of its most rounds (N - 1, N when N is odd) past which such a Swiss does. Below
it the search paired 10 Swisses each of 48 players over 28 rounds and 64 over 37 without a
rematch; above it, 1 of 10 of 64 players over 48 rounds had rematches."""

_BYE_SEAT = PlayerId("")
"""The seat a Swiss player with a bye faces when looking ahead (no player id is empty)."""


def swiss_round_count(rules: FormatRules, player_count: int) -> int:
    """Rounds of a Swiss: as set, else ceil(log2 N); never more than a rematch-free schedule."""
    wanted = rules.swiss_rounds or max(1, math.ceil(math.log2(player_count)))
    most = player_count if player_count % 2 else player_count - 1
    return max(1, min(wanted, most))


def plan_swiss(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> RoundPlan | None:
    if len(history) >= swiss_round_count(rules, len(seeds)):
        return None
    active = [p for p in seeds if p not in dropped]
    if len(active) < 2:
        return None
    number = len(history) + 1
    tally = tally_rounds(seeds, history)
    if not history:
        order = list(active)
    else:
        order = [
            s.player for s in rank_scored(tally, seeds, dropped, buchholz) if s.player in active
        ]
    met = {frozenset((a, b)) for a in seeds for b in tally[a].opponents}
    had_bye = {p for p in seeds if tally[p].byes}
    if _follows_schedule(rules, len(seeds)):
        scheduled, sits_out = _pair_by_schedule(
            seeds, order, tally, met, had_bye, first=not history
        )
        return _swiss_plan(number, seeds, scheduled, sits_out)

    candidates: list[PlayerId | None] = [None]
    if len(order) % 2:
        # Those without a bye, lowest-ranked first; when all have had one, all of them,
        # the fewest byes first: either way passed up when the rest cannot be paired.
        fresh = [p for p in reversed(order) if p not in had_bye]
        byes = {p: tally[p].byes for p in order}
        fewest_byes: list[PlayerId] = sorted(reversed(order), key=byes.__getitem__)
        candidates = list(fresh) or list(fewest_byes)
    # The bye is a seat too: meeting it twice is a second bye.
    met |= {frozenset((p, _BYE_SEAT)) for p in had_bye}
    seats = [*order, _BYE_SEAT] if len(order) % 2 else order
    rounds_left = swiss_round_count(rules, len(seeds)) - number
    ahead = [AHEAD_BUDGET]  # for every look ahead of this round together
    search = [SEARCH_BUDGET]  # for every candidate for the bye together
    pairs: list[tuple[PlayerId, PlayerId]] | None = None
    bye: PlayerId | None = None
    first: tuple[PlayerId | None, list[tuple[PlayerId, PlayerId]]] | None = None
    for candidate in candidates:
        rest = [p for p in order if p != candidate]
        if not history:  # a folded first round leaves a rematch-free schedule possible
            pairs, bye = _fold(rest), candidate
            break
        for option in rematch_free_pairings(rest, met, search):
            first = first or (candidate, option)
            taken = {frozenset(pair) for pair in option}
            if candidate is not None:
                taken.add(frozenset((candidate, _BYE_SEAT)))
            # Pairing neighbours greedily can leave the players who have not met unpairable
            # a few rounds on (six players, four rounds: a fifth of the time): take the best
            # pairing after which the rounds left can still be played without a rematch.
            if can_finish(seats, met | taken, rounds_left, ahead) is not False:
                pairs, bye = option, candidate
                break
        if pairs is not None:
            break
    if pairs is None and first is not None:  # none leaves a way to the end without a rematch
        bye, pairs = first
    if pairs is None:  # none found in standings order: the hardest to pair first, or rematches
        pairs, bye = pair_at_last(order, candidates, met)
    return _swiss_plan(number, seeds, pairs, bye)


def _swiss_plan(
    number: int,
    seeds: Sequence[PlayerId],
    pairs: Sequence[tuple[PlayerId, PlayerId]],
    bye: PlayerId | None,
) -> RoundPlan:
    seed_of = {p: i for i, p in enumerate(seeds)}
    pairings = tuple(
        Pairing(MatchId(f"R{number}-{i + 1}"), tuple(sorted(pair, key=seed_of.__getitem__)))
        for i, pair in enumerate(pairs)
    )
    return RoundPlan(pairings, () if bye is None else (bye,))


def _follows_schedule(rules: FormatRules, player_count: int) -> bool:
    """Whether a Swiss takes its rounds from the circle method's schedule: a field of at
    least `_SCHEDULE_MIN_PLAYERS` set to more rounds than `_SCHEDULE_MIN_SHARE` of the most
    it can play. There the search, bounded, can leave the last rounds with no rematch-free
    pairing, while any order of the schedule's rounds is rematch-free to the last one."""
    most = player_count if player_count % 2 else player_count - 1
    rounds = swiss_round_count(rules, player_count)
    return player_count >= _SCHEDULE_MIN_PLAYERS and rounds > most * _SCHEDULE_MIN_SHARE


def _pair_by_schedule(
    seeds: Sequence[PlayerId],
    order: Sequence[PlayerId],
    tally: Mapping[PlayerId, Tally],
    met: set[frozenset[PlayerId]],
    had_bye: set[PlayerId],
    *,
    first: bool,
) -> tuple[list[tuple[PlayerId, PlayerId]], PlayerId | None]:
    """A Swiss round taken whole from the round robin's schedule (`circle_round`): of its
    rounds not yet played, the one that best pairs players of equal points (the least
    points apart in all, then the nearest in the standings; in round 1, nearest to the top
    half against the bottom half), the bye (odd count) going to its dummy seat's partner.
    Since no two of the schedule's rounds share a pair, the rounds so taken never make a
    rematch nor a second bye.

    Players the chosen round cannot seat (their partner in it dropped out, or they have met
    since, or the bye would be a second one) are paired among themselves as an ordinary
    Swiss round would be; that only happens after a drop-out (or when earlier rounds were
    not paired from the schedule: a Swiss started by an older version)."""
    rank = {p: i for i, p in enumerate(order)}
    lowest = min((tally[p].points for p in order), default=0.0)
    half = len(order) // 2
    rounds = len(seeds) - 1 + len(seeds) % 2
    best: tuple[tuple[int, float, int, int], list[tuple[PlayerId | None, PlayerId | None]]]
    best = ((len(seeds), 0.0, 0, 0), [])
    for index in range(rounds):
        schedule = circle_round(seeds, index)
        clashes, apart, distance = 0, 0.0, 0
        for a, b in schedule:
            if a is not None and b is not None and a in rank and b in rank:
                clashes += frozenset((a, b)) in met
                apart += abs(tally[a].points - tally[b].points)
                gap = abs(rank[a] - rank[b])
                distance += abs(gap - half) if first else gap
            elif (a is None) != (b is None) and (alone := a or b) in rank:
                assert alone is not None
                clashes += alone in had_bye
                apart += tally[alone].points - lowest
                distance += len(order) - 1 - rank[alone]
        key = (clashes, apart, distance, index)
        if index == 0 or key < best[0]:
            best = (key, schedule)
    pairs: list[tuple[PlayerId, PlayerId]] = []
    bye: PlayerId | None = None
    left: list[PlayerId] = []
    for a, b in best[1]:
        seated = [p for p in (a, b) if p is not None and p in rank]
        if len(seated) == 2 and frozenset(seated) not in met:
            pairs.append((seated[0], seated[1]))
        elif len(seated) == 1 and None in (a, b) and seated[0] not in had_bye:
            bye = seated[0]
        else:
            left.extend(seated)
    if len(left) % 2 and bye is not None:
        left.append(bye)
        bye = None
    if left:
        rest, extra = pair_plainly(sorted(left, key=rank.__getitem__), met, had_bye)
        pairs += rest
        bye = bye if extra is None else extra
    return pairs, bye


def _fold(order: Sequence[PlayerId]) -> list[tuple[PlayerId, PlayerId]]:
    half = len(order) // 2
    return [(order[i], order[i + half]) for i in range(half)]
