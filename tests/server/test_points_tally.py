"""Standings by points and a tiebreak: Buchholz in a Swiss, Sonneborn-Berger in a round robin."""

from __future__ import annotations

from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import Format, FormatRules, MatchOutcome, PlayedRound
from tests.server.simulated_tournaments import players, simulate


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
