"""A player who forfeits as a no-show is withdrawn in every format: a round robin gives his
scheduled opponents a bye instead of a wait for him, and an elimination's later match he
would have reached is a walkover. (The Swiss: tests/server/test_swiss_no_show.py.)"""

from __future__ import annotations

from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import MatchId, PlayerId, TournamentId
from solrace.server.protocol.tournament_events import (
    PlayerDropped,
    PlayerForfeited,
    RaceRequested,
    RoundStarted,
    TournamentEvent,
    TournamentFinished,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import Phase, TournamentSettings

ADMIN = PlayerId("admin")
P1, P2, P3, P4, P5 = (PlayerId(f"p{i}") for i in range(1, 6))


def deals(round_number: int, race_number: int) -> str:
    return str(10**16 + 1000 * round_number + race_number)


def running(rules: FormatRules, count: int) -> tuple[Tournament, list[TournamentEvent]]:
    """A running tournament of p1..p`count`, seeded in that order, no-show grace 60 s."""
    settings = TournamentSettings(rules, check_in_required=False, no_show_grace=60.0)
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=ADMIN, now=0.0, deal_source=deals
    )
    seeds = [PlayerId(f"p{i}") for i in range(1, count + 1)]
    for player in seeds:
        t.register(player, now=1.0)
    events = t.start(ADMIN, now=5.0, ratings={p: 100.0 - i for i, p in enumerate(seeds)})
    return t, events


def requested(events: list[TournamentEvent]) -> list[tuple[PlayerId, ...]]:
    return [e.players for e in events if isinstance(e, RaceRequested)]


def win(
    t: Tournament, match_id: str, winner: PlayerId, loser: PlayerId, now: float
) -> list[TournamentEvent]:
    result = RaceResult.from_order([winner, loser], {winner: 52, loser: 10})
    return t.record_race(MatchId(match_id), 1, result, now=now)


def test_a_round_robin_no_show_is_withdrawn_and_his_opponents_after_get_byes() -> None:
    """Four players, three rounds (circle method): p1-p4 and p2-p3, then p1-p3 and p2-p4,
    then p1-p2 and p3-p4. p4 never comes: he forfeits round 1 on the tick and is withdrawn,
    so rounds 2 and 3 pair only those who play, and p2 then p3 get a bye (a win) where they
    were to wait out the grace for him. Each of the others so has a point from p4, as he
    would have from a forfeit, and the tournament ends without another tick."""
    t, events = running(FormatRules(Format.ROUND_ROBIN), 4)
    assert requested(events) == [(P1, P4), (P2, P3)]
    for player in (P1, P2, P3):
        t.report_present(player, now=6.0)
    ticked = t.tick(now=65.0)
    assert [(e.player, e.reason) for e in ticked if isinstance(e, PlayerForfeited)] == [
        (P4, "no_show")
    ]
    assert [e for e in ticked if isinstance(e, PlayerDropped)] == [PlayerDropped(P4)]
    assert t.dropped == [P4]

    events = win(t, "R1-2", P2, P3, now=70.0)
    [second] = [e for e in events if isinstance(e, RoundStarted)]
    assert [m.players for m in second.matches] == [(P1, P3)]
    assert second.byes == (P2,)
    assert requested(events) == [(P1, P3)]

    events = win(t, "R2-1", P3, P1, now=80.0)
    [third] = [e for e in events if isinstance(e, RoundStarted)]
    assert [m.players for m in third.matches] == [(P1, P2)]
    assert third.byes == (P3,)

    events = win(t, "R3-1", P1, P2, now=90.0)
    [finished] = [e for e in events if isinstance(e, TournamentFinished)]
    assert t.phase is Phase.FINISHED
    table = {s.player: s for s in finished.standings}
    # Everyone else beat p2 or p3 once, lost once, and scored one point from p4.
    assert {p: table[p].points for p in (P1, P2, P3, P4)} == {P1: 2.0, P2: 2.0, P3: 2.0, P4: 0.0}
    assert table[P4].is_dropped and finished.standings[-1].player == P4
    # Sonneborn-Berger counts a beaten opponent's points: p1's forfeit win over p4 adds
    # nothing (p4 has none), as the byes of p2 and p3 add nothing.
    assert {p: table[p].tiebreak for p in (P1, P2, P3)} == {P1: 2.0, P2: 2.0, P3: 2.0}


