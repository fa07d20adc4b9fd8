from __future__ import annotations

import contextlib
import random

import pytest

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Progress, RaceFinished, RaceStarted, RaceUpdate
from solrace.server.protocol.race import (
    Opening,
    Race,
    Racer,
    absent_racers,
    placings_of,
    rank_racers,
)
from solrace.server.protocol.records import RaceRecord, RacerRecord, RacerState, RaceStatus


def make_race(seats: int = 3, rated: bool = False, invite: str | None = None) -> Race:
    record = RaceRecord(
        race_id=RaceId("r1"),
        game="klondike",
        seats=seats,
        time_limit_s=60,
        rated=rated,
        invite_code=invite,
        game_number="12345678901234567",
        salt="s",
        commitment="c",
        creator=PlayerId("a"),
        status=RaceStatus.OPEN,
        created_at_ms=0,
        countdown_ms=1000,
        grace_ms=5000,
        spectator_delay_ms=0,
    )
    race = Race(record, "e1", history_size=4)
    race.join(PlayerId("a"), "ann", invite, 0)
    return race


def running(seats: int = 2) -> Race:
    race = make_race(seats)
    for n in range(1, seats):
        race.join(PlayerId(f"p{n}"), f"player{n}", None, 0)
    race.tick(1000)
    for pid in race.racers:
        race.record_board(
            pid, on_foundations=0, total=52, moves=0, won=False, stuck=False, now_ms=1000
        )
    return race


def test_lobby_fills_then_counts_down_then_runs() -> None:
    race = make_race(seats=2)
    [event] = race.join(PlayerId("b"), "ben", None, 10)
    assert isinstance(event, RaceUpdate) and race.status is RaceStatus.COUNTDOWN
    assert race.start_at_ms == 1010
    assert race.tick(1009) == []
    [started] = race.tick(1010)
    assert isinstance(started, RaceStarted) and started.ends_at_ms == 61010
    assert all(r.state is RacerState.PLAYING for r in race.racers.values())


def test_lobby_refusals() -> None:
    race = make_race(seats=2, invite="code")
    with pytest.raises(RaceError) as caught:
        race.join(PlayerId("b"), "ben", "wrong", 0)
    assert caught.value.code is ErrorCode.BAD_INVITE
    assert caught.value.message.endswith("(a wrong invite code)")
    with pytest.raises(RaceError) as caught:
        race.join(PlayerId("b"), "ben", None, 0)
    assert caught.value.message.endswith("(no invite code)")
    with pytest.raises(RaceError) as caught:
        race.join(PlayerId("a"), "ann", "code", 0)
    assert caught.value.code is ErrorCode.ALREADY_JOINED
    race.join(PlayerId("b"), "ben", "code", 0)
    with pytest.raises(RaceError) as caught:
        race.join(PlayerId("c"), "cat", "code", 0)
    assert caught.value.code is ErrorCode.WRONG_STATUS
    assert caught.value.message == "the race is counting down to its start"


def test_a_refusal_for_the_race_s_status_says_where_it_stands_in_words() -> None:
    race = running(2)
    with pytest.raises(RaceError, match=r"^the race is under way$"):
        race.join(PlayerId("c"), "cat", None, 1000)
    with pytest.raises(RaceError, match=r"^the race is under way$"):
        race.request_start(PlayerId("a"), 1000)
    race.tick(61000)
    with pytest.raises(RaceError, match=r"^the race is over$"):
        race.check_can_move(PlayerId("a"), 61000)
    waiting = make_race(seats=2)
    with pytest.raises(RaceError, match=r"^the race has not started yet$"):
        waiting.check_can_move(PlayerId("a"), 0)


def test_only_the_creator_starts_and_rated_needs_two() -> None:
    race = make_race(seats=4, rated=True)
    with pytest.raises(RaceError) as caught:
        race.request_start(PlayerId("a"), 0)
    assert caught.value.code is ErrorCode.NOT_ENOUGH_PLAYERS
    race.join(PlayerId("b"), "ben", None, 0)
    with pytest.raises(RaceError) as caught:
        race.request_start(PlayerId("b"), 0)
    assert caught.value.code is ErrorCode.NOT_CREATOR
    race.request_start(PlayerId("a"), 0)
    assert race.status is RaceStatus.COUNTDOWN


