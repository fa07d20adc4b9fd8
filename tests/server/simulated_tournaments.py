"""Tournaments of the pure core played from the first round to the last, each race's
finishing order chosen by the test, for the tests of pairing, Swiss, round robin, heats and
their standings."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    FormatRules,
    MatchOutcome,
    PlayedRound,
    RaceResult,
    RoundPlan,
)

Chooser = Callable[[int, tuple[PlayerId, ...]], list[PlayerId]]
"""Given the round number and a match's players, the finishing order of one race."""


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def by_seed(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
    return sorted(match, key=lambda p: int(p[1:]))


def seeded_random(seed: int) -> Chooser:
    rng = random.Random(seed)

    def choose(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
        order = list(match)
        rng.shuffle(order)
        return order

    return choose


def outcome_of(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    plan: RoundPlan,
    number: int,
    choose: Chooser,
) -> PlayedRound:
    outcomes: dict[MatchId, MatchOutcome] = {}
    for pairing in plan.pairings:
        races: list[RaceResult] = []
        while (
            done := score_match(rules, pairing.match_id, pairing.players, races, seeds=seeds)
        ) is None:
            order = choose(number, pairing.players)
            races.append(RaceResult.from_order(order, {p: 52 - 5 * i for i, p in enumerate(order)}))
        outcomes[pairing.match_id] = done
    return PlayedRound(plan, outcomes)


def simulate(
    rules: FormatRules,
    count: int,
    choose: Chooser = by_seed,
    dropped_after: dict[int, list[PlayerId]] | None = None,
) -> tuple[list[PlayerId], list[PlayedRound], list[PlayerId]]:
    seeds = players(count)
    history: list[PlayedRound] = []
    dropped: list[PlayerId] = []
    for _ in range(100):
        plan = plan_round(rules, seeds, history, dropped)
        if plan is None:
            return seeds, history, dropped
        history.append(outcome_of(rules, seeds, plan, len(history) + 1, choose))
        dropped += (dropped_after or {}).get(len(history), [])
    raise AssertionError("the tournament never finished")


def matches_of(history: Sequence[PlayedRound]) -> list[tuple[PlayerId, ...]]:
    return [p.players for played in history for p in played.plan.pairings]


def assert_nobody_twice_per_round(history: Sequence[PlayedRound]) -> None:
    for played in history:
        seen = [p for pairing in played.plan.pairings for p in pairing.players]
        seen += played.plan.byes
        assert len(seen) == len(set(seen)), played.plan
