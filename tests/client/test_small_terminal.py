"""The full-screen views at 60x20, the smallest terminal they are drawn for (docs/client.md):
nothing a user needs is cut off, hidden past an edge or under another widget. Driven by
Textual's pilot against a real server on loopback and read from what the screen shows."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rich.cells import cell_len
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Select, Static

from solrace.client.bots import Bot
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.result_screen import ResultScreen
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tournament_lobby import TournamentListScreen
from solrace.client.tournament_screen import TournamentApp, TournamentScreen
from solrace.client.tui import PlayApp, ReplayApp, WatchApp
from solrace.client.watching import WatchPicker, WatchScreen
from solrace.client.widgets import BoardWidget
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.replay import result_time
from tests.server.test_verify import MOVES, sample
from tests.waiting import eventually

from .conftest import Opened, keys_reach, open_session, race_on_screen, widget
from .test_tournament_screen import act, create, register

SMALL = (60, 20)


def shown(app: App[Any]) -> list[str]:
    """The terminal's lines as the screen draws them (toasts included)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def footer(app: App[Any]) -> str:
    return shown(app)[-1]


def past_the_edges(screen: Screen[Any]) -> list[str]:
    """The widgets that stick out of the screen on the right or at the bottom."""
    width, height = screen.size
    return [
        repr(node)
        for node in screen.query("*")
        if node.display
        and node.region.area
        and (node.region.right > width or node.region.bottom > height)
    ]


def overlapping(widgets: list[Any]) -> list[tuple[str, str]]:
    """Pairs of these widgets drawn on the same cells."""
    return [
        (repr(a), repr(b))
        for i, a in enumerate(widgets)
        for b in widgets[i + 1 :]
        if a.region.overlaps(b.region)
    ]


def sideways(table: DataTable[Any]) -> bool:
    """The table is wider than its room: its last columns hide until it scrolls."""
    return table.max_scroll_x > 0


async def settled(pilot: Pilot[Any]) -> None:
    """Let the layout and the footer (recomposed after a resize) catch up."""
    for _ in range(3):
        await pilot.pause()


async def test_the_lobby_s_forms_table_and_keys_fit_60x20(server_url: str, alice: Session) -> None:
    """At 60 columns the create form's invite field and the Tournaments button stood past
    the right edge, the join field showed `race id to joi`, and the footer hid `esc Quit`
    under the command palette's key."""
    dan = Bot(server_url, "dan", make_strategy("greedy"), delay_s=0.0)
    await dan.connect()
    app = PlayApp(alice)
    try:
        async with app.run_test(size=SMALL) as pilot:
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="the lobby")
            screen = app.screen
            app.create_race("blondes-and-brunettes", 4, 600)  # the longest game's name
            await eventually(lambda: app.race_id is not None, what="race created")
            race_id = app.race_id
            assert race_id is not None
            await dan.join(race_id)
            table = await widget(screen, "#races", DataTable)
            await eventually(
                lambda: "alice, dan" in " ".join(shown(app)), what="the race listed with dan"
            )
            await settled(pilot)
            assert past_the_edges(screen) == []
            controls = [*screen.query("#create-form > *"), *screen.query("#join-form > *")]
            assert overlapping(controls) == []
            text = "\n".join(shown(app))
            for label in ("Create", "rated", "Join", "Start", "Leave", "Refresh", "Resume"):
                assert label in text
            assert "Tournaments" in text and "race id to join" in text
            assert "invite code" in text  # the invite field's placeholder, whole
            # The race's row: its id, its whole game, its players.
            assert not sideways(table)
            text = "\n".join(shown(app))
            assert race_id in text and "blondes-and-brunettes" in text and "2/4" in text
            for key in ("f5 Refresh", "^s Start", "^r Resume", "^t Tournaments", "esc Quit"):
                assert key in footer(app)
            # The game list, opened, shows the longest game's name whole.
            games = screen.query_one("#game", Select)
            games.value = "blondes-and-brunettes"
            await pilot.click("#game")
            await eventually(lambda: games.expanded, what="the game list")
            await settled(pilot)
            assert "blondes-and-brunettes " in "\n".join(shown(app))
    finally:
        await dan.close()


async def test_the_lobby_keeps_its_one_row_forms_at_80x24(alice: Session) -> None:
    app = PlayApp(alice)
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="the lobby")
        await settled(pilot)
        screen = app.screen
        assert past_the_edges(screen) == []
        assert screen.query_one("#create-form").region.height == 1
        assert screen.query_one("#join-form").region.height == 1
        line = footer(app)
        assert "esc Quit" in line and "^p palette" in line  # the palette's key has room here


