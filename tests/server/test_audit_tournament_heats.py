"""Audit of heats: who races, who goes through, who wins, for fields of any size."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from solrace.server.protocol.heats import heat_advancers
from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    Format,
    FormatRules,
    MatchOutcome,
    PlayedRound,
    RaceResult,
)
from solrace.server.protocol.tournament_view import _most_seats
from tests.client.test_tournament_render import log_to_the_end, started


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def play_heats(
    rules: FormatRules, seeds: list[PlayerId], rng: random.Random | None
) -> list[PlayedRound]:
    """Every round to the end: each race's order is random, or by seed without `rng`."""
    history: list[PlayedRound] = []
    while (plan := plan_round(rules, seeds, history)) is not None:
        assert len(history) < len(seeds), "heats that never reach a final"
        outcomes: dict[MatchId, MatchOutcome] = {}
        for pairing in plan.pairings:
            races: list[RaceResult] = []
            while (
                done := score_match(rules, pairing.match_id, pairing.players, races, seeds=seeds)
            ) is None:
                order = list(pairing.players)
                if rng is not None:
                    rng.shuffle(order)
                races.append(RaceResult.from_order(order))
            outcomes[pairing.match_id] = done
        history.append(PlayedRound(plan, outcomes))
    return history


def test_three_players_in_heats_of_two_give_the_top_seed_a_bye() -> None:
    """Three players, heats of two: the first round is one heat and a bye for seed 1, who
    then races the heat's winner in the final. A heat of seed 1 alone sent nobody through."""
    rules = FormatRules(Format.HEATS, heat_size=2, advance_per_heat=1)
    seeds = players(3)
    first = plan_round(rules, seeds, [])
    assert first is not None
    assert [p.players for p in first.pairings] == [("p2", "p3")]
    assert first.byes == ("p1",)
    history = play_heats(rules, seeds, None)
    assert [p.players for p in history[-1].plan.pairings] == [("p1", "p2")]
    assert history[-1].plan.pairings[0].match_id == "R2-F"
    table = compute_standings(rules, seeds, history)
    assert [(s.rank, s.player) for s in table] == [(1, "p1"), (2, "p2"), (3, "p3")]
    assert [s.is_eliminated for s in table] == [False, True, True]


@given(
    count=st.integers(2, 24),
    heat_size=st.integers(2, 6),
    advance=st.integers(1, 6),
    seed=st.integers(0, 10_000),
)
def test_every_player_races_or_has_a_bye_and_only_heats_eliminate(
    count: int, heat_size: int, advance: int, seed: int
) -> None:
    """Each round, every player still in races a heat of two or more, or goes through on a
    bye; a player goes out only by finishing outside the top of a heat he raced; the final
    is one heat and its winner tops the standings."""
    rules = FormatRules(Format.HEATS, heat_size=heat_size, advance_per_heat=advance)
    seeds = players(count)
    history = play_heats(rules, seeds, random.Random(seed))
    field = list(seeds)
    for played in history:
        heats = [p.players for p in played.plan.pairings]
        assert all(2 <= len(h) <= heat_size for h in heats), heats
        assert sorted([*(p for h in heats for p in h), *played.plan.byes]) == sorted(field)
        through = heat_advancers(rules, played)
        for pairing in played.plan.pairings:
            ranking = played.outcomes[pairing.match_id].ranking
            kept = min(advance, len(pairing.players) - 1)
            assert [p for p in through if p in pairing.players] == list(ranking[:kept])
        assert set(played.plan.byes) <= set(through)
        field = [p for p in seeds if p in through]
    final = history[-1]
    assert len(final.plan.pairings) == 1 and not final.plan.byes
    assert final.plan.pairings[0].match_id.endswith("-F")
    winner = final.outcomes[final.plan.pairings[0].match_id].ranking[0]
    table = compute_standings(rules, seeds, history)
    assert table[0].player == winner and table[0].rank == 1
    assert [s.player for s in table if not s.is_eliminated] == [winner]


def test_the_bots_say_a_bye_of_the_next_round_among_those_going_through() -> None:
    """Five players in heats of two: seed 1 has a bye in rounds 1 and 2, and the end of
    round 1 names him among those going through (the next round's heat and bye)."""
    t, names = started(FormatRules(Format.HEATS, heat_size=2, advance_per_heat=1), 5)
    log = log_to_the_end(t, names)
    assert log[:5] == [
        "round 1 started: R1-H1 n2 vs n5, R1-H2 n3 vs n4; bye: n1",
        "round 1, R1-H1 n2 vs n5: order n2, n5 (1 race)",
        "round 1, R1-H2 n3 vs n4: order n3, n4 (1 race)",
        "round 1 ended: through n1, n2, n3",
        "round 2 started: R2-H1 n2 vs n3; bye: n1",
    ]
    assert log[-1] == "tournament finished: champion n1"


@given(count=st.integers(2, 40), heat_size=st.integers(2, 6), advance=st.integers(1, 6))
def test_the_view_size_estimate_counts_every_seat_heats_can_fill(
    count: int, heat_size: int, advance: int
) -> None:
    """The field cap rests on `_most_seats`, an upper bound of the seats of a whole
    tournament: heats with byes (heats of two, an odd field) seat more rounds than it
    counted when the player alone in a heat went out."""
    rules = FormatRules(Format.HEATS, heat_size=heat_size, advance_per_heat=advance)
    history = play_heats(rules, players(count), None)
    seats = sum(len(p.players) for played in history for p in played.plan.pairings)
    assert seats <= _most_seats(rules, count)
