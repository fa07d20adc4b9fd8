"""Swisses of big fields set to many rounds: no rematch and no second bye to the last round,
whether the rounds come from the search (up to 32 players, or up to 60% of the most rounds)
or from the round robin's schedule (beyond)."""

from __future__ import annotations

import random

import pytest
from swiss_play import played_at_random

from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_errors import PlayerId
from solrace.server.protocol.tournament_model import Format, FormatRules, PlayedRound
from tests.server.test_audit_tournament_swiss import play_swiss, players, rematches


def byes_of(history: list[PlayedRound]) -> list[PlayerId]:
    return [p for played in history for p in played.plan.byes]


@pytest.mark.parametrize(("count", "rounds", "seed"), [(32, 31, 1), (32, 31, 2), (64, 63, 0)])
def test_as_many_rounds_as_an_even_field_allows_have_no_rematch(
    count: int, rounds: int, seed: int
) -> None:
    """N - 1 rounds: the search that paired neighbours when it found nothing paired the last
    rounds of 32 players with 51 and 101 rematches (these results), 64 players with 4,316
    in five such Swisses."""
    rules = FormatRules(Format.SWISS, swiss_rounds=rounds)
    history = play_swiss(rules, players(count), random.Random(seed))
    assert len(history) == rounds
    assert rematches(history) == []
    assert byes_of(history) == []


def test_a_big_field_over_60_percent_of_its_most_rounds_follows_the_schedule() -> None:
    """64 players over 48 rounds: the search (even with its second pass, hardest player
    first) left these results 8 rematches; the schedule leaves none."""
    rules = FormatRules(Format.SWISS, swiss_rounds=48)
    history = play_swiss(rules, players(64), random.Random(0))
    assert len(history) == 48
    assert rematches(history) == []


def test_an_odd_field_over_as_many_rounds_as_players_sits_each_player_out_once() -> None:
    """33 players, 33 rounds: everyone meets everyone once and has one bye (36 rematches
    with the search)."""
    rules = FormatRules(Format.SWISS, swiss_rounds=33)
    history = play_swiss(rules, players(33), random.Random(1))
    assert len(history) == 33
    assert rematches(history) == []
    assert sorted(byes_of(history)) == sorted(players(33))


def test_a_search_in_standings_order_that_finds_nothing_is_followed_by_one_hardest_first() -> None:
    """32 players over 16 rounds (half the most, so the search pairs them): with these
    results the search in standings order found no rematch-free pairing for some round in
    its 20,000 steps and paired neighbours, 10 rematches in all. Pairing first the player
    with the fewest opponents left to meet finds one."""
    rules = FormatRules(Format.SWISS, swiss_rounds=16)
    history = play_swiss(rules, players(32), random.Random(2))
    assert len(history) == 16
    assert rematches(history) == []


def play_with_drop_outs(
    rules: FormatRules, seeds: list[PlayerId], rng: random.Random, leaving: dict[int, PlayerId]
) -> tuple[list[PlayedRound], list[PlayerId]]:
    """Every round to the end, with random results; `leaving[r]` drops out after round r."""
    history: list[PlayedRound] = []
    dropped: list[PlayerId] = []
    while (plan := plan_round(rules, seeds, history, dropped)) is not None:
        seated = [p for pairing in plan.pairings for p in pairing.players] + list(plan.byes)
        assert sorted(seated) == sorted(p for p in seeds if p not in dropped)
        assert len(plan.byes) == len(seated) % 2
        history.append(played_at_random(rules, seeds, plan, rng))
        if len(history) in leaving:
            dropped.append(leaving[len(history)])
    return history, dropped


def test_a_scheduled_swiss_seats_everyone_still_in_once_after_drop_outs() -> None:
    """One drop-out from 34 players over 33 rounds: each round, the player whose scheduled
    opponent left gets the bye (the field is odd from then on), a different one each round,
    and nobody meets anybody twice."""
    rules = FormatRules(Format.SWISS, swiss_rounds=33)
    seeds = players(34)
    history, _ = play_with_drop_outs(rules, seeds, random.Random(3), {5: seeds[7]})
    assert len(history) == swiss_round_count(rules, 34) == 33
    assert rematches(history) == []
    byes = byes_of(history)
    assert len(byes) == 28 and len(set(byes)) == 28
    # More drop-outs: every round still seats each player still in once (checked as it is
    # played), with at most one bye.
    many = {3: seeds[0], 4: seeds[33], 9: seeds[12], 10: seeds[13], 20: seeds[5]}
    history, dropped = play_with_drop_outs(rules, seeds, random.Random(4), many)
    assert len(dropped) == 5 and len(history) == 33