def test_a_round_robin_no_show_found_at_the_race_end_is_withdrawn_too() -> None:
    """Five players (one sits out each round): p5 ends his round 1 race gone without a
    move, so the server passes him as absent; he is withdrawn and never requested again."""
    t, events = running(FormatRules(Format.ROUND_ROBIN), 5)
    assert requested(events) == [(P2, P5), (P3, P4)]
    later = t.record_race(
        MatchId("R1-1"), 1, RaceResult.from_order([P2, P5], {P2: 0, P5: 0}), now=7.0, absent=[P5]
    )
    assert [e for e in later if isinstance(e, PlayerDropped)] == [PlayerDropped(P5)]
    now = 8.0
    while t.phase is Phase.RUNNING:
        match = t.live_matches()[0]
        a, b = match.players
        later += win(t, match.match_id, a, b, now)
        now += 1.0
    assert all(P5 not in pair for pair in requested(later))
    byes = [p for e in events + later if isinstance(e, RoundStarted) for p in e.byes]
    # Each sits out once by the schedule (p5 in a round that then has no other bye), and
    # each but p2, who won round 1 against p5 by forfeit, once more in p5's place.
    assert {p: byes.count(p) for p in (P1, P2, P3, P4, P5)} == {P1: 2, P2: 1, P3: 2, P4: 2, P5: 0}


def test_a_double_elimination_no_show_is_not_waited_for_in_the_losers_bracket() -> None:
    """Four players: p4 never comes to his winners round 1 match against p1. He is
    withdrawn, so the losers bracket match he would have dropped into is a walkover for
    the loser of p2-p3, not a race with a second wait for him."""
    t, events = running(FormatRules(Format.DOUBLE_ELIMINATION), 4)
    assert requested(events) == [(P1, P4), (P2, P3)]
    for player in (P1, P2, P3):
        t.report_present(player, now=6.0)
    ticked = t.tick(now=65.0)
    assert PlayerDropped(P4) in ticked
    later = win(t, "W1-2", P2, P3, now=70.0)
    while t.phase is Phase.RUNNING:
        match = t.live_matches()[0]
        a, b = match.players
        later += win(t, match.match_id, a, b, now=80.0)
    assert all(P4 not in pair for pair in requested(later))


def test_a_single_elimination_semi_final_no_show_leaves_the_third_place_match_a_walkover() -> None:
    """Four players with a third-place match: p4 never comes to his semi-final against p1;
    the third place goes to the loser of p2-p3 without a race against p4."""
    t, events = running(FormatRules(Format.SINGLE_ELIMINATION, third_place_match=True), 4)
    assert requested(events) == [(P1, P4), (P2, P3)]
    for player in (P1, P2, P3):
        t.report_present(player, now=6.0)
    t.tick(now=65.0)
    later = win(t, "W1-2", P2, P3, now=70.0)
    assert requested(later) == [(P1, P2)]  # the final only
    [final] = t.live_matches()
    win(t, final.match_id, P1, P2, now=80.0)
    assert t.phase is Phase.FINISHED
    assert [s.player for s in t.standings()][:3] == [P1, P2, P3]


def test_a_round_robin_leader_withdrawn_last_leaves_the_title_to_the_best_still_in() -> None:
    """p1 wins rounds 1 and 2, then never comes to round 3: withdrawn, he keeps his two
    points and the top line of the standings (on Sonneborn-Berger over p4), and the
    tournament finished with no champion at all ("champion nobody"). The title goes to the
    best-ranked player still in: p4, level on points."""
    t, events = running(FormatRules(Format.ROUND_ROBIN), 4)
    assert requested(events) == [(P1, P4), (P2, P3)]
    win(t, "R1-1", P1, P4, now=10.0)
    win(t, "R1-2", P3, P2, now=11.0)
    win(t, "R2-1", P1, P3, now=20.0)
    events = win(t, "R2-2", P4, P2, now=21.0)
    assert requested(events) == [(P1, P2), (P3, P4)]
    t.report_present(P2, now=22.0)
    win(t, "R3-2", P4, P3, now=30.0)
    ticked = t.tick(now=85.0)  # p1's no-show grace (60 s from round 3's start) has run out
    assert [e for e in ticked if isinstance(e, PlayerDropped)] == [PlayerDropped(P1)]
    assert t.phase is Phase.FINISHED
    table = t.standings()
    assert [(s.player, s.points, s.is_dropped) for s in table[:2]] == [
        (P1, 2.0, True),
        (P4, 2.0, False),
    ]
    assert t.champion() == P4
    [finished] = [e for e in ticked if isinstance(e, TournamentFinished)]
    assert finished.champion == P4
