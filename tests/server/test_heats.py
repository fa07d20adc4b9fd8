"""Rounds of heats: snake seeding, who goes through, the final."""

from __future__ import annotations

from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament_errors import PlayerId
from solrace.server.protocol.tournament_model import Format, FormatRules
from tests.server.simulated_tournaments import simulate


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
