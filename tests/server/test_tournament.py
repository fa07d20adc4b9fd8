"""The tournament state machine, driven in pure code from registration to a champion."""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import (
    CorrectionRefusedError,
    InvalidResultError,
    InvalidSettingsError,
    MatchId,
    NotAdminError,
    PlayerId,
    TournamentError,
    TournamentId,
    UnknownMatchError,
    UnknownPlayerError,
    WrongPhaseError,
)
from solrace.server.protocol.tournament_events import (
    GameNumberNeeded,
    MatchEnded,
    MatchReopened,
    PlayerForfeited,
    RaceCancelled,
    RaceRecorded,
    RaceRequested,
    ResultCorrected,
    RoundEnded,
    RoundStarted,
    TournamentEvent,
    TournamentFinished,
    TournamentStarted,
)
from solrace.server.protocol.tournament_messages import MatchModel, TournamentModel
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import Match, Phase, TournamentSettings
from solrace.server.protocol.tournament_view import build_view

ADMIN = PlayerId("admin")
Decider = Callable[[RaceRequested], list[PlayerId]]


def deals(round_number: int, race_number: int) -> str:
    return str(10**16 + 1000 * round_number + race_number)


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def new_tournament(
    rules: FormatRules,
    count: int,
    *,
    grace: float | None = 60.0,
    deal_source: Callable[[int, int], str] | None = deals,
) -> Tournament:
    settings = TournamentSettings(rules, no_show_grace=grace)
    t = Tournament.create(
        TournamentId("t1"), "klondike", settings, admin=ADMIN, now=0.0, deal_source=deal_source
    )
    for p in players(count):
        t.register(p, now=1.0)
    t.open_check_in(ADMIN, now=2.0)
    for p in players(count):
        t.check_in(p, now=3.0)
    return t


def rating_of(player: PlayerId) -> float:
    return 100.0 - int(player[1:])  # p1 is the best rated


def favourite_wins(request: RaceRequested) -> list[PlayerId]:
    return sorted(request.players, key=lambda p: int(p[1:]))


def result_for(order: Sequence[PlayerId]) -> RaceResult:
    return RaceResult.from_order(order, {p: 52 - 7 * i for i, p in enumerate(order)})


def roundtrip(t: Tournament) -> Tournament:
    """Store and reload, as a restart would; the reloaded state must be identical."""
    data = json.loads(json.dumps(t.to_dict()))
    again = Tournament.from_dict(data, deal_source=deals)
    assert again.to_dict() == t.to_dict()
    return again


def play_out(
    t: Tournament, events: list[TournamentEvent], decide: Decider = favourite_wins
) -> tuple[Tournament, list[TournamentEvent]]:
    """Answer every requested race until nothing is left; reload from storage after each step."""
    log = list(events)
    queue = [e for e in events if isinstance(e, RaceRequested)]
    now = 10.0
    while queue:
        request = queue.pop(0)
        now += 1.0
        t = roundtrip(t)
        new = t.record_race(
            request.match_id, request.race_number, result_for(decide(request)), now=now
        )
        log += new
        queue += [e for e in new if isinstance(e, RaceRequested)]
    return t, log


def started(rules: FormatRules, count: int, **kw: Any) -> tuple[Tournament, list[TournamentEvent]]:
    t = new_tournament(rules, count, **kw)
    events = t.start(ADMIN, now=5.0, ratings={p: rating_of(p) for p in players(count)})
    return t, events


E = TypeVar("E")


