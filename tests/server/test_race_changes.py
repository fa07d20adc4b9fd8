"""The usual changes to a race (`server/race_changes.py`), on a `Race` in memory."""

from __future__ import annotations

from solrace.engine import deal
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Progress, RaceStarted
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import MoveRecord, RacerState
from solrace.server.race_changes import (
    board_progress,
    connection_change,
    is_progress_only,
    mover_of,
    no_change,
    own_board,
    race_timers,
    stored_moves_progress,
)
from solrace.server.runtime import RacerBoard, RaceRuntime
from tests.server.protocol.test_race import make_race, running

ANN, BOB = PlayerId("a"), PlayerId("p1")


def test_the_opening_figures_come_only_with_the_start_one_per_racer() -> None:
    race = make_race(seats=2)
    race.join(BOB, "bob", None, 0)
    started = race_timers(1000)(race)
    assert isinstance(started[0], RaceStarted)
    on, total = deal("klondike", "12345678901234567").progress()
    assert [
        (e.progress.player_id, e.progress.moves, e.progress.on_foundations, e.progress.total)
        for e in started
        if isinstance(e, Progress)
    ] == [(ANN, 0, on, total), (BOB, 0, on, total)]
    # A tick that does not start the race brings no opening figures (again).
    assert race_timers(2000)(race) == []
    assert no_change(race) == []


def test_a_racer_gone_as_the_race_starts_has_the_figures_of_the_deal() -> None:
    """colorado deals 8 of its 104 cards onto the foundations: a racer past its grace in the
    tick that starts the race is gone with them, as the racer who stays plays with them."""
    record = make_race(seats=2).to_record().model_copy(update={"game": "colorado"})
    race = Race(record, "e1")
    race.join(BOB, "bob", None, 10)
    race.set_connected(BOB, False, 20)
    race_timers(6000)(race)
    assert [(r.state, r.on_foundations, r.total) for r in race.racers.values()] == [
        (RacerState.PLAYING, 8, 104),
        (RacerState.GONE, 8, 104),
    ]


def test_progress_only_and_whose_moves_a_progress_event_reports() -> None:
    race = running()
    opening = list(race.history)
    assert all(isinstance(e, Progress) for e in opening[-2:])
    assert [mover_of(e) for e in opening[-2:]] == [None, None]  # the deal: nobody's moves yet
    moved = race.record_board(
        ANN, on_foundations=1, total=52, moves=3, won=False, stuck=False, now_ms=2000
    )
    assert is_progress_only(moved)
    assert [mover_of(e) for e in moved] == [ANN]
    stuck = race.record_board(
        BOB, on_foundations=0, total=52, moves=5, won=False, stuck=True, now_ms=2500
    )
    assert not is_progress_only(stuck)  # a state changed: stored even on one node
    assert all(mover_of(e) is None for e in stuck)
    assert mover_of(race.snapshot(3000)) is None


def test_a_boards_change_reports_its_figures_as_of_its_last_stored_move() -> None:
    race = running()
    runtime = RaceRuntime(race)
    runtime.deal_boards()
    board = runtime.boards[ANN]
    assert isinstance(board, RacerBoard)
    board.game.play("deal")  # a click: the count on the foundations does not move
    board.record_stored(
        MoveRecord(race_id=RaceId("r1"), player_id=ANN, ply=0, seq=1, move="deal", at_ms=1500)
    )
    events = board_progress(ANN, board)(race)
    assert [(e.progress.moves, e.progress.state) for e in events if isinstance(e, Progress)] == [
        (1, RacerState.PLAYING.value)
    ]
    assert race.racers[ANN].moves == 1
    # Reported again (another node's report of it came first): the race has it, no event.
    assert board_progress(ANN, board)(race) == []
    seen = own_board(runtime, ANN)
    assert (seen.player_id, seen.ply, seen.delayed_ms) == (ANN, 1, 0)


def test_a_connection_change_marks_the_racer_away_only_from_the_connection_it_holds() -> None:
    race = running()
    connection_change(BOB, True, 2000, "node-b/2")(race)
    connection_change(BOB, False, 2100, "node-a/1")(race)  # an old connection went
    assert race.racers[BOB].connected
    connection_change(BOB, False, 2200, "node-b/2")(race)
    assert not race.racers[BOB].connected
    assert race.racers[BOB].disconnected_at_ms == 2200


def test_the_stored_moves_bring_the_racers_they_are_ahead_of_to_their_figures() -> None:
    """Moves stored and acknowledged on another node, their progress still in its batch:
    the change brings their racer to the figures of its stored moves, once, and lists the
    moves the race did not count; a racer counted right is left as it is."""
    race = running()
    race.record_board(ANN, on_foundations=0, total=52, moves=1, won=False, stuck=False, now_ms=1)
    clicks = [
        MoveRecord(race_id=RaceId("r1"), player_id=ANN, ply=n, seq=n + 1, move="deal", at_ms=n)
        for n in range(3)
    ]
    bobs = [MoveRecord(race_id=RaceId("r1"), player_id=BOB, ply=0, seq=1, move="deal", at_ms=5)]
    race.record_board(BOB, on_foundations=0, total=52, moves=1, won=False, stuck=False, now_ms=5)
    change, uncounted, unplayable, overcounted = stored_moves_progress(race, [*clicks, *bobs])
    assert uncounted == clicks[1:] and unplayable == overcounted == []
    events = change(race)
    assert [
        (e.progress.player_id, e.progress.moves) for e in events if isinstance(e, Progress)
    ] == [(ANN, 3)]
    assert race.racers[ANN].moves == 3
    assert change(race) == []  # applied again (a compare-and-set lost): nothing more
    assert stored_moves_progress(race, [*clicks, *bobs]) == (no_change, [], [], [])
    # Counted further meanwhile (another node folded a later move first): not taken back.
    behind = stored_moves_progress(race, clicks[:2])
    assert behind.change is no_change
    assert behind.overcounted == [ANN, BOB]  # Bob's one move is not among those read
    stale = stored_moves_progress(running(), clicks[:2])
    assert stale.change(race) == [] and race.racers[ANN].moves == 3


def test_stored_moves_that_do_not_replay_count_their_racer_with_the_figures_it_has() -> None:
    """A stored move the engine refuses (one an older engine took, or corrupt data): the
    racer is counted to its stored moves, its figures as the race has them, and none of its
    moves is to be played on a board."""
    race = running()
    race.record_board(ANN, on_foundations=1, total=52, moves=1, won=False, stuck=False, now_ms=9)
    stored = [
        MoveRecord(race_id=RaceId("r1"), player_id=ANN, ply=0, seq=1, move="deal", at_ms=9),
        MoveRecord(race_id=RaceId("r1"), player_id=ANN, ply=1, seq=2, move="f9", at_ms=12),
    ]
    counted = stored_moves_progress(race, stored)
    assert (counted.uncounted, counted.unplayable, counted.overcounted) == ([], [ANN], [])
    events = counted.change(race)
    assert [
        (e.progress.player_id, e.progress.moves, e.progress.on_foundations, e.progress.total)
        for e in events
        if isinstance(e, Progress)
    ] == [(ANN, 2, 1, 52)]
    assert counted.change(race) == []
