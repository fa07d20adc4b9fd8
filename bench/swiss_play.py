"""A Swiss round played with random results, for `swiss_planning.py` and the tests of long
Swisses (tests/server/test_swiss_long.py, test_swiss_planning_time.py).

The tests import it as `swiss_play`: pytest puts `bench/` on the import path (`pythonpath` in
pyproject.toml), as running a script here does.
"""

from __future__ import annotations

import random

from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    FormatRules,
    MatchOutcome,
    PlayedRound,
    RaceResult,
    RoundPlan,
)


def played_at_random(
    rules: FormatRules, seeds: list[PlayerId], plan: RoundPlan, rng: random.Random
) -> PlayedRound:
    """`plan` played: each race won by either player at random, each with 0 to 52 cards on
    the foundations."""
    outcomes: dict[MatchId, MatchOutcome] = {}
    for pairing in plan.pairings:
        order = list(pairing.players)
        rng.shuffle(order)
        race = RaceResult.from_order(order, {p: rng.randint(0, 52) for p in order})
        done = score_match(rules, pairing.match_id, pairing.players, [race], seeds=seeds)
        assert done is not None
        outcomes[pairing.match_id] = done
    return PlayedRound(plan, outcomes)