def of_type(events: Sequence[TournamentEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def view_of(t: Tournament) -> TournamentModel:
    """What clients are sent (`build_view`, the path the server really uses)."""
    return build_view(t, version=1, name="cup", time_limit_s=60, names={})


# --- full tournaments -------------------------------------------------------------------------


def test_eight_player_single_elimination_to_a_champion() -> None:
    t = new_tournament(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 8)
    ratings = {p: float(i) for i, p in enumerate(players(8))}  # p8 is the best rated
    events = t.start(ADMIN, now=5.0, ratings=ratings)
    assert of_type(events, TournamentStarted)[0].seeds == tuple(reversed(players(8)))
    first = of_type(events, RoundStarted)[0]
    assert next(m.players for m in first.matches) == (PlayerId("p8"), PlayerId("p1"))
    t, log = play_out(t, events)
    assert t.phase is Phase.FINISHED
    finished = of_type(log, TournamentFinished)
    assert len(finished) == 1 and finished[0].champion == "p1"  # lowest number wins every race
    assert t.champion() == "p1"
    assert [e.round_number for e in of_type(log, RoundStarted)] == [1, 2, 3]
    assert len(of_type(log, MatchEnded)) == 7
    # every race k of a round used the same deal, revealed when the round ended
    for ended in of_type(log, RoundEnded):
        requests = [r for r in of_type(log, RaceRequested) if r.round_number == ended.round_number]
        assert {r.game_number for r in requests} == set(ended.game_numbers.values())
        assert all(r.game_number == deals(r.round_number, r.race_number) for r in requests)
    assert [s.player for s in finished[0].standings][:2] == ["p1", "p2"]


def test_six_player_swiss_to_a_champion() -> None:
    t, events = started(FormatRules(Format.SWISS, best_of=3), 6)
    t, log = play_out(t, events)
    assert t.phase is Phase.FINISHED
    assert len(t.rounds) == 3
    assert t.champion() == "p1"
    table = t.standings()
    assert table[0].points == 3.0 and [s.rank for s in table] == [1, 2, 3, 4, 5, 6]
    assert len(of_type(log, MatchEnded)) == 9


@pytest.mark.parametrize(
    ("rules", "count"),
    [
        (FormatRules(Format.DOUBLE_ELIMINATION), 5),
        (FormatRules(Format.ROUND_ROBIN, best_of=2), 5),
        (FormatRules(Format.HEATS, heat_size=3, advance_per_heat=1, best_of=2), 7),
        (FormatRules(Format.SINGLE_ELIMINATION, third_place_match=True), 6),
        (FormatRules(Format.SWISS), 7),
    ],
)
def test_every_format_finishes_with_the_favourite(rules: FormatRules, count: int) -> None:
    t, events = started(rules, count)
    t, _ = play_out(t, events)
    assert t.phase is Phase.FINISHED
    assert t.champion() == "p1"


def test_heats_request_one_n_player_race_per_heat() -> None:
    _t, events = started(FormatRules(Format.HEATS, heat_size=4, advance_per_heat=2), 8)
    requests = of_type(events, RaceRequested)
    assert [len(r.players) for r in requests] == [4, 4]
    assert len({r.game_number for r in requests}) == 1


# --- registration and start -------------------------------------------------------------------


def test_registration_rules_refuse_and_change_nothing() -> None:
    settings = TournamentSettings(FormatRules(Format.SWISS), max_players=2)
    t = Tournament.create(TournamentId("t"), "klondike", settings, admin=ADMIN, now=0.0)
    t.register(PlayerId("a"), now=1.0)
    before = t.to_dict()
    with pytest.raises(WrongPhaseError, match="already registered"):
        t.register(PlayerId("a"), now=1.0)
    t.register(PlayerId("b"), now=1.0)
    with pytest.raises(WrongPhaseError, match="full"):
        t.register(PlayerId("c"), now=1.0)
    with pytest.raises(NotAdminError, match="admin"):
        t.open_check_in(PlayerId("a"), now=2.0)
    with pytest.raises(WrongPhaseError, match="open check-in first"):
        t.start(ADMIN, now=2.0)
    with pytest.raises(WrongPhaseError, match="check in"):
        t.check_in(PlayerId("a"), now=2.0)
    assert t.to_dict()["rounds"] == before["rounds"] == []
    with pytest.raises(InvalidSettingsError):
        Tournament.create(
            TournamentId("t"),
            "klondike",
            TournamentSettings(FormatRules(Format.HEATS, heat_size=1)),
            admin=ADMIN,
            now=0.0,
        )


@pytest.mark.parametrize("fmt", list(Format))
def test_before_the_seeding_bracket_and_standings_are_empty(fmt: Format) -> None:
    t = new_tournament(FormatRules(fmt), 3)  # registered and checked in, not started
    assert t.bracket() == [] and t.standings() == [] and t.champion() is None
    assert view_of(t).standings == []
    empty = Tournament.create(
        TournamentId("t0"), "klondike", TournamentSettings(FormatRules(fmt)), admin=ADMIN, now=0.0
    )
    assert empty.bracket() == [] and empty.standings() == []
    if fmt in (Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION):
        t.start(ADMIN, now=5.0)
        assert len(t.bracket()) >= 3  # seeded: the whole tree


def test_the_bracket_shows_a_result_before_the_round_ends() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    one, _two = of_type(events, RaceRequested)
    t.record_race(one.match_id, 1, result_for(favourite_wins(one)), now=6.0)
    bracket = {str(b.match_id): b for b in t.bracket()}
    assert (bracket["W1-1"].state, bracket["W1-1"].winner) == ("played", "p1")
    assert (bracket["W1-2"].state, bracket["W2-1"].state) == ("ready", "waiting")
    assert bracket["W2-1"].players == ("p1", None)  # the winner is through already
    assert t.history() == []  # pairing and standings still wait for the round's end
    view = view_of(t)
    matches = {m.match_id: m for m in view.rounds[0].matches}
    assert (matches["W1-1"].is_ended, matches["W1-1"].winner) == (True, "p1")
    assert (matches["W1-2"].is_ended, matches["W1-2"].winner) == (False, None)


def test_the_view_sends_a_heat_s_ranking_as_the_server_scored_it() -> None:
    """Each heat's `ranking` is the server's own outcome (places summed with ties sharing the
    better one, then cards, then seed; who forfeited last), shown once the heat has ended; a
    heat has no race `wins`."""
    t, events = started(FormatRules(Format.HEATS, heat_size=4, advance_per_heat=2, best_of=2), 8)
    one, two = of_type(events, RaceRequested)
    a, b, c, d = one.players
    e, f, g, h = two.players
    tied = RaceResult.from_groups([[a, b], [c], [d]], {a: 30, b: 40, c: 20, d: 10})
    t.record_race(one.match_id, 1, tied, now=6.0)
    t.forfeit(ADMIN, two.match_id, f, now=6.5)
    heats = {m.match_id: m for m in view_of(t).rounds[0].matches}
    assert heats[one.match_id].ranking == heats[two.match_id].ranking == []  # not ended yet
    # places: b 1+1, a 1+2, c 3+4 and d 4+3 level, so d's cards (10+40 to 20+5) put d first
    order = RaceResult.from_groups([[b], [a], [d], [c]], {a: 30, b: 40, c: 5, d: 40})
    t.record_race(one.match_id, 2, order, now=7.0)
    t.record_race(two.match_id, 1, result_for([h, e, g]), now=8.0)
    t.record_race(two.match_id, 2, result_for([e, h, g]), now=9.0)  # e, h level: seed

    first = t.rounds[0]
    heats = {m.match_id: m for m in view_of(t).rounds[0].matches}
    assert heats[one.match_id].ranking == [b, a, d, c]
    assert heats[two.match_id].ranking == [e, h, g, f]
    for match_id, shown in heats.items():
        outcome = t.outcome_of(first.matches[MatchId(match_id)])
        assert outcome is not None and shown.is_ended
        assert (shown.ranking, shown.winner) == (list(outcome.ranking), outcome.winner)
        assert shown.wins == []


def test_the_view_sends_a_best_of_match_s_race_wins_and_ranking_as_the_server_counts() -> None:
    """A head-to-head match's `wins` (in its players' order) follow it race by race, a race
    whose best place is shared counting for nobody; once it has ended they are the outcome's,
    with its `ranking`."""
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 2)
    [request] = of_type(events, RaceRequested)
    a, b = request.players
    match = t.rounds[0].matches[request.match_id]

    def shown() -> tuple[list[int], list[PlayerId], bool]:
        [m] = view_of(t).rounds[0].matches
        return m.wins, m.ranking, m.is_ended

    assert shown() == ([0, 0], [], False)
    t.record_race(request.match_id, 1, result_for([b, a]), now=6.0)
    assert shown() == ([0, 1], [], False)
    t.record_race(request.match_id, 2, RaceResult.from_groups([[a, b]]), now=7.0)  # a tie
    assert shown() == ([0, 1], [], False)
    t.record_race(request.match_id, 3, result_for([a, b]), now=8.0)
    assert shown() == ([1, 1], [], False)  # level after best-of-3: sudden death
    t.record_race(request.match_id, 4, result_for([a, b]), now=9.0)
    outcome = t.outcome_of(match)
    assert outcome is not None
    assert shown() == ([2, 1], [a, b], True)
    assert shown()[:2] == ([outcome.wins[p] for p in match.players], list(outcome.ranking))


def test_a_match_of_a_view_without_ranking_or_wins_reads_them_as_empty() -> None:
    """A view from a server that did not send them still decodes."""
    older = MatchModel.model_validate(
        {
            "match_id": "W1-1",
            "players": ["p1", "p2"],
            "races": [],
            "pending_race": 1,
            "race_id": None,
            "forfeited": [],
            "is_ended": False,
            "winner": None,
        }
    )
    assert (older.ranking, older.wins) == ([], [])


def test_players_who_do_not_check_in_are_left_out() -> None:
    t = Tournament.create(
        TournamentId("t"),
        "klondike",
        TournamentSettings(FormatRules(Format.ROUND_ROBIN)),
        admin=ADMIN,
        now=0.0,
        deal_source=deals,
    )
    for p in players(4):
        t.register(p, now=1.0)
    t.open_check_in(ADMIN, now=2.0)
    t.check_in(PlayerId("p1"), now=3.0)
    with pytest.raises(WrongPhaseError, match="1 player"):
        t.start(ADMIN, now=4.0)
    t.check_in(PlayerId("p3"), now=3.0)
    t.check_in(PlayerId("p4"), now=3.0)
    started_ = of_type(t.start(ADMIN, now=4.0), TournamentStarted)[0]
    assert started_.removed == (PlayerId("p2"),)
    assert started_.seeds == (PlayerId("p1"), PlayerId("p3"), PlayerId("p4"))  # unrated: order
    assert [e.act for e in t.audit] == ["create", "open_check_in", "start"]


# --- races, no-shows, drop-outs ---------------------------------------------------------------


def test_bad_or_stale_results_are_refused_and_repeats_ignored() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4)
    request = of_type(events, RaceRequested)[0]
    before = t.to_dict()
    with pytest.raises(InvalidResultError, match="exactly the match's players"):
        t.record_race(request.match_id, 1, result_for([PlayerId("p1")]), now=6.0)
    with pytest.raises(UnknownMatchError, match="not waiting for race 2"):
        t.record_race(request.match_id, 2, result_for(favourite_wins(request)), now=6.0)
    with pytest.raises(UnknownMatchError, match="no match"):
        t.record_race(MatchId("nope"), 1, result_for(favourite_wins(request)), now=6.0)
    assert t.to_dict() == before
    first = t.record_race(request.match_id, 1, result_for(favourite_wins(request)), now=6.0)
    assert of_type(first, RaceRequested)[0].race_number == 2
    assert t.record_race(request.match_id, 1, result_for(favourite_wins(request)), now=6.0) == []


