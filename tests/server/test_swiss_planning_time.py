"""Planning a Swiss round runs on the event loop (in the change that ends the round before):
its searches share bounded budgets, so a round of the biggest fields a Swiss allows is
planned in tens of milliseconds even when no rematch-free pairing is found, or only late."""

from __future__ import annotations

import random
import time

from solrace.server.protocol.pairing import (
    Format,
    FormatRules,
    MatchOutcome,
    Pairing,
    PlayedRound,
    RaceResult,
    RoundPlan,
    plan_round,
    score_match,
    swiss_round_count,
)
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_view import largest_field

CPU_LIMIT_S = 0.2
"""Generous: each round below takes ~70 ms at most on 2 shared cores; with a budget for
each candidate for the bye and a search hardest first for each, the first test's worst
round took 8 to 16 s (0.4 s already in round 27) and the second's 0.3 to 0.8 s."""


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def played(
    rules: FormatRules, seeds: list[PlayerId], plan: RoundPlan, rng: random.Random
) -> PlayedRound:
    """`plan` played: each race won by either player at random."""
    outcomes: dict[MatchId, MatchOutcome] = {}
    for pairing in plan.pairings:
        order = list(pairing.players)
        rng.shuffle(order)
        race = RaceResult.from_order(order, {p: rng.randint(0, 52) for p in order})
        done = score_match(rules, pairing.match_id, pairing.players, [race], seeds=seeds)
        assert done is not None
        outcomes[pairing.match_id] = done
    return PlayedRound(plan, outcomes)


def planned_within_limit(
    rules: FormatRules, seeds: list[PlayerId], history: list[PlayedRound]
) -> RoundPlan | None:
    started = time.process_time()
    plan = plan_round(rules, seeds, history)
    spent = time.process_time() - started
    assert spent < CPU_LIMIT_S, f"round {len(history) + 1} took {spent:.2f} s of CPU"
    return plan


def test_no_round_of_the_biggest_odd_field_over_31_rounds_holds_the_loop() -> None:
    """133 players (the most a Swiss of 31 rounds takes) over 31 rounds, so the search
    pairs them: late rounds in standings order found no rematch-free pairing within the
    search's budget, which each of the ~100 candidates for the bye had whole (8 to 16 s
    for a round). They share one now, then the search hardest first finds one."""
    rules = FormatRules(Format.SWISS, swiss_rounds=31)
    assert largest_field(rules, 256) == 133
    seeds = players(133)
    rng = random.Random(0)
    history: list[PlayedRound] = []
    while (plan := planned_within_limit(rules, seeds, history)) is not None:
        history.append(played(rules, seeds, plan, rng))
    assert len(history) == 31


def test_a_round_with_no_rematch_free_pairing_is_planned_quickly() -> None:
    """88 players in two groups of 43 and 45: in each of 45 rounds every player of the
    first met one of the second, so each has met the whole other group. The players left
    to meet are two odd groups: no pairing without a rematch exists. Every search runs
    out, then the nearest pairing with as few rematches as it finds: one here."""
    seeds = players(88)
    first, second = seeds[:43], seeds[43:]
    rules = FormatRules(Format.SWISS, swiss_rounds=46)
    assert largest_field(rules, 256) >= 88 and swiss_round_count(rules, 88) == 46
    history: list[PlayedRound] = []
    rng = random.Random(1)
    for number in range(1, 46):
        pairs = [(a, second[(i + number) % len(second)]) for i, a in enumerate(first)]
        seated = {p for pair in pairs for p in pair}
        crossed = RoundPlan(
            tuple(Pairing(MatchId(f"R{number}-{i + 1}"), pair) for i, pair in enumerate(pairs)),
            tuple(p for p in second if p not in seated),
        )
        history.append(played(rules, seeds, crossed, rng))
    plan = planned_within_limit(rules, seeds, history)
    assert plan is not None and plan.byes == ()
    assert sorted(p for pairing in plan.pairings for p in pairing.players) == sorted(seeds)
    met = {frozenset(pairing.players) for rnd in history for pairing in rnd.plan.pairings}
    assert sum(frozenset(pairing.players) in met for pairing in plan.pairings) == 1