def test_leaving_passes_the_creator_on_and_an_empty_race_is_cancelled() -> None:
    race = make_race()
    race.join(PlayerId("b"), "ben", None, 0)
    race.leave(PlayerId("a"), 1)
    assert race.creator == "b"
    race.leave(PlayerId("b"), 2)
    assert race.status is RaceStatus.CANCELLED


def test_cancel_stops_a_live_race_once_with_one_update() -> None:
    race = running()
    [event] = race.cancel(5000)
    assert isinstance(event, RaceUpdate) and event.race.status == RaceStatus.CANCELLED.value
    assert race.status is RaceStatus.CANCELLED and race.finished_at_ms == 5000
    assert race.results is None
    version = race.version
    assert race.cancel(6000) == []
    assert race.finished_at_ms == 5000 and race.version == version


def test_cancel_leaves_a_finished_race_as_it_is() -> None:
    race = running()
    for pid in list(race.racers):
        race.resign(pid, 2000)
    assert race.status is RaceStatus.FINISHED
    version = race.version
    assert race.cancel(3000) == []
    assert race.status is RaceStatus.FINISHED and race.version == version


def test_finish_order_and_ties() -> None:
    racers = [
        Racer(PlayerId("w2"), "late winner", RacerState.FINISHED, 9000),
        Racer(PlayerId("w1"), "early winner", RacerState.FINISHED, 5000),
        Racer(
            PlayerId("x"), "ten late", RacerState.TIMED_OUT, on_foundations=10, reached_at_ms=900
        ),
        Racer(
            PlayerId("y"), "ten early", RacerState.RESIGNED, on_foundations=10, reached_at_ms=100
        ),
        Racer(PlayerId("z"), "zero", RacerState.STUCK),
        Racer(PlayerId("q"), "zero too", RacerState.GONE),
    ]
    results = rank_racers(racers, started_at_ms=1000)
    assert [(r.rank, r.player_id) for r in results] == [
        (1, "w1"),
        (2, "w2"),
        (3, "y"),
        (4, "x"),
        (5, "z"),
        (5, "q"),
    ]
    assert results[0].elapsed_ms == 4000


def test_a_batch_that_takes_the_count_away_and_back_moves_its_reached_time_on() -> None:
    """A progress batch folds several moves: the board's count went 1 -> 0 -> 1 within it,
    so the count the race holds is unchanged but was reached again at the batch's last change
    (what `solrace verify` recomputes from the moves, and what ties are broken on)."""
    race = running()

    def fold(moves: int, now_ms: int, reached_ms: int | None) -> None:
        race.record_board(
            PlayerId("a"),
            on_foundations=1,
            total=52,
            moves=moves,
            won=False,
            stuck=False,
            now_ms=now_ms,
            reached_ms=reached_ms,
        )

    fold(3, 2000, 1500)
    assert race.racers[PlayerId("a")].reached_at_ms == 500
    fold(5, 2100, 2050)
    assert race.racers[PlayerId("a")].reached_at_ms == 1050
    fold(6, 2200, None)  # no time given and the same count: no change
    assert race.racers[PlayerId("a")].reached_at_ms == 1050


def test_race_ends_when_everyone_is_done_and_reveals_the_number() -> None:
    race = running(2)
    events = race.record_board(
        PlayerId("a"), on_foundations=52, total=52, moves=99, won=True, stuck=False, now_ms=5000
    )
    assert isinstance(events[0], Progress) and events[0].progress.state == "finished"
    events = race.resign(PlayerId("p1"), 6000)
    assert isinstance(events[-1], RaceFinished)
    assert events[-1].game_number == "12345678901234567"
    assert race.snapshot(7000).game_number == "12345678901234567"