def test_no_show_forfeits_after_the_grace_period_only() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4, grace=60.0)
    one, two = of_type(events, RaceRequested)
    t.report_present(one.players[0], now=6.0)
    t.report_present(one.players[1], now=6.0)
    t.report_present(two.players[0], now=6.0)  # two.players[1] never shows up
    assert t.tick(now=64.0) == []
    later = t.tick(now=65.0)
    forfeits = of_type(later, PlayerForfeited)
    assert [(f.match_id, f.player, f.reason) for f in forfeits] == [
        (two.match_id, two.players[1], "no_show")
    ]
    assert of_type(later, RaceCancelled) == [RaceCancelled(two.match_id, 1)]
    assert of_type(later, MatchEnded)[0].winner == two.players[0]


def test_no_shows_are_due_once_the_grace_has_passed_with_a_racer_not_present() -> None:
    """A heat of four: the admin forfeits p1 (who never came), the others come but p8; a
    no-show is due from the end of the grace period on (not while paused), and only while p8
    is not present (p1, forfeited, races no more)."""
    t, _ = started(FormatRules(Format.HEATS, heat_size=4), 8, grace=60.0)
    heat = t.live_matches()[0]
    assert heat.players == ("p1", "p4", "p5", "p8") and heat.requested_at == 5.0
    t.forfeit(ADMIN, heat.match_id, PlayerId("p1"), now=6.0)
    for player in ("p4", "p5"):
        t.report_present(PlayerId(player), now=7.0)
    t.report_present(PlayerId("p2"), now=7.0)  # the other heat: all but p2 stay away
    assert not t.has_no_shows_due(now=64.9)
    assert t.has_no_shows_due(now=65.0)
    t.pause(ADMIN, now=8.0)
    assert not t.has_no_shows_due(now=65.0)  # nobody forfeits while paused
    t.resume(ADMIN, now=10.0)  # the grace starts again
    assert not t.has_no_shows_due(now=69.9)
    assert t.has_no_shows_due(now=70.0)
    other = t.live_matches()[1]
    for player in (*other.racing, "p8"):
        t.report_present(PlayerId(player), now=11.0)
    assert not t.has_no_shows_due(now=70.0)
    assert t.tick(now=70.0) == []


