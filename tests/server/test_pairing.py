"""Planning a tournament's rounds (`plan_round`) and the elimination formats it hands to the
bracket; the format rules and race results they use."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament_bracket import MatchState, bracket_order, describe_bracket
from solrace.server.protocol.tournament_errors import (
    InvalidResultError,
    InvalidSettingsError,
    MatchId,
    PairingError,
    PlayerId,
)
from solrace.server.protocol.tournament_messages import CreateTournament
from solrace.server.protocol.tournament_model import (
    Format,
    FormatRules,
    PlayedRound,
    RaceResult,
    format_rules,
)
from tests.server.simulated_tournaments import (
    assert_nobody_twice_per_round,
    by_seed,
    players,
    seeded_random,
    simulate,
)


def by_reverse_seed(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
    return sorted(match, key=lambda p: -int(p[1:]))


def losses(history: Sequence[PlayedRound]) -> Counter[PlayerId]:
    lost: Counter[PlayerId] = Counter()
    for played in history:
        for outcome in played.outcomes.values():
            if outcome.loser is not None:
                lost[outcome.loser] += 1
    return lost


# --- rules and results ------------------------------------------------------------------------


def test_rules_are_validated_and_round_trip() -> None:
    with pytest.raises(InvalidSettingsError, match="best_of"):
        FormatRules(Format.SWISS, best_of=0).validate()
    with pytest.raises(InvalidSettingsError, match="heat_size"):
        FormatRules(Format.HEATS, heat_size=1).validate()
    rules = FormatRules(Format.HEATS, best_of=3, heat_size=6, advance_per_heat=3, swiss_rounds=4)
    stored = TypeAdapter(FormatRules)
    assert stored.validate_python(stored.dump_python(rules, mode="json")) == rules
    assert FormatRules(Format.SWISS, best_of=4).wins_needed == 2


def test_race_result_places_ties_and_validation() -> None:
    a, b, c, d = players(4)
    result = RaceResult.from_groups([[a], [b, c], [d]], {a: 52, b: 30, c: 30, d: 3})
    assert [result.place_of(p) for p in (a, b, c, d)] == [1, 2, 2, 4]
    assert result.sole_winner == a
    assert RaceResult.from_groups([[a, b]]).sole_winner is None
    stored = TypeAdapter(RaceResult)
    assert stored.validate_python(stored.dump_python(result, mode="json")) == result
    assert result.without([b]).placings == ((a,), (c,), (d,))
    result.validate([a, b, c, d])
    with pytest.raises(InvalidResultError, match="exactly the match's players"):
        result.validate([a, b, c])
    with pytest.raises(InvalidResultError, match="twice"):
        RaceResult.from_order([a, a]).validate([a])
    with pytest.raises(InvalidResultError, match="negative"):
        RaceResult.from_order([a, b], {a: -1}).validate([a, b])


def test_plan_refuses_fewer_than_two_players_or_duplicates() -> None:
    rules = FormatRules(Format.SWISS)
    with pytest.raises(PairingError, match="at least two"):
        plan_round(rules, players(1), [])
    with pytest.raises(PairingError, match="twice"):
        plan_round(rules, [PlayerId("x"), PlayerId("x")], [])


# --- single elimination -----------------------------------------------------------------------


def test_bracket_order_meets_top_seeds_last() -> None:
    assert bracket_order(2) == [1, 2]
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    for size in (4, 8, 16, 32):
        order = bracket_order(size)
        assert sorted(order) == list(range(1, size + 1))
        assert all(order[i] + order[i + 1] == size + 1 for i in range(0, size, 2))


def test_single_elimination_of_eight_seeds_one_against_eight() -> None:
    rules = FormatRules(Format.SINGLE_ELIMINATION)
    seeds, history, _ = simulate(rules, 8)
    first = [p.players for p in history[0].plan.pairings]
    assert [tuple(int(p[1:]) for p in m) for m in first] == [(1, 8), (4, 5), (2, 7), (3, 6)]
    assert len(history) == 3
    assert history[-1].plan.pairings[0].players == (PlayerId("p1"), PlayerId("p2"))
    table = compute_standings(rules, seeds, history)
    assert [(s.rank, s.player) for s in table][:2] == [(1, "p1"), (2, "p2")]
    assert [s.rank for s in table] == [1, 2, 3, 3, 5, 5, 5, 5]
    assert not table[0].is_eliminated and all(s.is_eliminated for s in table[1:])


def test_single_elimination_gives_byes_to_top_seeds() -> None:
    rules = FormatRules(Format.SINGLE_ELIMINATION)
    seeds = players(5)
    plan = plan_round(rules, seeds, [])
    assert plan is not None
    assert [p.players for p in plan.pairings] == [(PlayerId("p4"), PlayerId("p5"))]
    _, history, _ = simulate(rules, 5, by_reverse_seed)
    second = [p.players for p in history[1].plan.pairings]
    assert (PlayerId("p1"), PlayerId("p5")) in second  # p5 beat p4; p1 had a bye
    assert (PlayerId("p2"), PlayerId("p3")) in second


def test_third_place_match_is_played_with_the_final() -> None:
    rules = FormatRules(Format.SINGLE_ELIMINATION, third_place_match=True)
    seeds, history, _ = simulate(rules, 8)
    last = {p.match_id: p.players for p in history[-1].plan.pairings}
    assert set(last) == {"W3-1", "3P"}
    assert last[MatchId("3P")] == (PlayerId("p3"), PlayerId("p4"))
    table = compute_standings(rules, seeds, history)
    assert [(s.rank, s.player) for s in table[:4]] == [(1, "p1"), (2, "p2"), (3, "p3"), (4, "p4")]


def test_a_dropped_player_gives_a_walkover() -> None:
    rules = FormatRules(Format.SINGLE_ELIMINATION)
    seeds, history, dropped = simulate(rules, 8, dropped_after={1: [PlayerId("p4")]})
    assert history[1].plan.pairings[0].players == (PlayerId("p2"), PlayerId("p3"))
    assert len(history[1].plan.pairings) == 1  # p1 walks over the dropped p4
    table = compute_standings(rules, seeds, history, dropped)
    assert table[0].player == "p1"
    assert next(s for s in table if s.player == "p4").is_dropped


@settings(max_examples=60, deadline=None)
@given(count=st.integers(2, 20), seed=st.integers(0, 10_000), third=st.booleans())
def test_single_elimination_property(count: int, seed: int, third: bool) -> None:
    rules = FormatRules(Format.SINGLE_ELIMINATION, third_place_match=third)
    seeds, history, _ = simulate(rules, count, seeded_random(seed))
    assert_nobody_twice_per_round(history)
    assert len(history) == math.ceil(math.log2(count))
    table = compute_standings(rules, seeds, history)
    champion = table[0].player
    lost = losses(
        [PlayedRound(h.plan, {k: o for k, o in h.outcomes.items() if k != "3P"}) for h in history]
    )
    assert lost[champion] == 0
    assert all(lost[p] == 1 for p in seeds if p != champion)
    assert sum(1 for s in table if s.rank == 1) == 1


# --- double elimination -----------------------------------------------------------------------


def test_double_elimination_bracket_reset_when_the_losers_champion_wins() -> None:
    rules = FormatRules(Format.DOUBLE_ELIMINATION)

    def upset_in_final(number: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
        # favourites win until the grand final, where the losers-bracket player (p2) wins twice
        return by_reverse_seed(number, match) if number >= 4 else by_seed(number, match)

    seeds, history, _ = simulate(rules, 4, upset_in_final)
    ids = [p.match_id for played in history for p in played.plan.pairings]
    assert ids[-2:] == ["GF", "GF2"]
    table = compute_standings(rules, seeds, history)
    assert [(s.rank, s.player) for s in table[:2]] == [(1, "p2"), (2, "p1")]

    no_reset = FormatRules(Format.DOUBLE_ELIMINATION, bracket_reset=False)
    _, history, _ = simulate(no_reset, 4, upset_in_final)
    assert [p.match_id for p in history[-1].plan.pairings] == ["GF"]


def test_double_elimination_without_upset_has_no_reset() -> None:
    rules = FormatRules(Format.DOUBLE_ELIMINATION)
    seeds, history, _ = simulate(rules, 6)
    assert history[-1].plan.pairings[0].match_id == "GF"
    table = compute_standings(rules, seeds, history)
    assert [s.player for s in table[:4]] == ["p1", "p2", "p3", "p4"]


@settings(max_examples=60, deadline=None)
@given(count=st.integers(2, 17), seed=st.integers(0, 10_000), reset=st.booleans())
def test_double_elimination_everyone_but_the_champion_loses_twice(
    count: int, seed: int, reset: bool
) -> None:
    rules = FormatRules(Format.DOUBLE_ELIMINATION, bracket_reset=reset)
    seeds, history, _ = simulate(rules, count, seeded_random(seed))
    assert_nobody_twice_per_round(history)
    table = compute_standings(rules, seeds, history)
    champion = table[0].player
    lost = losses(history)
    assert lost[champion] <= 1
    grand_final = next(o for h in history for k, o in h.outcomes.items() if k == "GF")
    for player in seeds:
        if player == champion:
            continue
        beaten_once_in_final = not reset and player == grand_final.loser and lost[champion] == 1
        assert lost[player] == (1 if beaten_once_in_final else 2), player
    assert sum(1 for s in table if s.rank == 1) == 1
    bracket = describe_bracket(rules, seeds, history)
    assert all(m.state not in (MatchState.READY, MatchState.WAITING) for m in bracket)


def test_a_create_request_is_held_to_the_formats_the_server_offers() -> None:
    def request(fmt: str, **options: int) -> CreateTournament:
        return CreateTournament(admin_token="t", name="cup", game="klondike", format=fmt, **options)  # type: ignore[arg-type]

    rules = format_rules(request("heats", best_of=2, heat_size=6, advance_per_heat=3))
    assert rules == FormatRules(Format.HEATS, best_of=2, heat_size=6, advance_per_heat=3)
    # The rules could score a drawn round-robin match; a tournament created here has none.
    FormatRules(Format.ROUND_ROBIN, best_of=2).validate()  # no refusal
    for fmt in ("single_elimination", "double_elimination", "swiss", "round_robin"):
        with pytest.raises(InvalidSettingsError, match="best_of 4: a head-to-head match needs"):
            format_rules(request(fmt, best_of=4))
        assert format_rules(request(fmt, best_of=5)).best_of == 5