async def test_the_race_screen_fits_60x20(server_url: str, alice: Session) -> None:
    """The head line lost the deal's commitment past the right edge, the footer `l Back`,
    and the board's header (Queen of Italy's) half of what to do first."""
    bob = Bot(server_url, "bob", make_strategy("greedy"), delay_s=0.0)
    await bob.connect()
    app = PlayApp(alice)
    try:
        async with app.run_test(size=SMALL) as pilot:
            race_id, _ = await race_on_screen(app, [bob], "queen-of-italy")
            screen = app.screen
            board = await widget(screen, "#board", BoardWidget)
            await eventually(lambda: "t0" in board.text, what="the board drawn")
            race = alice.state.races[race_id]
            assert race.commitment is not None
            commitment = f"deal commitment {race.commitment[:12]}…"
            await eventually(lambda: commitment in "\n".join(shown(app)), what="the commitment")
            await settled(pilot)
            assert past_the_edges(screen) == []
            text = "\n".join(shown(app))
            assert f"race {race_id}" in text
            assert "choose the base: play a t card to its foundation" in text
            for key in ("d Deal", "esc Cancel", ": Type a move", "x Resign (twice)", "l Back"):
                assert key in footer(app)
    finally:
        await bob.close()


async def test_a_race_of_ten_keeps_its_board_at_60x20(server_url: str, alice: Session) -> None:
    """Ten racers' lines pushed the board's last lines (its tableau) off the screen: the
    panel shows the player's line and the first others, and says how many more there are."""
    bots = [Bot(server_url, f"bot{i}", make_strategy("greedy"), delay_s=0.0) for i in range(9)]
    app = PlayApp(alice)
    try:
        for bot in bots:
            await bot.connect()
        async with app.run_test(size=SMALL) as pilot:
            await race_on_screen(app, bots)
            screen = app.screen
            board = await widget(screen, "#board", BoardWidget)
            await eventually(lambda: "t6" in board.text, what="the board drawn")
            await settled(pilot)
            assert past_the_edges(screen) == []
            assert len(board.text.splitlines()) <= board.region.height  # nothing cut below
            text = "\n".join(shown(app))
            assert "▶ alice" in text and "… 7 more racers" in text
    finally:
        for bot in bots:
            await bot.close()


async def test_the_result_screen_fits_60x20(server_url: str, alice: Session) -> None:
    """The ranking's last column (`when (finished, or last card out)`) went past the right
    edge: its header and times were cut."""
    bob = Bot(server_url, "bob", make_strategy("greedy"), delay_s=0.0)
    await bob.connect()
    app = PlayApp(alice)
    try:
        async with app.run_test(size=SMALL) as pilot:
            race_id, racing = await race_on_screen(app, [bob])
            # The screen has drawn the deal: an `x` before that is disarmed by the redraw.
            await keys_reach(racing)
            await pilot.press("x", "x")
            await eventually(
                lambda: alice.state.races[race_id].racers[PlayerId(alice.me or "")].is_done,
                what="alice resigned",
            )
            await bob.play()
            await eventually(lambda: isinstance(app.screen, ResultScreen), what="the result")
            race = alice.state.races[race_id]
            await eventually(lambda: race.commitment_ok is True, what="the reveal")
            screen = app.screen
            assert isinstance(screen, ResultScreen)
            table = await widget(screen, "#ranking", DataTable)
            await eventually(lambda: table.row_count == 2, what="the ranking")
            await settled(pilot)
            assert past_the_edges(screen) == []
            assert not sideways(table)
            text = "\n".join(shown(app))
            assert race.results is not None
            for entry in race.results:
                assert entry.name in text
                for word in result_time(entry).split():  # each on screen, however wrapped
                    assert word in text.split()
            for key in ("r Rematch", "l Lobby", "q Quit"):
                assert key in footer(app)
    finally:
        await bob.close()


async def started_on_screen(
    app: App[Any], pilot: Pilot[Any], admin: Session, tid: str, matches: int
) -> TournamentScreen:
    """The tournament's screen, once shown, after the director started it and its first
    round's `matches` are live on it."""
    await eventually(lambda: isinstance(app.screen, TournamentScreen), what="its screen")
    screen = app.screen
    assert isinstance(screen, TournamentScreen)
    await act(admin, tid, "start")
    await eventually(lambda: len(screen.live_race_ids) == matches, what="the live matches")
    await settled(pilot)
    return screen