@settings(max_examples=60, deadline=None)
@given(
    fmt=st.sampled_from([Format.SINGLE_ELIMINATION, Format.SWISS, Format.HEATS]),
    count=st.integers(2, 9),
    steps=st.lists(st.integers(0, 10_000), min_size=1, max_size=40),
)
def test_a_tick_changes_something_exactly_when_no_shows_are_due(
    fmt: Format, count: int, steps: list[int]
) -> None:
    """The server asks `has_no_shows_due` of the tournament it holds before loading the
    stored one to tick it: at every step of random tournaments (results, players showing up,
    pauses, forfeits, ticks), a tick at a later time forfeits someone if it says so, and otherwise
    changes nothing at all."""
    t, _ = started(FormatRules(fmt, heat_size=4), count, grace=60.0)
    now = 10.0
    for step in steps:
        if t.phase is not Phase.RUNNING:
            break
        asked = [m.requested_at for m in t.live_matches() if m.requested_at is not None]
        for later in [now + step % 150, *(a + d for a in asked for d in (59.5, 60.0))]:
            copy = roundtrip(t)
            events = copy.tick(now=later)
            if t.has_no_shows_due(now=later):
                assert of_type(events, PlayerForfeited)
            else:
                assert events == [] and copy.to_dict() == t.to_dict()
        now += 1.0 + step % 40
        matches = t.live_matches()
        match = matches[step % len(matches)] if matches else None
        action = step % 6
        if action == 0:
            if t.is_paused:
                t.resume(ADMIN, now=now)
            else:
                t.pause(ADMIN, now=now)
        elif action == 1 and match is not None:  # some of the match's racers show up
            for player in match.racing[: step % (len(match.racing) + 1)]:
                t.report_present(player, now=now)
        elif action == 2:
            t.tick(now=now)
        elif action == 3 and match is not None and not t.is_paused:
            t.forfeit(ADMIN, match.match_id, match.racing[step % len(match.racing)], now=now)
        elif match is not None and match.pending_race is not None:
            order = sorted(match.racing, key=lambda p: zlib.crc32(f"{p}{step}".encode()))
            t.record_race(match.match_id, match.pending_race, result_for(order), now=now)


def test_a_double_no_show_advances_nobody() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4, grace=10.0)
    one, _two = of_type(events, RaceRequested)
    t.record_race(one.match_id, 1, result_for(favourite_wins(one)), now=7.0)
    later = t.tick(now=20.0)
    assert of_type(later, MatchEnded)[0].winner is None
    finished = of_type(later, TournamentFinished)  # the final is a walkover for p1
    assert finished and finished[0].champion == "p1"


def test_a_racer_absent_from_a_finished_race_forfeits_as_a_no_show() -> None:
    """The race's reconnect grace ran out before the no-show timer: the race ended with a
    racer `gone` without a move. He is a no-show, not a racer who lost or tied."""
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4, grace=120.0)
    one, two = of_type(events, RaceRequested)
    here, away = one.players
    later = t.record_race(one.match_id, 1, result_for([here, away]), now=70.0, absent=[away])
    assert [(f.player, f.reason) for f in of_type(later, PlayerForfeited)] == [(away, "no_show")]
    assert of_type(later, MatchEnded)[0].winner == here
    assert not of_type(later, RaceRequested)  # decided: no second race
    _, match = t.find_match(one.match_id)
    assert match.races == [result_for([here, away]).without([away])]  # it counts for him only

    # Both absent (two opponents who never came, each race a tie of two `gone`): nobody wins,
    # nothing is recorded, and the final is a walkover.
    both = t.record_race(two.match_id, 1, result_for(two.players), now=71.0, absent=two.players)
    assert sorted(f.player for f in of_type(both, PlayerForfeited)) == sorted(two.players)
    assert of_type(both, MatchEnded)[0].winner is None
    assert t.find_match(two.match_id)[1].races == []
    assert of_type(both, TournamentFinished)[0].champion == here
    assert roundtrip(t).to_dict() == t.to_dict()
    # The result delivered again changes nothing, that of the race nobody played included.
    assert t.record_race(one.match_id, 1, result_for([here, away]), now=72.0, absent=[away]) == []
    again = t.record_race(two.match_id, 1, result_for(two.players), now=72.0, absent=two.players)
    assert again == []


def test_in_heats_an_absent_racer_forfeits_and_the_race_counts_for_the_others() -> None:
    t, events = started(FormatRules(Format.HEATS, heat_size=4, best_of=2), 4)
    [request] = of_type(events, RaceRequested)
    away = request.players[2]
    later = t.record_race(request.match_id, 1, result_for(request.players), now=70.0, absent=[away])
    assert [(f.player, f.reason) for f in of_type(later, PlayerForfeited)] == [(away, "no_show")]
    recorded = of_type(later, RaceRecorded)[0].result
    assert recorded.players == tuple(p for p in request.players if p != away)
    [again] = of_type(later, RaceRequested)
    assert again.race_number == 2 and away not in again.players


