"""A match scored from its races: best-of-N, ties, sudden death, forfeits, heats."""

from __future__ import annotations

from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.tournament_errors import MatchId
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from tests.server.simulated_tournaments import players


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
