"""Round-robin rounds: everyone meets everyone once, byes for an odd field or a dropped
opponent."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament_errors import PlayerId
from solrace.server.protocol.tournament_model import Format, FormatRules
from tests.server.simulated_tournaments import assert_nobody_twice_per_round, matches_of, simulate


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