@pytest.mark.parametrize("why", ["paused", "no grace"])
def test_absent_racers_are_not_forfeited_when_no_shows_are_not(why: str) -> None:
    t, events = started(
        FormatRules(Format.SINGLE_ELIMINATION), 2, grace=None if why == "no grace" else 60.0
    )
    [request] = of_type(events, RaceRequested)
    if why == "paused":
        t.pause(ADMIN, now=6.0)
    both = request.players
    later = t.record_race(request.match_id, 1, result_for(both), now=70.0, absent=both)
    assert not of_type(later, PlayerForfeited)
    assert of_type(later, RaceRecorded)[0].result == result_for(both)


def test_drop_out_forfeits_the_live_match_and_is_never_paired_again() -> None:
    t, events = started(FormatRules(Format.SWISS, swiss_rounds=3), 6)
    request = of_type(events, RaceRequested)[0]
    quitter = request.players[1]
    with pytest.raises(NotAdminError):
        t.drop(quitter, actor=PlayerId("p6"), now=6.0)
    dropped = t.drop(quitter, actor=quitter, now=6.0)
    assert of_type(dropped, PlayerForfeited)[0].reason == "dropped"
    assert of_type(dropped, MatchEnded)[0].winner == request.players[0]
    t, log = play_out(t, [e for e in events if e != request])
    assert t.phase is Phase.FINISHED
    later = [m for e in of_type(log, RoundStarted) if e.round_number > 1 for m in e.matches]
    assert all(quitter not in m.players for m in later)
    assert next(s for s in t.standings() if s.player == quitter).is_dropped
    # Finished: a player of it may not drop out; someone never in it is told that instead.
    with pytest.raises(WrongPhaseError, match="drop out"):
        t.drop(request.players[0], actor=request.players[0], now=9_999.0)
    for outsider in (quitter, PlayerId("nobody")):
        with pytest.raises(UnknownPlayerError, match="is not playing in this tournament"):
            t.drop(outsider, actor=outsider, now=9_999.0)


# --- pause, correction, audit -----------------------------------------------------------------


def test_pause_holds_new_rounds_and_forfeits_until_resume() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4, grace=5.0)
    one, two = of_type(events, RaceRequested)
    t.pause(ADMIN, now=6.0)
    with pytest.raises(WrongPhaseError, match="already paused"):
        t.pause(ADMIN, now=6.0)
    assert t.tick(now=100.0) == []  # nobody forfeits while paused
    t.record_race(one.match_id, 1, result_for(favourite_wins(one)), now=101.0)
    ended = t.record_race(two.match_id, 1, result_for(favourite_wins(two)), now=102.0)
    assert of_type(ended, RoundEnded) and not of_type(ended, RoundStarted)
    resumed = t.resume(ADMIN, now=200.0)
    assert of_type(resumed, RoundStarted)[0].round_number == 2
    assert [e.act for e in t.audit][-2:] == ["pause", "resume"]
    assert t.tick(now=204.0) == []  # the grace counts from the resume


def test_correction_in_the_current_round_changes_the_winner() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    one, two = of_type(events, RaceRequested)
    t.record_race(one.match_id, 1, result_for(favourite_wins(one)), now=7.0)
    upset = list(reversed(favourite_wins(one)))
    with pytest.raises(NotAdminError):
        t.correct_result(one.players[0], one.match_id, 1, result_for(upset), now=8.0)
    fixed = t.correct_result(ADMIN, one.match_id, 1, result_for(upset), now=8.0, reason="misread")
    assert of_type(fixed, ResultCorrected)[0].voided == ()
    assert of_type(fixed, MatchEnded)[0].winner == upset[0]
    nxt = t.record_race(two.match_id, 1, result_for(favourite_wins(two)), now=9.0)
    final = of_type(nxt, RoundStarted)[0].matches[0]
    assert upset[0] in final.players
    assert t.audit[-1].act == "correct_result" and "misread" in t.audit[-1].detail


def test_correction_is_refused_once_the_next_round_started() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    one, two = of_type(events, RaceRequested)
    t.record_race(one.match_id, 1, result_for(favourite_wins(one)), now=7.0)
    t.record_race(two.match_id, 1, result_for(favourite_wins(two)), now=8.0)
    before = t.to_dict()
    with pytest.raises(CorrectionRefusedError, match="round 2 has already started"):
        t.correct_result(ADMIN, one.match_id, 1, result_for(favourite_wins(one)[::-1]), now=9.0)
    assert t.to_dict() == before


def test_correction_can_reopen_a_match_or_void_later_races() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 2)
    request = of_type(events, RaceRequested)[0]
    a, b = request.players
    t.record_race(request.match_id, 1, result_for([a, b]), now=6.0)
    t.record_race(request.match_id, 2, result_for([b, a]), now=7.0)
    done = t.record_race(request.match_id, 3, result_for([a, b]), now=8.0)
    assert of_type(done, TournamentFinished)[0].champion == a
    assert t.record_race(request.match_id, 3, result_for([a, b]), now=8.5) == []  # redelivered
    # race 2 was really won by a: the match ended 2-0 and race 3 no longer counts
    fixed = t.correct_result(ADMIN, request.match_id, 2, result_for([a, b]), now=9.0)
    assert of_type(fixed, ResultCorrected)[0].voided == (3,)
    assert of_type(fixed, TournamentFinished)[0].champion == a
    # race 2 was won by b after all: 1-1, so the match needs its third race again
    reopened = t.correct_result(ADMIN, request.match_id, 2, result_for([b, a]), now=10.0)
    assert of_type(reopened, MatchReopened) and t.phase is Phase.RUNNING
    again = of_type(reopened, RaceRequested)[0]
    assert again.race_number == 3
    final = t.record_race(request.match_id, 3, result_for([b, a]), now=11.0)
    assert of_type(final, TournamentFinished)[0].champion == b


