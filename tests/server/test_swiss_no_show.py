"""A Swiss player who does not come to his race is withdrawn: not paired again, and never
handed the bye (worth a win) ahead of the players who play."""

from __future__ import annotations

from solrace.server.protocol.match_scoring import score_match
from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.standings import compute_standings
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import MatchId, PlayerId, TournamentId
from solrace.server.protocol.tournament_events import (
    PlayerDropped,
    PlayerForfeited,
    RaceRequested,
    RoundStarted,
    TournamentEvent,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, PlayedRound, RaceResult
from solrace.server.protocol.tournament_state import TournamentSettings

ADMIN = PlayerId("admin")
P1, P2, P3, P4, P5, P6 = (PlayerId(f"p{i}") for i in range(1, 7))


def deals(round_number: int, race_number: int) -> str:
    return str(10**16 + 1000 * round_number + race_number)


def swiss(count: int, rounds: int) -> tuple[Tournament, list[TournamentEvent]]:
    """A running Swiss of p1..p`count`, seeded in that order, no-show grace 60 s."""
    settings = TournamentSettings(
        FormatRules(Format.SWISS, swiss_rounds=rounds), check_in_required=False, no_show_grace=60.0
    )
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=ADMIN, now=0.0, deal_source=deals
    )
    seeds = [PlayerId(f"p{i}") for i in range(1, count + 1)]
    for player in seeds:
        t.register(player, now=1.0)
    events = t.start(ADMIN, now=5.0, ratings={p: 100.0 - i for i, p in enumerate(seeds)})
    return t, events


def requests_of(events: list[TournamentEvent]) -> dict[MatchId, RaceRequested]:
    return {e.match_id: e for e in events if isinstance(e, RaceRequested)}


def test_a_player_who_never_came_gets_no_bye_and_no_pairing_in_the_rounds_after() -> None:
    """Five players: round 1 is p1-p3, p2-p4 and p5's bye. p4 never comes and forfeits; p1
    beats p3 with cards to spare. p4 is then last (0 points, as p3, fewer cards) and has had
    no bye: paired as before, he got round 2's bye, a win he never played for."""
    t, events = swiss(5, 3)
    [started] = [e for e in events if isinstance(e, RoundStarted)]
    assert [m.players for m in started.matches] == [(P1, P3), (P2, P4)]
    assert started.byes == (P5,)
    requests = requests_of(events)
    for player in (P1, P2, P3):
        t.report_present(player, now=6.0)
    ended = t.tick(now=65.0)  # the grace has run out: p4 forfeits
    assert [(e.player, e.reason) for e in ended if isinstance(e, PlayerForfeited)] == [
        (P4, "no_show")
    ]
    played = t.record_race(
        MatchId("R1-1"),
        1,
        RaceResult.from_order([P1, P3], {P1: 52, P3: 20}),
        now=70.0,
    )
    [second] = [e for e in played if isinstance(e, RoundStarted)]
    assert second.round_number == 2
    assert second.byes == ()  # four players still in: nobody sits out
    seated = {p for m in second.matches for p in m.players}
    assert seated == {P1, P2, P3, P5}
    assert set(requests_of(played)) == {m.match_id for m in second.matches}
    assert requests[MatchId("R1-2")].players == (P2, P4)
    assert [e for e in ended if isinstance(e, PlayerDropped)] == [PlayerDropped(P4)]
    assert t.dropped == [P4]
    # He keeps his line in the standings, marked as out.
    line = next(s for s in t.standings() if s.player == P4)
    assert line.is_dropped and line.points == 0.0


def test_after_a_no_show_the_bye_goes_to_the_lowest_ranked_player_still_in() -> None:
    """Six players: p6 never comes to his round 1 match (p3-p6). Five are left for round 2,
    so one sits out: p4, the lowest-ranked of them (p4 lost to p1 and scored fewer cards
    than p5, who lost to p2), not p6."""
    t, events = swiss(6, 3)
    requests = requests_of(events)
    assert [r.players for r in requests.values()] == [(P1, P4), (P2, P5), (P3, P6)]
    for player in (P1, P2, P3, P4, P5):
        t.report_present(player, now=6.0)
    t.record_race(MatchId("R1-1"), 1, RaceResult.from_order([P1, P4], {P1: 52, P4: 5}), now=7.0)
    t.record_race(MatchId("R1-2"), 1, RaceResult.from_order([P2, P5], {P2: 52, P5: 9}), now=8.0)
    # The race ended with p6 gone, without a move: the server passes him as absent.
    events = t.record_race(
        MatchId("R1-3"), 1, RaceResult.from_order([P3, P6], {P3: 0, P6: 0}), now=9.0, absent=[P6]
    )
    [second] = [e for e in events if isinstance(e, RoundStarted)]
    assert second.byes == (P4,)
    assert all(P6 not in m.players for m in second.matches)
    assert [e for e in events if isinstance(e, PlayerDropped)] == [PlayerDropped(P6)]


def test_an_admin_forfeit_does_not_withdraw_a_swiss_player() -> None:
    """A forfeit the admin rules is about one match: the player is paired again. (A no-show
    is withdrawn in the other formats too: tests/server/test_no_show_withdrawn.py.)"""
    t, _ = swiss(4, 3)
    t.forfeit(ADMIN, MatchId("R1-1"), P3, now=6.0)
    assert t.dropped == []


def test_pairing_gives_the_bye_to_the_lowest_ranked_player_still_in() -> None:
    """The pure rule: a dropped player is not paired; of the players still in, the
    lowest-ranked who has not had a bye sits out."""
    rules = FormatRules(Format.SWISS, swiss_rounds=3)
    seeds = [P1, P2, P3, P4, P5, P6]
    first = plan_round(rules, seeds, [])
    assert first is not None
    assert [p.players for p in first.pairings] == [(P1, P4), (P2, P5), (P3, P6)]
    order = {
        MatchId("R1-1"): [P1, P4],
        MatchId("R1-2"): [P2, P5],
        MatchId("R1-3"): [P3, P6],
    }
    cards = {P1: 40, P2: 40, P3: 40, P4: 30, P5: 20, P6: 0}
    outcomes = {}
    for pairing in first.pairings:
        ranked = order[pairing.match_id]
        race = RaceResult.from_order(ranked, {p: cards[p] for p in ranked})
        outcome = score_match(rules, pairing.match_id, pairing.players, [race], seeds=seeds)
        assert outcome is not None
        outcomes[pairing.match_id] = outcome
    history = [PlayedRound(first, outcomes)]
    table = [s.player for s in compute_standings(rules, seeds, history)]
    assert table[-1] == P6  # the lowest-ranked
    everyone = plan_round(rules, seeds, history)
    assert everyone is not None and everyone.byes == ()
    second = plan_round(rules, seeds, history, [P6])
    assert second is not None
    assert second.byes == (P5,)
    assert all(P6 not in p.players for p in second.pairings)
