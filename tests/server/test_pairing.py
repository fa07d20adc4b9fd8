"""Pairing, match scoring and standings of every format, as pure functions."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from solrace.server.protocol.pairing import (
    Format,
    FormatRules,
    MatchOutcome,
    PlayedRound,
    RaceResult,
    RoundPlan,
    compute_standings,
    plan_round,
    score_match,
    swiss_round_count,
)
from solrace.server.protocol.tournament_bracket import (
    MatchState,
    bracket_order,
    describe_bracket,
)
from solrace.server.protocol.tournament_errors import (
    InvalidResultError,
    InvalidSettingsError,
    MatchId,
    PairingError,
    PlayerId,
)
from solrace.server.protocol.tournament_messages import CreateTournament
from solrace.server.protocol.tournament_model import format_rules

Chooser = Callable[[int, tuple[PlayerId, ...]], list[PlayerId]]
"""Given the round number and a match's players, the finishing order of one race."""


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def by_seed(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
    return sorted(match, key=lambda p: int(p[1:]))


def by_reverse_seed(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
    return sorted(match, key=lambda p: -int(p[1:]))


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


# --- best-of-N --------------------------------------------------------------------------------


def test_best_of_three_is_first_to_two() -> None:
    a, b = players(2)
    rules = FormatRules(Format.SINGLE_ELIMINATION, best_of=3)
    mid = MatchId("m")
    a_wins, b_wins = RaceResult.from_order([a, b]), RaceResult.from_order([b, a])
    assert score_match(rules, mid, (a, b), [a_wins], seeds=[a, b]) is None
    assert score_match(rules, mid, (a, b), [a_wins, b_wins], seeds=[a, b]) is None
    done = score_match(rules, mid, (a, b), [b_wins, b_wins], seeds=[a, b])
    assert done is not None
    assert (done.winner, done.loser) == (b, a)
    assert done.wins == {a: 0, b: 2}


def test_tied_race_counts_for_nobody_and_swiss_allows_a_draw() -> None:
    a, b = players(2)
    tie = RaceResult.from_groups([[a, b]], {a: 20, b: 20})
    swiss = FormatRules(Format.SWISS)
    done = score_match(swiss, MatchId("m"), (a, b), [tie], seeds=[a, b])
    assert done is not None and done.is_draw and done.winner is None
    assert done.points_of(a) == done.points_of(b) == 0.5


def test_elimination_plays_sudden_death_then_cards_then_seed() -> None:
    a, b = players(2)
    rules = FormatRules(Format.SINGLE_ELIMINATION)
    tie = RaceResult.from_groups([[a, b]], {a: 10, b: 11})
    mid = MatchId("m")
    assert score_match(rules, mid, (a, b), [tie], seeds=[a, b]) is None
    assert score_match(rules, mid, (a, b), [tie, tie], seeds=[a, b]) is None
    sudden = score_match(rules, mid, (a, b), [tie, RaceResult.from_order([b, a])], seeds=[a, b])
    assert sudden is not None and sudden.winner == b
    capped = score_match(rules, mid, (a, b), [tie, tie, tie], seeds=[a, b])
    assert capped is not None and capped.winner == b  # more cards on foundations
    even = RaceResult.from_groups([[a, b]])
    by_seed_ = score_match(rules, mid, (a, b), [even] * 3, seeds=[a, b])
    assert by_seed_ is not None and by_seed_.winner == a  # then the better seed


def test_forfeit_decides_at_once_and_a_double_forfeit_has_no_winner() -> None:
    a, b = players(2)
    rules = FormatRules(Format.SINGLE_ELIMINATION, best_of=5)
    one = score_match(rules, MatchId("m"), (a, b), [], seeds=[a, b], forfeited=[a])
    assert one is not None and one.winner == b and one.loser == a
    both = score_match(rules, MatchId("m"), (a, b), [], seeds=[a, b], forfeited=[a, b])
    assert both is not None and both.winner is None and both.loser is None


def test_heat_ranks_by_place_sum_then_cards_then_seed() -> None:
    a, b, c, d = players(4)
    rules = FormatRules(Format.HEATS, best_of=2)
    first = RaceResult.from_order([a, b, c, d], {a: 52, b: 40, c: 30, d: 1})
    second = RaceResult.from_order([b, a, d, c], {b: 52, a: 41, d: 33, c: 2})
    assert score_match(rules, MatchId("h"), (a, b, c, d), [first], seeds=[a, b, c, d]) is None
    done = score_match(rules, MatchId("h"), (a, b, c, d), [first, second], seeds=[a, b, c, d])
    assert done is not None
    assert done.ranking == (a, b, d, c)  # a and b on 3 places, a has more cards; c and d on 7
    gone = score_match(
        rules, MatchId("h"), (a, b, c, d), [first], seeds=[a, b, c, d], forfeited=[a]
    )
    assert gone is None
    gone = score_match(
        rules, MatchId("h"), (a, b, c, d), [first, second], seeds=[a, b, c, d], forfeited=[a]
    )
    assert gone is not None and gone.ranking[-1] == a


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


# --- Swiss ------------------------------------------------------------------------------------


def test_swiss_first_round_folds_and_later_rounds_avoid_rematches() -> None:
    rules = FormatRules(Format.SWISS)
    seeds, history, _ = simulate(rules, 6)
    assert len(history) == swiss_round_count(rules, 6) == 3
    first = [tuple(int(p[1:]) for p in m.players) for m in history[0].plan.pairings]
    assert first == [(1, 4), (2, 5), (3, 6)]
    met = [frozenset(m) for m in matches_of(history)]
    assert len(met) == len(set(met))
    table = compute_standings(rules, seeds, history)
    assert table[0].player == "p1" and table[0].points == 3.0


def test_swiss_bye_goes_to_the_lowest_ranked_player_without_one() -> None:
    rules = FormatRules(Format.SWISS, swiss_rounds=3)
    _, history, _ = simulate(rules, 5)
    byes = [played.plan.byes for played in history]
    assert byes[0] == (PlayerId("p5"),)
    assert all(len(b) == 1 for b in byes)
    assert len({b[0] for b in byes}) == 3  # never the same player twice


def test_swiss_tie_breaks_points_then_buchholz_then_cards_then_seed() -> None:
    rules = FormatRules(Format.SWISS, swiss_rounds=2)
    a, b, c, d = seeds = players(4)

    def won(mid: str, winner: PlayerId, loser: PlayerId, cards: int = 0) -> MatchOutcome:
        return MatchOutcome(MatchId(mid), (winner, loser), cards={winner: cards, loser: 0})

    plan1 = plan_round(rules, seeds, [])
    assert plan1 is not None
    # round 1: a beats c, d beats b; round 2: a beats d, b beats c
    r1 = PlayedRound(
        plan1, {MatchId("R1-1"): won("R1-1", a, c), MatchId("R1-2"): won("R1-2", d, b)}
    )
    plan2 = plan_round(rules, seeds, [r1])
    assert plan2 is not None
    assert [m.players for m in plan2.pairings] == [(a, d), (b, c)]
    r2 = PlayedRound(
        plan2, {MatchId("R2-1"): won("R2-1", a, d), MatchId("R2-2"): won("R2-2", b, c)}
    )
    table = compute_standings(rules, seeds, [r1, r2])
    assert [s.player for s in table] == [a, d, b, c]
    assert table[1].points == table[2].points == 1.0
    assert table[1].tiebreak == 3.0 and table[2].tiebreak == 1.0  # Buchholz d: a(2)+b(1)
    # equal points and Buchholz: cards on foundations, then seed
    r2b = PlayedRound(
        plan2, {MatchId("R2-1"): won("R2-1", d, a), MatchId("R2-2"): won("R2-2", c, b, cards=9)}
    )
    table = compute_standings(rules, seeds, [r1, r2b])
    assert [s.player for s in table] == [d, a, c, b]
    r2c = PlayedRound(
        plan2, {MatchId("R2-1"): won("R2-1", d, a), MatchId("R2-2"): won("R2-2", c, b)}
    )
    assert [s.player for s in compute_standings(rules, seeds, [r1, r2c])][1:3] == [a, c]


def test_swiss_never_pairs_a_dropped_player() -> None:
    rules = FormatRules(Format.SWISS, swiss_rounds=3)
    _, history, dropped = simulate(rules, 6, dropped_after={1: [PlayerId("p2")]})
    assert dropped == ["p2"]
    assert all("p2" not in m for m in matches_of(history[1:]))
    assert all(len(h.plan.byes) == 1 for h in history[1:])  # 5 left: one bye each round


@settings(max_examples=60, deadline=None)
@given(count=st.integers(2, 14), seed=st.integers(0, 10_000))
def test_swiss_property_no_rematch_and_distinct_byes(count: int, seed: int) -> None:
    rules = FormatRules(Format.SWISS)
    seeds, history, _ = simulate(rules, count, seeded_random(seed))
    assert_nobody_twice_per_round(history)
    met = [frozenset(m) for m in matches_of(history)]
    assert len(met) == len(set(met))
    byes = [b for h in history for b in h.plan.byes]
    assert len(byes) == len(set(byes)) == (len(history) if count % 2 else 0)
    table = compute_standings(rules, seeds, history)
    assert sum(s.points for s in table) == len(met) + len(byes)


# --- round robin ------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 3, 4, 5, 6, 7, 8])
def test_round_robin_everyone_meets_everyone_once(count: int) -> None:
    rules = FormatRules(Format.ROUND_ROBIN)
    seeds, history, _ = simulate(rules, count)
    assert len(history) == (count if count % 2 else count - 1)
    assert_nobody_twice_per_round(history)
    met = sorted(tuple(sorted(m)) for m in matches_of(history))
    assert met == sorted(tuple(sorted(pair)) for pair in itertools.combinations(seeds, 2))
    byes = Counter(b for h in history for b in h.plan.byes)
    assert byes == (Counter(seeds) if count % 2 else Counter())
    table = compute_standings(rules, seeds, history)
    assert [s.player for s in table] == seeds  # the better seed wins every match


def test_round_robin_opponent_of_a_dropped_player_gets_a_bye() -> None:
    rules = FormatRules(Format.ROUND_ROBIN)
    _, history, _ = simulate(rules, 4, dropped_after={1: [PlayerId("p4")]})
    assert len(history) == 3
    for played in history[1:]:
        assert len(played.plan.pairings) == 1 and len(played.plan.byes) == 1


def test_round_robin_sonneborn_berger_breaks_equal_points() -> None:
    rules = FormatRules(Format.ROUND_ROBIN)

    def cycle(_: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
        beats = {("p1", "p2"), ("p2", "p3"), ("p3", "p1")}
        a, b = match
        return [a, b] if (a, b) in beats else [b, a]

    seeds, history, _ = simulate(rules, 3, cycle)
    table = compute_standings(rules, seeds, history)
    assert {s.points for s in table} == {2.0}  # one win and one bye each
    assert [s.player for s in table] == seeds  # equal SB and cards: seed decides


# --- heats ------------------------------------------------------------------------------------


def test_heats_of_eleven_snake_seed_and_reach_a_final() -> None:
    rules = FormatRules(Format.HEATS, heat_size=4, advance_per_heat=2)
    seeds, history, _ = simulate(rules, 11)
    sizes = [sorted(len(p.players) for p in h.plan.pairings) for h in history]
    assert sizes == [[3, 4, 4], [3, 3], [4]]
    assert history[0].plan.pairings[0].players == tuple(PlayerId(f"p{i}") for i in (1, 6, 7))
    assert history[-1].plan.pairings[0].match_id == "R3-F"
    table = compute_standings(rules, seeds, history)
    assert [(s.rank, s.player) for s in table[:4]] == [(1, "p1"), (2, "p2"), (3, "p3"), (4, "p4")]
    assert table[4].rank == table[5].rank == 5  # both third in a round-2 heat


def test_heats_always_eliminate_someone() -> None:
    rules = FormatRules(Format.HEATS, heat_size=3, advance_per_heat=5)
    seeds, history, _ = simulate(rules, 7)
    counts = [sum(len(p.players) for p in h.plan.pairings) for h in history]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts)
    assert compute_standings(rules, seeds, history)[0].player == "p1"


def test_small_field_is_a_single_final_heat() -> None:
    rules = FormatRules(Format.HEATS, heat_size=8)
    _, history, _ = simulate(rules, 5)
    assert len(history) == 1 and len(history[0].plan.pairings[0].players) == 5


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