def test_a_correction_reopening_a_match_of_a_player_who_left_does_not_seat_him_again() -> None:
    """A player who drops out after his match ended forfeits nothing (his match is over); if
    a correction then reopens that match, he is not asked to race it: he forfeits it, as he
    would have had it been live when he left, and his opponent goes through."""
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    one, two = of_type(events, RaceRequested)
    a, b = favourite_wins(one)
    t.record_race(one.match_id, 1, result_for([a, b]), now=7.0)
    assert not of_type(t.drop(b, actor=b, now=8.0), PlayerForfeited)  # his match is over
    tied = RaceResult.from_groups([[a, b]])
    fixed = t.correct_result(ADMIN, one.match_id, 1, tied, now=9.0)
    assert of_type(fixed, MatchReopened)
    assert all(b not in r.players for r in of_type(fixed, RaceRequested))
    assert [(f.player, f.reason) for f in of_type(fixed, PlayerForfeited)] == [(b, "dropped")]
    assert of_type(fixed, MatchEnded)[0].winner == a
    nxt = t.record_race(two.match_id, 1, result_for(favourite_wins(two)), now=10.0)
    assert a in of_type(nxt, RoundStarted)[0].matches[0].players


def test_correcting_an_early_race_of_a_match_won_by_forfeit_voids_no_race_after_it() -> None:
    """A match a forfeit decided keeps every race played before it: a correction of an
    earlier race voids only races the corrected results themselves make unneeded, not those
    the forfeit (which came after them all) would. Their cards on foundations count in the
    Swiss tie-break."""
    t, events = started(FormatRules(Format.SWISS, best_of=3, swiss_rounds=1), 2)
    request = of_type(events, RaceRequested)[0]
    a, b = request.players
    t.record_race(request.match_id, 1, RaceResult.from_order([a, b], {a: 30, b: 10}), now=6.0)
    t.record_race(request.match_id, 2, RaceResult.from_order([b, a], {a: 20, b: 40}), now=7.0)
    assert of_type(t.drop(b, actor=b, now=8.0), TournamentFinished)
    assert t.standings()[0].cards == 50  # a's cards over both races
    fixed = t.correct_result(
        ADMIN, request.match_id, 1, RaceResult.from_order([a, b], {a: 31, b: 10}), now=9.0
    )
    assert of_type(fixed, ResultCorrected)[0].voided == ()
    assert len(t.find_match(request.match_id)[1].races) == 2
    assert of_type(fixed, TournamentFinished)[0].champion == a
    assert t.standings()[0].cards == 51


def test_remembered_outcomes_follow_corrections_and_forfeits() -> None:
    """`outcome_of` remembers a match's outcome: a race added, a result corrected or a
    forfeit scores it again, and every view equals one of the same state loaded afresh, with
    nothing remembered or with what an earlier copy remembered (as the service loads)."""
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4)
    one, two = of_type(events, RaceRequested)
    a, b = one.players
    rnd = t.current_round
    assert rnd is not None
    match, other = rnd.matches[one.match_id], rnd.matches[two.match_id]

    earlier = roundtrip(t)
    view_of(earlier)  # it remembers the outcomes of this state

    def outcome_winner(m: Match) -> PlayerId | None:
        outcome = t.outcome_of(m)
        view = view_of(t)
        assert view == view_of(roundtrip(t))
        carried = roundtrip(t)
        carried.remember_outcomes_of(earlier)  # remembered before the change
        assert view_of(carried) == view
        return None if outcome is None else outcome.winner

    t.record_race(one.match_id, 1, result_for([a, b]), now=6.0)
    assert outcome_winner(match) is None
    t.record_race(one.match_id, 2, result_for([a, b]), now=7.0)
    assert outcome_winner(match) == a
    t.correct_result(ADMIN, one.match_id, 1, result_for([b, a]), now=8.0)  # 1-1: a third race
    assert outcome_winner(match) is None
    t.record_race(one.match_id, 3, result_for([b, a]), now=9.0)
    assert outcome_winner(match) == b
    assert outcome_winner(other) is None
    t.forfeit(ADMIN, two.match_id, two.players[0], now=10.0)
    assert outcome_winner(other) == two.players[1]


def test_correction_after_the_grand_final_can_start_a_bracket_reset() -> None:
    t, events = started(FormatRules(Format.DOUBLE_ELIMINATION), 2)
    t, log = play_out(t, events)
    assert t.champion() == "p1"
    gf = next(r for r in of_type(log, RaceRequested) if r.match_id == "GF")
    reset = t.correct_result(
        ADMIN, gf.match_id, 1, result_for([PlayerId("p2"), PlayerId("p1")]), now=50.0
    )
    assert [m.match_id for m in of_type(reset, RoundStarted)[0].matches] == ["GF2"]
    t, _ = play_out(t, reset)
    assert t.champion() == "p1"
    assert len(t.rounds) == 3


# --- deals and storage ------------------------------------------------------------------------


