"""Swiss rounds: the first folds, later ones avoid rematches, byes and dropped players."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_errors import PlayerId
from solrace.server.protocol.tournament_model import Format, FormatRules
from tests.server.simulated_tournaments import (
    assert_nobody_twice_per_round,
    matches_of,
    seeded_random,
    simulate,
)


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


def test_swiss_passes_a_second_bye_up_rather_than_force_a_rematch() -> None:
    """Drop-outs can leave an odd field whose players have all had a bye. The second bye then
    goes to the lowest-ranked only if the others can be paired around him without a rematch;
    else it is passed up, as a first bye is. Five players over five rounds, p4 out after
    round 2 and p1 after round 3: in round 5 p2, p3 and p5 are left, all with a bye, and
    only p2 and p3 have not met, so p5 (first in the standings) takes the bye."""
    winners = {1: ["p3", "p4"], 2: ["p3", "p5"], 3: ["p5", "p1"], 4: ["p5"], 5: []}

    def choose(number: int, match: tuple[PlayerId, ...]) -> list[PlayerId]:
        return sorted(match, key=lambda p: (p not in winners[number], p))

    rules = FormatRules(Format.SWISS, swiss_rounds=5)
    _, history, _ = simulate(
        rules, 5, choose, dropped_after={2: [PlayerId("p4")], 3: [PlayerId("p1")]}
    )
    assert [h.plan.byes for h in history[:4]] == [("p5",), ("p2",), (), ("p3",)]
    assert history[4].plan.byes == ("p5",)
    assert [m.players for m in history[4].plan.pairings] == [("p2", "p3")]
    met = [frozenset(m) for m in matches_of(history)]
    assert len(met) == len(set(met))
