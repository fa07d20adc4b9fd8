"""The watch picker and the watch screen driven by Textual's pilot against a real server on
loopback: the picker's cursor across its refreshes, the boards of who left an open race, and
the head line at 80 columns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from rich.cells import cell_len
from textual.widgets import DataTable, Static

from solrace.client import watching
from solrace.client.bots import Bot
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import WatchApp
from solrace.client.watching import (
    WINNERS_ROOM,
    WatchLayout,
    WatchPicker,
    WatchScreen,
    fit_line,
    watch_layout,
    winners_text,
)
from solrace.client.widgets import BoardWidget, selected_key
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import ResultEntry
from tests.waiting import eventually

from .conftest import open_session, widget
from .test_tui import race_of_bots


@pytest.fixture
async def spectator(server_url: str) -> AsyncIterator[Session]:
    session, pump = await open_session(server_url, None)
    yield session
    pump.cancel()
    await session.conn.close()


async def bots_named(url: str, *names: str) -> list[Bot]:
    bots = [Bot(url, n, make_strategy("greedy", seed=i), delay_s=0.0) for i, n in enumerate(names)]
    for bot in bots:
        await bot.connect()
    return bots


async def test_the_picker_keeps_its_cursor_on_the_same_race_across_refreshes(
    server_url: str, spectator: Session
) -> None:
    """The list comes again every 3 s; each time the highlighted row went back to the top."""
    bots = await bots_named(server_url, "b0", "b1", "b2", "b3", "b4")
    try:
        for bot in bots[:4]:
            await bot.create("klondike", 2, 300)
        app = WatchApp(spectator)
        async with app.run_test(size=(80, 24)) as pilot:
            await eventually(lambda: isinstance(app.screen, WatchPicker), what="the picker")
            table = await widget(app.screen, "#races", DataTable)
            await eventually(lambda: table.row_count == 4, what="the four races")
            await pilot.press("down", "down", "down")
            await eventually(lambda: table.cursor_row == 3, what="the cursor on row 3")
            highlighted = selected_key(table)
            new = await bots[4].create("colorado", 2, 300)  # the list changes meanwhile
            await spectator.list_races()  # as the picker's own refresh asks
            await eventually(lambda: new in table.rows, what="the new race listed")
            assert selected_key(table) == highlighted
            await spectator.list_races()  # the same list again
            await pilot.pause()
            assert selected_key(table) == highlighted
    finally:
        for bot in bots:
            await bot.close()


async def test_the_picker_says_when_there_is_no_live_race(
    server_url: str, spectator: Session
) -> None:
    """With no race on the server the picker was an empty table and nothing more."""
    (bot,) = await bots_named(server_url, "b0")
    try:
        app = WatchApp(spectator)
        async with app.run_test(size=(80, 24)):
            await eventually(lambda: isinstance(app.screen, WatchPicker), what="the picker")
            head = await widget(app.screen, "#picker-head", Static)
            none = "no live race now (the list is asked again every 3 s)"
            await eventually(lambda: none in str(head.render()), what="no race said")
            race_id = await bot.create("klondike", 2, 300)
            table = await widget(app.screen, "#races", DataTable)
            await eventually(lambda: race_id in table.rows, within=10, what="the race listed")
            assert none not in str(head.render())
    finally:
        await bot.close()


async def test_a_racer_who_left_an_open_race_has_no_board_left(
    server_url: str, spectator: Session
) -> None:
    """The board of who left stayed, "waiting for the deal…" even after the start."""
    ann, bob, cid = await bots_named(server_url, "ann", "bob", "cid")
    try:
        race_id = await ann.create("klondike", 3, 300)
        await bob.join(race_id)
        await spectator.watch(race_id)
        app = WatchApp(spectator, race_id=race_id, watching=True)
        async with app.run_test(size=(100, 30)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            screen = app.screen
            assert isinstance(screen, WatchScreen)

            def boards() -> set[str | None]:
                return {w.title for w in screen.query(BoardWidget)}

            await eventually(lambda: boards() == {"ann", "bob"}, what="two boards")
            await bob.leave(race_id)
            await eventually(lambda: boards() == {"ann"}, within=5, what="bob's board gone")
            await cid.join(race_id)
            await ann.start()
            await eventually(
                lambda: (
                    boards() == {"ann", "cid"}
                    and all(w.board is not None for w in screen.query(BoardWidget))
                ),
                what="the two racers' deals, and no other board",
            )
    finally:
        for bot in (ann, bob, cid):
            await bot.close()


async def test_the_watch_head_keeps_status_verdict_winner_and_tv_within_80_columns(
    server_url: str, spectator: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 20-digit deal number pushed "verified", the winner and "TV" off the line."""
    monkeypatch.setattr(watching, "FOLLOW_PAUSE_S", 600.0)  # the finished race stays on
    names = ("dan-with-a-long-name-xyz", "eve-with-a-long-name-xyz")  # the longest names
    bots = await race_of_bots(server_url, "klondike", names, delay_s=0.0)
    race_id = RaceId(bots[0].race_id or "")
    try:
        await spectator.watch(race_id)
        app = WatchApp(spectator, race_id=race_id, follow=True, watching=True)
        async with app.run_test(size=(80, 24)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            head = await widget(app.screen, "#watch-head", Static)
            await asyncio.gather(*(bot.play() for bot in bots))
            race = spectator.state.races[race_id]
            await eventually(lambda: race.commitment_ok is True, what="the reveal")
            assert race.results is not None and race.game_number is not None
            first = winners_text(race.results)  # the two bots may tie: both names are long
            await eventually(lambda: first in str(head.render()), what="the head redrawn")
            text = str(head.render())
            assert cell_len(text) <= 80, text
            assert text.startswith(f"race {race_id}  finished  deal ✓ verified  {first}")
            assert text.endswith("  TV") or "  TV  " in text, text
            # The deal number is whole, or cut where an ellipsis says so: never a wrong number.
            number = text.split("#", 1)[1] if "#" in text else ""
            assert (
                not number
                or number == race.game_number
                or (number.endswith("…") and race.game_number.startswith(number[:-1]))
            ), text
    finally:
        for bot in bots:
            await bot.close()


async def test_the_watch_head_says_a_tie_for_first_place(
    server_url: str, spectator: Session
) -> None:
    """Two racers who resigned with no card out share first place: the head said `winner`
    and the first name of the list."""
    ann, ann_pump = await open_session(server_url, "ann")
    bob, bob_pump = await open_session(server_url, "bob")
    try:
        race_id = await ann.create_race("klondike", 2, 300)
        await bob.join_race(race_id)
        await spectator.watch(race_id)
        app = WatchApp(spectator, race_id=race_id, watching=True)
        async with app.run_test(size=(100, 30)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            head = await widget(app.screen, "#watch-head", Static)
            await eventually(lambda: "running" in str(head.render()), what="the start")
            await ann.resign(race_id)
            await bob.resign(race_id)
            await eventually(lambda: "finished" in str(head.render()), what="the result")
            race = spectator.state.races[race_id]
            assert race.results is not None
            assert [entry.rank for entry in race.results] == [1, 1]
            text = str(head.render())
            first, second = (entry.name for entry in race.results)
            assert f"  tie for first: {first}, {second}" in text, text
            assert "winner" not in text, text
    finally:
        for session, pump in ((ann, ann_pump), (bob, bob_pump)):
            pump.cancel()
            await session.conn.close()


def test_a_tie_is_named_where_the_names_take_no_more_room_than_a_winner_s() -> None:
    def tied(*names: str) -> list[ResultEntry]:
        return [
            ResultEntry(
                rank=1,
                player_id=PlayerId(f"p{n}"),
                name=n,
                state="resigned",
                on_foundations=0,
                total=52,
                elapsed_ms=0,
            )
            for n in names
        ]

    assert winners_text(tied("a")) == "winner a"
    assert winners_text(tied("ann", "bob", "cid")) == "tie for first: ann, bob, cid"
    longest = "x" * 24
    assert len(winners_text(tied(longest))) == WINNERS_ROOM
    assert winners_text(tied(longest, "bob")) == "tie for first: 2 racers"


def test_fit_line_cuts_only_what_may_be_cut_and_says_so() -> None:
    assert fit_line("race r1  finished", [("klondike", 0), ("#123456789", 5)], 0) == (
        "race r1  finished  klondike  #123456789"
    )
    assert fit_line("race r1  finished", [("klondike", 0), ("#123456789", 5)], 36) == (
        "race r1  finished  klondike  #12345…"
    )
    # Too little room for 5 characters of the number: left out, never "#1…".
    assert fit_line("race r1  finished", [("klondike", 0), ("#123456789", 5)], 32) == (
        "race r1  finished  klondike"
    )
    # An extra that may not be cut and does not fit leaves out the rest too.
    assert fit_line("race r1  finished", [("klondike", 0), ("#1", 1)], 25) == "race r1  finished"


def test_the_boards_stand_side_by_side_only_where_each_can_be_drawn_whole() -> None:
    """The room is the screen's less its head line and footer (60x20: 60x18)."""
    assert watch_layout(1, 60, 18) == WatchLayout()
    assert watch_layout(2, 60, 18) == WatchLayout(columns=2)
    assert watch_layout(4, 60, 18) == WatchLayout(columns=2)  # 29x6 each
    # Five in three columns would be 18 wide: one at a time, each racer a line below it.
    assert watch_layout(5, 60, 18) == WatchLayout(single=True)
    assert watch_layout(5, 80, 22) == WatchLayout(columns=3)  # 25x8 each
    assert watch_layout(7, 80, 22) == WatchLayout(single=True)  # three rows of 4 lines
    # Ten racers' lines would leave the board 8 lines: two racers to a line.
    assert watch_layout(10, 60, 18) == WatchLayout(single=True, racer_columns=2)
    assert watch_layout(16, 60, 18) == WatchLayout(single=True, racer_columns=2)
    assert watch_layout(16, 160, 60) == WatchLayout(columns=3)