def _round_ended_with_three_deals(
    deal_source: Callable[[int, int], str] | None,
) -> tuple[Tournament, RaceRequested, set[str]]:
    """Two best-of-3 matches of a single elimination, paused before its last race ends (so
    round 2 waits): the first 2-0, the second 2-1; the round has ended. The tournament, the
    first match's first race request and the deals the view reveals (races 1 to 3)."""
    t, events = started(
        FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4, deal_source=deal_source
    )

    def provided(events: list[TournamentEvent]) -> list[TournamentEvent]:
        for ask in of_type(events, GameNumberNeeded):
            number = f"10000{ask.race_number}"
            events += t.provide_game_number(ask.round_number, ask.race_number, number, now=6.0)
        return events

    one, two = of_type(provided(events), RaceRequested)
    a, b = favourite_wins(one)
    c, d = favourite_wins(two)
    for number, order in ((1, [a, b]), (2, [a, b])):
        provided(t.record_race(one.match_id, number, result_for(order), now=7.0))
    for number, order in ((1, [c, d]), (2, [d, c])):
        provided(t.record_race(two.match_id, number, result_for(order), now=8.0))
    t.pause(ADMIN, now=8.5)
    ended = t.record_race(two.match_id, 3, result_for([c, d]), now=9.0)
    assert of_type(ended, RoundEnded) and not of_type(ended, RoundStarted)
    revealed = set(view_of(t).rounds[0].game_numbers.values())
    assert len(revealed) == 3
    return t, one, revealed


def test_a_round_reopened_after_its_end_deals_its_next_races_anew() -> None:
    """Once a round has ended its deals are out (the view lists them, the races' replays
    open): a correction that reopens one of its matches deals the race it now needs anew,
    not on the deal the other match raced on (its replay is a line through it)."""
    drawn = itertools.count(1)
    t, one, revealed = _round_ended_with_three_deals(lambda r, n: str(10**16 + next(drawn)))
    a, b = favourite_wins(one)
    reopened = t.correct_result(ADMIN, one.match_id, 2, result_for([b, a]), now=10.0)
    assert of_type(reopened, MatchReopened)
    assert view_of(t).rounds[0].game_numbers == {}  # a running round's deals are secret
    [again] = of_type(t.resume(ADMIN, now=11.0), RaceRequested)
    assert again.match_id == one.match_id and again.race_number == 3
    assert again.game_number not in revealed
    assert roundtrip(t).current_round is not None  # the new deal is stored with the round
    assert t.to_dict()["rounds"][0]["game_numbers"] == {"3": again.game_number}
    ended = t.record_race(one.match_id, 3, result_for([a, b]), now=12.0)
    assert of_type(ended, RoundEnded)[0].game_numbers == {3: again.game_number}


def test_without_a_deal_source_a_reopened_round_asks_for_a_new_deal() -> None:
    t, one, _ = _round_ended_with_three_deals(None)
    a, b = favourite_wins(one)
    t.correct_result(ADMIN, one.match_id, 2, result_for([b, a]), now=10.0)
    assert of_type(t.resume(ADMIN, now=11.0), GameNumberNeeded) == [GameNumberNeeded(1, 3)]
    [again] = of_type(t.provide_game_number(1, 3, "200003", now=12.0), RaceRequested)
    assert (again.match_id, again.game_number) == (one.match_id, "200003")


def test_a_correction_that_leaves_an_ended_round_ended_keeps_the_deals_it_revealed() -> None:
    """Voiding a race of an ended round deals nothing anew: nobody races in that round
    unless a correction reopens it, which deals its races anew then. The view shows the
    deals the round's races were dealt."""
    drawn = itertools.count(1)
    t, one, revealed = _round_ended_with_three_deals(lambda r, n: str(10**16 + next(drawn)))
    shown = view_of(t).rounds[0].game_numbers
    two = next(m for m in t.rounds[0].matches.values() if m.match_id != one.match_id)
    c = two.races[0].placings[0][0]
    d = next(p for p in two.players if p != c)
    fixed = t.correct_result(ADMIN, two.match_id, 2, result_for([c, d]), now=10.0)
    assert of_type(fixed, ResultCorrected)[0].voided == (3,)
    assert view_of(t).rounds[0].is_ended
    assert view_of(t).rounds[0].game_numbers == shown and set(shown.values()) == revealed


def _one_match_decided_while_the_other_plays(
    deal_source: Callable[[int, int], str] | None, *, third_race_played: bool
) -> tuple[Tournament, RaceRequested, RaceRequested, str]:
    """Two best-of-3 matches of a single elimination; the second plays on (race 1 recorded),
    so the round runs. The first lost race 1, won race 2 and was dealt race 3: played out
    (won, 2-1) or still running. A correction then gives it race 1 (2-0): its race 3 is
    voided, or cancelled. The tournament, the two matches' first race requests and the deal
    the first match was dealt for race 3."""

    def provided(events: list[TournamentEvent]) -> list[TournamentEvent]:
        for ask in of_type(events, GameNumberNeeded):
            number = f"10000{ask.race_number}"
            events += t.provide_game_number(ask.round_number, ask.race_number, number, now=6.0)
        return events

    t, events = started(
        FormatRules(Format.SINGLE_ELIMINATION, best_of=3), 4, deal_source=deal_source
    )
    one, two = of_type(provided(events), RaceRequested)
    a, b = favourite_wins(one)
    provided(t.record_race(two.match_id, 1, result_for(favourite_wins(two)), now=6.5))
    provided(t.record_race(one.match_id, 1, result_for([b, a]), now=7.0))
    [third] = of_type(
        provided(t.record_race(one.match_id, 2, result_for([a, b]), now=8.0)), RaceRequested
    )
    if third_race_played:
        t.record_race(one.match_id, 3, result_for([a, b]), now=9.0)
    fixed = t.correct_result(ADMIN, one.match_id, 1, result_for([a, b]), now=10.0)
    if third_race_played:
        assert of_type(fixed, ResultCorrected)[0].voided == (3,)
    else:
        assert of_type(fixed, RaceCancelled) == [RaceCancelled(one.match_id, 3)]
    assert of_type(fixed, MatchEnded)[0].winner == a
    assert [m.match_id for m in t.live_matches()] == [two.match_id]  # the round runs
    return t, one, two, third.game_number