def test_time_limit_times_out_everyone_still_playing() -> None:
    race = running(2)
    events = race.tick(61000)
    assert [e.progress.state for e in events if isinstance(e, Progress)] == ["timed_out"] * 2
    assert isinstance(events[-1], RaceFinished) and events[-1].finished_at_ms == 61000
    with pytest.raises(RaceError) as caught:
        race.check_can_move(PlayerId("a"), 61000)
    assert caught.value.code is ErrorCode.WRONG_STATUS


def test_a_racer_out_keeps_the_figures_it_went_out_with() -> None:
    """A board reported after its racer is out (another node's batch folded late) changes
    nothing: the results rank on the figures the racer went out with."""
    race = running(2)
    race.record_board(
        PlayerId("a"), on_foundations=3, total=52, moves=20, won=False, stuck=False, now_ms=9000
    )
    finished = race.tick(61000)[-1]
    assert isinstance(finished, RaceFinished)
    version = race.version
    late = race.record_board(
        PlayerId("a"), on_foundations=4, total=52, moves=25, won=False, stuck=False, now_ms=61005
    )
    assert late == [] and race.version == version
    racer = race.racers[PlayerId("a")]
    assert (racer.on_foundations, racer.moves) == (3, 20)
    assert race.results == finished.results


def test_a_racer_s_elapsed_time_stops_at_the_time_limit() -> None:
    race = running(2)
    playing = race.record_board(
        PlayerId("a"), on_foundations=1, total=52, moves=5, won=False, stuck=False, now_ms=61004
    )
    assert [e.progress.elapsed_ms for e in playing if isinstance(e, Progress)] == [60000]
    timed_out = race.tick(61004)
    assert [e.progress.elapsed_ms for e in timed_out if isinstance(e, Progress)] == [60000] * 2


def test_racers_put_out_in_the_tick_that_starts_the_race_keep_the_opening_figures() -> None:
    """The tick that starts the race records every racer's figures on the fresh deal
    (`opening`) before it marks racers past their grace gone or times the race out: a deal
    with cards already on the foundations (8 of 104, as colorado deals) counts for them too,
    and they tie with a racer who stayed and made no move."""
    opening = Opening(on_foundations=8, total=104, won=False, stuck=False)
    race = make_race(seats=2)
    race.join(PlayerId("b"), "ben", None, 10)
    race.set_connected(PlayerId("b"), False, 20)
    events = race.tick(6000, opening=lambda: opening)
    assert isinstance(events[0], RaceStarted)
    figures = [
        (e.progress.player_id, e.progress.state, e.progress.on_foundations, e.progress.total)
        for e in events
        if isinstance(e, Progress)
    ]
    assert figures == [
        ("a", "playing", 8, 104),
        ("b", "playing", 8, 104),
        ("b", "gone", 8, 104),
    ]

    timed_out = make_race(seats=2)
    timed_out.join(PlayerId("b"), "ben", None, 10)
    timed_out.set_connected(PlayerId("b"), False, 20)
    finished = timed_out.tick(62000, opening=lambda: opening)[-1]
    assert isinstance(finished, RaceFinished)
    ranked = [(r.player_id, r.state, r.rank, r.on_foundations, r.total) for r in finished.results]
    assert ranked == [("a", "timed_out", 1, 8, 104), ("b", "gone", 1, 8, 104)]
    # Without opening figures (a caller that reports boards itself), the start records none.
    plain = make_race(seats=2)
    plain.join(PlayerId("b"), "ben", None, 10)
    assert not any(isinstance(e, Progress) for e in plain.tick(1010))


def test_grace_period_forfeit() -> None:
    race = running(2)
    assert race.info().grace_ms == 5000  # every racer (and the lobby) may know it
    race.set_connected(PlayerId("a"), False, 2000)
    assert race.next_deadline() == 7000
    assert race.tick(6999) == []
    events = race.tick(7000)
    assert isinstance(events[0], Progress) and events[0].progress.state == "gone"
    race.set_connected(PlayerId("p1"), False, 8000)
    race.set_connected(PlayerId("p1"), True, 9000)
    assert race.tick(20000) == []


