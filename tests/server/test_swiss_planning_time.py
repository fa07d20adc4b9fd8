"""Planning a Swiss round runs on the event loop (in the change that ends the round before):
its searches share bounded budgets of work, so a round of the biggest fields a Swiss allows is
planned with a bounded number of search steps even when no rematch-free pairing is found, or
only late. The steps are counted, not timed: a round's CPU time is measured by
`bench/swiss_planning.py` (bench/README.md, "Planning a Swiss round"), ~70 ms at worst."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest
from swiss_play import played_at_random

from solrace.server.protocol import swiss, swiss_search
from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    Format,
    FormatRules,
    Pairing,
    PlayedRound,
    RoundPlan,
)
from solrace.server.protocol.tournament_view import largest_field

STEP_LIMIT = 20_000
"""Steps of the search in standings order (`rematch_free_pairings`, look-ahead included)
allowed to one round: its shared budgets allow ~12,000. With a budget for each candidate for
the bye, the first test's late rounds took millions (8 to 16 s of CPU for one round)."""


class StepCount:
    """Counts the steps of `rematch_free_pairings` (each call, the recursive ones too), where
    the Swiss planning calls it and where the searches do."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = 0
        search = swiss_search.rematch_free_pairings

        def counted(
            order: Sequence[PlayerId], met: set[frozenset[PlayerId]], budget: list[int]
        ) -> Iterator[list[tuple[PlayerId, PlayerId]]]:
            self.steps += 1
            yield from search(order, met, budget)

        monkeypatch.setattr(swiss, "rematch_free_pairings", counted)
        monkeypatch.setattr(swiss_search, "rematch_free_pairings", counted)


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def planned_within_limit(
    count: StepCount, rules: FormatRules, seeds: list[PlayerId], history: list[PlayedRound]
) -> RoundPlan | None:
    count.steps = 0
    plan = plan_round(rules, seeds, history)
    assert count.steps <= STEP_LIMIT, f"round {len(history) + 1} took {count.steps} steps"
    return plan


def test_no_round_of_the_biggest_odd_field_over_31_rounds_holds_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """133 players (the most a Swiss of 31 rounds takes) over 31 rounds, so the search
    pairs them: late rounds in standings order found no rematch-free pairing within the
    search's budget, which each of the ~100 candidates for the bye had whole (8 to 16 s
    for a round). They share one now, then the search hardest first finds one."""
    rules = FormatRules(Format.SWISS, swiss_rounds=31)
    assert largest_field(rules, 256) == 133
    seeds = players(133)
    rng = random.Random(0)
    history: list[PlayedRound] = []
    count = StepCount(monkeypatch)
    while (plan := planned_within_limit(count, rules, seeds, history)) is not None:
        history.append(played_at_random(rules, seeds, plan, rng))
    assert len(history) == 31


def test_a_round_with_no_rematch_free_pairing_is_planned_quickly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
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
        history.append(played_at_random(rules, seeds, crossed, rng))
    plan = planned_within_limit(StepCount(monkeypatch), rules, seeds, history)
    assert plan is not None and plan.byes == ()
    assert sorted(p for pairing in plan.pairings for p in pairing.players) == sorted(seeds)
    met = {frozenset(pairing.players) for rnd in history for pairing in rnd.plan.pairings}
    assert sum(frozenset(pairing.players) in met for pairing in plan.pairings) == 1