async def test_the_tournament_list_and_screen_fit_60x20(opened: Opened) -> None:
    """The list's eight columns hid the phase, the players, the round and the champion past
    the right edge (at 80 columns too); the live matches hid their race ids."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    names = ["ann", "bob", "cid-with-a-longer-name", "dee-with-a-longer-name"]
    await register(opened, tid, names)
    app = PlayApp(await opened.open("ivy"))
    async with app.run_test(size=SMALL) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="the lobby")
        await pilot.press("ctrl+t")
        await eventually(lambda: isinstance(app.screen, TournamentListScreen), what="the list")
        listing = app.screen
        table = await widget(listing, "#tournaments", DataTable)
        await eventually(lambda: table.row_count == 1, what="the tournament listed")
        await settled(pilot)
        assert past_the_edges(listing) == [] and not sideways(table)
        text = "\n".join(shown(app))
        for shown_text in (tid, "single_elimination-cup", "klondike", "single elimination"):
            assert shown_text in text
        assert "registration" in text and "4 players" in text
        for key in ("j Join", "f5 Refresh", "esc Lobby"):
            assert key in footer(app)

        await pilot.press("enter")
        screen = await started_on_screen(app, pilot, admin, tid, 2)
        live = screen.query_one("#t-live", DataTable)
        assert past_the_edges(screen) == [] and not sideways(live)
        text = "\n".join(shown(app))
        for race_id in screen.live_race_ids:
            assert race_id in text
        for name in names:
            assert name in text
        for key in ("f5 Refresh", "esc Back", "q Quit"):
            assert key in footer(app)


async def test_the_watch_picker_and_screen_fit_60x20(server_url: str) -> None:
    """The picker's head line lost the follow mode's words past the right edge (at 80
    columns too); a small board's header cut `pass 1/∞` to `pass 1`."""
    spectator, pump = await open_session(server_url, None)
    bots = [
        Bot(server_url, name, make_strategy("greedy"), delay_s=0.0)
        for name in ("ann", "bob-the-builder")
    ]
    try:
        for bot in bots:
            await bot.connect()
        app = WatchApp(spectator)
        async with app.run_test(size=SMALL) as pilot:
            await eventually(lambda: isinstance(app.screen, WatchPicker), what="the picker")
            await pilot.press("f")  # follow mode, no race on: the picker stays
            await eventually(lambda: app.follow, what="follow mode")
            await settled(pilot)
            assert "follow mode (TV): the next live race comes on by itself" in shown(app)[1]
            assert past_the_edges(app.screen) == []

            race_id = await bots[0].create("klondike", 2, 300)
            await bots[1].join(race_id)  # full: it starts, and follow mode watches it
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watching")
            screen = app.screen
            await eventually(
                lambda: (
                    all(b.board is not None for b in screen.query(BoardWidget))
                    and len(screen.query(BoardWidget)) == 2
                ),
                what="both boards",
            )
            await settled(pilot)
            assert past_the_edges(screen) == []
            for board in screen.query(BoardWidget):
                lines = board.text.splitlines()
                assert max(cell_len(line) for line in lines) <= board.size.width
                # The header's parts whole, however narrow: `pass 1/∞`, never `pass 1`.
                assert board.title is not None and lines[0].startswith(board.title)
                assert not re.search(r"pass \d+(?!/∞)", board.text), board.text
            for key in ("esc Back", "f Follow (TV)", "q Quit"):
                assert key in footer(app)
    finally:
        pump.cancel()
        await spectator.conn.close()
        for bot in bots:
            await bot.close()


async def test_a_bracket_of_long_names_fits_60_columns(opened: Opened) -> None:
    """A bracket line of two 24-letter names went past 60 columns and wrapped: `vs` ended
    one line, the second name began the next, under the tree's lines. The names are cut
    (`aaa-with-a-lo…`) and each match keeps its line."""
    admin = await opened.open("director")
    tid = await create(admin, "double_elimination")
    names = [f"{letter * 3}-with-a-long-name-xyz" for letter in "abcdefgh"]  # 24 letters
    await register(opened, tid, names)
    app = TournamentApp(await opened.open(None), tid)
    async with app.run_test(size=SMALL) as pilot:
        screen = await started_on_screen(app, pilot, admin, tid, 4)
        # The tree is longer than its room, where it scrolls (PgUp/PgDn): it alone goes on
        # below the screen's edge.
        assert past_the_edges(screen) == ["Static(id='t-tree')"]
        lines = screen.body_text.splitlines()
        tree = screen.query_one("#t-tree", Static)
        assert max(cell_len(line) for line in lines) <= tree.size.width
        assert tree.size.height == len(lines)  # no line wrapped
        bracket = lines[: lines.index("")]  # the winners' tree (then the other matches)
        firsts = [line for line in bracket if re.match(r"^[│├└─ ]*W1-\d ", line)]
        assert len(firsts) == 4
        for line in firsts:  # each match whole on its line: both players and its state
            left, right = line.split(" vs ")
            assert right.endswith(" [playing]"), line
            for name in (left.split(" ")[-1], right.split(" ")[0]):
                cut = name.removesuffix("…")
                assert len(cut) >= 10 and any(full.startswith(cut) for full in names), line
        top = "\n".join(shown(app))
        assert lines[2] in top and lines[3] in top  # on screen as they are, tree and all