def test_snapshot_hides_the_number_while_running() -> None:
    race = running(2)
    snapshot = race.snapshot(2000)
    assert snapshot.game_number is None and snapshot.salt is None
    assert snapshot.commitment == "c"
    assert "12345678901234567" not in snapshot.model_dump_json()


def test_events_since_or_snapshot() -> None:
    race = running(2)  # history keeps 4 events
    version = race.version
    assert race.events_since("e1", version) == []
    race.record_board(
        PlayerId("a"), on_foundations=1, total=52, moves=1, won=False, stuck=False, now_ms=2000
    )
    missed = race.events_since("e1", version)
    assert missed is not None and [e.version for e in missed] == [version + 1]
    assert race.events_since("other", version) is None
    assert race.events_since("e1", 0) is None
    assert race.events_since("e1", version + 5) is None


def test_record_round_trip() -> None:
    race = running(2)
    again = Race(race.to_record(), "e2")
    assert again.to_record() == race.to_record()
    assert again.started_at_ms == 1000


def test_the_next_deadline_is_worked_out_again_after_every_kind_of_change() -> None:
    """`next_deadline` is remembered between changes: after every operation of random runs
    (joins, leaves, starts, away and back, boards, resigns, ticks, resets to a stored record,
    new epochs) it equals the deadline worked out from scratch."""
    rng = random.Random(7)
    for run in range(200):
        race = make_race(seats=rng.choice([2, 3, 4]))
        players = [PlayerId(p) for p in ("a", "b", "c", "d")]
        now = 0
        stored = race.to_record()
        for _ in range(40):
            now += rng.choice([0, 1, 500, 1000, 4000, 6000])
            pid = rng.choice(players)
            op = rng.randrange(9)
            with contextlib.suppress(RaceError):
                if op == 0:
                    race.join(pid, pid, None, now)
                elif op == 1:
                    race.leave(pid, now)
                elif op == 2:
                    race.request_start(pid, now)
                elif op == 3:
                    race.set_connected(pid, rng.random() < 0.5, now)
                elif op == 4 and race.status is RaceStatus.RUNNING and pid in race.racers:
                    race.record_board(
                        pid,
                        on_foundations=rng.randrange(53),
                        total=52,
                        moves=rng.randrange(100),
                        won=rng.random() < 0.1,
                        stuck=rng.random() < 0.1,
                        now_ms=now,
                    )
                elif op == 5:
                    race.resign(pid, now)
                elif op == 6:
                    race.tick(now)
                elif op == 7:
                    if rng.random() < 0.5:
                        stored = race.to_record()
                    else:
                        race.reset_to(stored)
                elif op == 8:
                    race.new_epoch(f"e{run}-{now}")
            assert race.next_deadline() == race._work_out_deadline(), (run, op)


def test_placings_group_ties_and_absent_racers_are_those_who_took_no_part() -> None:
    def racer(pid: str, state: RacerState, moves: int, connected: bool) -> RacerRecord:
        return RacerRecord(
            player_id=PlayerId(pid), name=pid, state=state, moves=moves, connected=connected
        )

    racers = [
        racer("won", RacerState.FINISHED, 90, True),
        racer("never-came", RacerState.GONE, 0, False),
        racer("away-at-time-out", RacerState.TIMED_OUT, 0, False),
        racer("there-at-time-out", RacerState.TIMED_OUT, 0, True),
        racer("resigned-at-once", RacerState.RESIGNED, 0, False),
        racer("played-then-left", RacerState.GONE, 12, False),
    ]
    results = rank_racers([Racer(r.player_id, r.name, r.state) for r in racers], 0)
    record = make_race().record.model_copy(update={"racers": racers, "results": results})
    assert placings_of(record) == [["won"], [r.player_id for r in racers[1:]]]  # no cards
    assert absent_racers(record) == {"never-came", "away-at-time-out"}