@pytest.mark.parametrize("third_race_played", [True, False], ids=["voided", "cancelled"])
def test_a_match_reopened_while_its_round_runs_is_not_dealt_a_deal_it_raced(
    third_race_played: bool,
) -> None:
    """A correction voids (or cancels) a match's race 3 while the other match plays on, and
    a later one makes the match need race 3 again: its players know the deal they raced
    (the other match has not raced it, so it is still secret), so the re-run gets a new
    one. So does the other match's race 3: from then on the round has one new deal for it."""
    drawn = itertools.count(1)
    t, one, two, raced = _one_match_decided_while_the_other_plays(
        lambda r, n: str(10**16 + next(drawn)), third_race_played=third_race_played
    )
    a, b = favourite_wins(one)
    reopened = t.correct_result(ADMIN, one.match_id, 1, result_for([b, a]), now=11.0)
    assert of_type(reopened, MatchReopened) == [MatchReopened(one.match_id)]
    [again] = of_type(reopened, RaceRequested)
    assert (again.match_id, again.race_number) == (one.match_id, 3)
    assert again.game_number != raced
    assert roundtrip(t).to_dict()["rounds"][0]["game_numbers"]["3"] == again.game_number
    c, d = favourite_wins(two)
    [other] = of_type(t.record_race(two.match_id, 2, result_for([d, c]), now=12.0), RaceRequested)
    assert (other.match_id, other.race_number) == (two.match_id, 3)
    assert other.game_number == again.game_number


def test_without_a_deal_source_a_match_reopened_in_its_round_asks_for_a_new_deal() -> None:
    t, one, _, raced = _one_match_decided_while_the_other_plays(None, third_race_played=True)
    a, b = favourite_wins(one)
    reopened = t.correct_result(ADMIN, one.match_id, 1, result_for([b, a]), now=11.0)
    assert of_type(reopened, MatchReopened) and not of_type(reopened, RaceRequested)
    assert of_type(reopened, GameNumberNeeded) == [GameNumberNeeded(1, 3)]
    [again] = of_type(t.provide_game_number(1, 3, "200003", now=12.0), RaceRequested)
    assert (again.match_id, again.race_number, again.game_number) == (one.match_id, 3, "200003")
    assert raced == "100003"


def test_without_a_deal_source_the_caller_provides_the_game_number() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4, deal_source=None)
    assert of_type(events, GameNumberNeeded) == [GameNumberNeeded(1, 1)]
    assert not of_type(events, RaceRequested)
    requested = t.provide_game_number(1, 1, "123456", now=6.0)
    assert {r.game_number for r in of_type(requested, RaceRequested)} == {"123456"}
    with pytest.raises(WrongPhaseError, match="already has its deal"):
        t.provide_game_number(1, 1, "999", now=6.0)


def test_deals_stay_secret_until_the_round_ends() -> None:
    t, events = started(FormatRules(Format.SINGLE_ELIMINATION), 4)
    assert view_of(t).rounds[0].game_numbers == {}  # round 1 is running
    assert t.to_dict()["rounds"][0]["game_numbers"] == {"1": deals(1, 1)}
    for request in of_type(events, RaceRequested):
        t.record_race(request.match_id, 1, result_for(favourite_wins(request)), now=7.0)
    view = view_of(t)
    assert view.rounds[0].game_numbers == {"1": deals(1, 1)}
    assert view.rounds[1].game_numbers == {}  # round 2 is running


def test_stored_state_of_another_schema_is_refused() -> None:
    t, _ = started(FormatRules(Format.SWISS), 4)
    data = t.to_dict()
    data["schema"] = 99
    with pytest.raises(TournamentError, match="schema"):
        Tournament.from_dict(data)


@settings(max_examples=40, deadline=None)
@given(
    fmt=st.sampled_from(list(Format)),
    count=st.integers(2, 9),
    best_of=st.integers(1, 3),
    choices=st.lists(st.integers(0, 1000), min_size=1, max_size=30),
)
def test_round_trip_at_every_step_of_random_tournaments(
    fmt: Format, count: int, best_of: int, choices: list[int]
) -> None:
    rules = FormatRules(fmt, best_of=best_of, heat_size=3, advance_per_heat=2)
    t, events = started(rules, count)
    picks = itertools.cycle(choices)  # as many races as the format needs

    def decide(request: RaceRequested) -> list[PlayerId]:
        pick = next(picks)
        order = sorted(request.players, key=lambda p: (zlib.crc32(f"{p}{pick}".encode()), p))
        return order if pick % 7 else order[::-1]

    t, _ = play_out(t, events, decide)  # play_out reloads from JSON before every race
    assert t.phase is Phase.FINISHED
    assert roundtrip(t).standings() == t.standings()


@pytest.mark.parametrize("fmt", [Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION])
def test_an_elimination_s_standings_show_a_match_s_result_before_its_round_ends(
    fmt: Format,
) -> None:
    """The first match of four players' first round ends while the other is still raced:
    the standings say at once what the bracket says, its loser out of a single elimination
    (still in a double's, in its losers' bracket), as a Swiss's count only whole rounds."""
    t, events = started(FormatRules(fmt), 4)
    first, second = of_type(events, RaceRequested)
    winner, loser = favourite_wins(first)
    t.record_race(first.match_id, first.race_number, result_for([winner, loser]), now=10.0)
    assert t.current_round is not None and not t.current_round.is_ended
    out = {s.player: s.is_eliminated for s in t.standings()}
    assert out[loser] is (fmt is Format.SINGLE_ELIMINATION)
    assert not out[winner] and not any(out[p] for p in second.players)
    assert {s.player_id: s.is_eliminated for s in view_of(t).standings} == out