def displayed_boards(screen: Screen[Any]) -> list[BoardWidget]:
    return [board for board in screen.query(BoardWidget) if board.display]


def drawn_whole(board: BoardWidget) -> bool:
    """The board's text is within its widget: no column cut at the right, no line below."""
    lines = board.text.splitlines()
    width, height = board.region.width, board.region.height
    return len(lines) <= height and max(cell_len(line) for line in lines) <= width


@pytest.mark.parametrize(
    ("count", "size", "single"), [(5, SMALL, True), (12, SMALL, True), (5, (80, 24), False)]
)
async def test_a_race_of_five_or_more_is_watched_one_board_at_a_time_at_60x20(
    server_url: str, count: int, size: tuple[int, int], single: bool
) -> None:
    """Five boards at 60x20 stood in three columns of 18: each was drawn 20 wide and cut at
    its right edge and bottom, and the racers panel left two racers out (`… 2 more
    racers`). Where the boards do not fit side by side, one is shown across the width, Tab
    and Shift+Tab show the others, and every racer keeps a line (two to a line when there
    are too many for one each); where they fit (80x24), they stay side by side."""
    spectator, pump = await open_session(server_url, None)
    names = [f"racer-{i:02d}" for i in range(count)]
    bots = [Bot(server_url, name, make_strategy("greedy"), delay_s=0.0) for name in names]
    try:
        for bot in bots:
            await bot.connect()
        race_id = await bots[0].create("klondike", count, 300)
        for bot in bots[1:]:
            await bot.join(race_id)  # full: it starts
        await spectator.watch(race_id)
        app = WatchApp(spectator, race_id=race_id, watching=True)
        async with app.run_test(size=size) as pilot:
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watching")
            screen = app.screen
            boards = screen.query(BoardWidget)
            await eventually(
                lambda: len(boards.nodes) == count and all(b.board for b in boards.nodes),
                what="every racer's board",
            )
            await settled(pilot)
            assert past_the_edges(screen) == []
            text = "\n".join(shown(app))
            assert all(name in text for name in names) and "more racers" not in text
            shown_boards = displayed_boards(screen)
            assert all(drawn_whole(board) for board in shown_boards)
            if not single:
                assert len(shown_boards) == count and "Next board" not in footer(app)
                return

            def titles() -> list[str | None]:
                return [board.title for board in displayed_boards(screen)]

            assert titles() == [names[0]]
            assert shown_boards[0].region.width == size[0]  # across the whole width
            assert f"▶ {names[0]}" in text  # the shown board's racer, marked
            assert "tab Next board" in footer(app)
            for press, name in (
                ("tab", names[1]),
                ("shift+tab", names[0]),
                ("shift+tab", names[-1]),
            ):
                await pilot.press(press)
                await eventually(lambda: titles() == [name], what=f"{name}'s board")  # noqa: B023
                await settled(pilot)
                (board,) = displayed_boards(screen)
                assert drawn_whole(board) and board.text.startswith(name)
                assert f"▶ {name}" in "\n".join(shown(app))
    finally:
        pump.cancel()
        await spectator.conn.close()
        for bot in bots:
            await bot.close()


async def test_the_replay_s_keys_fit_60x20_and_80x24() -> None:
    """`space Play/pause` and `q Quit` were cut off the footer, at 80 columns too."""
    for size in (SMALL, (80, 24)):
        app = ReplayApp(sample(MOVES), ascii=True)
        async with app.run_test(size=size) as pilot:
            await widget(app.screen, "#board", BoardWidget)
            await settled(pilot)
            assert past_the_edges(app.screen) == []
            for key in ("←→ Step", "home First", "end Last", "tab Racer", "space Play", "q Quit"):
                assert key in footer(app), (size, footer(app))
