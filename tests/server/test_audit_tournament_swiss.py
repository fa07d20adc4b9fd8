"""Audit of Swiss pairing: no rematch and no second bye, whatever the results, in every round
a rematch-free schedule allows (up to N-1 rounds, N when N is odd)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    Format,
    FormatRules,
    MatchOutcome,
    PlayedRound,
    RaceResult,
)


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def play_swiss(
    rules: FormatRules, seeds: list[PlayerId], rng: random.Random | None
) -> list[PlayedRound]:
    """Every round to the end. With `rng`, each race is won by either player or tied (a
    draw); without, the worse seed wins every race."""
    history: list[PlayedRound] = []
    while (plan := plan_round(rules, seeds, history)) is not None:
        outcomes: dict[MatchId, MatchOutcome] = {}
        for pairing in plan.pairings:
            better, worse = pairing.players
            if rng is None:
                race = RaceResult.from_order([worse, better])
            else:
                groups = [[[better], [worse]], [[worse], [better]], [[better, worse]]]
                race = RaceResult.from_groups(rng.choice(groups), {better: 9, worse: 9})
            done = score_match(rules, pairing.match_id, pairing.players, [race], seeds=seeds)
            assert done is not None
            outcomes[pairing.match_id] = done
        history.append(PlayedRound(plan, outcomes))
    return history


def rematches(history: list[PlayedRound]) -> list[frozenset[PlayerId]]:
    seen: set[frozenset[PlayerId]] = set()
    again = []
    for played in history:
        for pairing in played.plan.pairings:
            pair = frozenset(pairing.players)
            if pair in seen:
                again.append(pair)
            seen.add(pair)
    return again


def test_six_players_five_rounds_with_the_underdog_winning_every_race_meet_once_each() -> None:
    """Pairing neighbours round by round left, after three rounds, the pairs not yet met as
    two triangles: round 4 then repeated round 3 whole."""
    rules = FormatRules(Format.SWISS, swiss_rounds=5)
    history = play_swiss(rules, players(6), None)
    assert len(history) == 5
    assert rematches(history) == []


@given(count=st.integers(3, 12), rounds=st.integers(2, 12), seed=st.integers(0, 10_000))
def test_no_rematch_and_no_second_bye_in_any_schedule_that_allows_it(
    count: int, rounds: int, seed: int
) -> None:
    rules = FormatRules(Format.SWISS, swiss_rounds=rounds)
    history = play_swiss(rules, players(count), random.Random(seed))
    assert len(history) == swiss_round_count(rules, count)
    assert rematches(history) == []
    byes = [p for played in history for p in played.plan.byes]
    assert len(byes) == len(set(byes)) == (len(history) if count % 2 else 0)
