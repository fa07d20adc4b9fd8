"""Spectating and replays: pick a live race, watch every board, follow (TV); step a replay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Static

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import RaceList, ReplayModel, ResultEntry
from solrace.server.protocol.replay import shorten

from .identity import NAME_LIMIT
from .link_status import Incoming
from .replay import ReplayCursor
from .widgets import (
    BoardWidget,
    FittedTable,
    KeysFooter,
    RacersPanel,
    clock_text,
    columned_table,
    link_text,
)
from .wire_text import as_text, one_line

if TYPE_CHECKING:
    from .tui import _SessionApp

#: How often the watch picker asks for the live races again.
REFRESH_S: Final = 3.0

FOLLOW_PAUSE_S = 4.0
"""How long TV mode shows a finished race's result before moving on."""


#: Between two parts of a head line.
SEP = "  "


def fit_line(line: str, extras: list[tuple[str, int]], width: int) -> str:
    """`line`, then as many of `extras` as fit within `width` columns (0: no limit), each after
    `SEP`. An extra `(text, keep)` that does not fit whole is cut, ending with "…", when at
    least its first `keep` characters fit (`keep` 0: never cut); the extras after it are
    left out."""
    for text, keep in extras:
        room = width - cell_len(line) - len(SEP)
        if width <= 0 or cell_len(text) <= room:
            line += SEP + text
            continue
        if keep and room > keep:
            line += SEP + text[: room - 1] + "…"
        break
    return line


#: The room the head line gives who won: `winner` and the longest name.
WINNERS_ROOM: Final = len("winner ") + NAME_LIMIT


def winners_text(results: Sequence[ResultEntry]) -> str:
    """Who won, for the head line: `winner ann`, or a tie for first place (equal ranks are
    ties) `tie for first: ann, bob`, counted instead (`tie for first: 3 racers`) where the
    names take more room than the longest winner's line."""
    first = [entry.name for entry in results if entry.rank == results[0].rank]
    if len(first) == 1:
        return f"winner {first[0]}"
    named = f"tie for first: {', '.join(first)}"
    return named if len(named) <= WINNERS_ROOM else f"tie for first: {len(first)} racers"


#: The least a board is drawn in: narrower or shorter, `BoardWidget` draws it at this size
#: anyway, cut at the widget's edges.
BOARD_MIN_WIDTH, BOARD_MIN_HEIGHT = 20, 6
#: The grid's gutters (`#watch-boards` in tui.py): columns between boards, lines between rows.
GUTTER_COLUMNS, GUTTER_LINES = 2, 1
#: The lines the one board shown (`WatchLayout.single`) keeps before the racers' lines go
#: two to a line.
SINGLE_MIN_HEIGHT = 9


@dataclass(frozen=True, slots=True)
class WatchLayout:
    """How the watch screen shares its room between the boards and the racers' lines."""

    #: The grid's columns of boards.
    columns: int = 1
    #: One board at a time, across the whole width (Tab shows the next racer's): the grid's
    #: boards would be smaller than a board can be drawn.
    single: bool = False
    #: Racers side by side on a line of the racers panel (every racer has a line).
    racer_columns: int = 1


#: A board of a tournament race whose deal is held (`RaceInfo.deal_held`): the server sends
#: it once the round's other matches, on the same deal, have ended.
HELD_DEAL_PLACEHOLDER: Final = "board shown once the tournament round ends (its deal is shared)"


def watch_layout(boards: int, width: int, height: int) -> WatchLayout:
    """The layout for `boards` boards (one a racer) in `width` x `height`: the room of the
    boards and the racers panel together (the screen less its head line and footer). Each
    racer has a line in the panel; the boards share the rest in a grid (two columns up to
    four boards, then three) while each has at least `BOARD_MIN_WIDTH` x `BOARD_MIN_HEIGHT`,
    else one board is shown at a time. Five boards at 60x20 had 18 columns each: cut."""
    if boards <= 1:
        return WatchLayout()
    columns = 2 if boards <= 4 else 3
    rows = -(-boards // columns)
    each_width = (width - GUTTER_COLUMNS * (columns - 1)) // columns
    each_height = (height - boards - GUTTER_LINES * (rows - 1)) // rows
    if each_width >= BOARD_MIN_WIDTH and each_height >= BOARD_MIN_HEIGHT:
        return WatchLayout(columns=columns)
    racer_columns = 1 if height - boards >= SINGLE_MIN_HEIGHT else 2
    return WatchLayout(single=True, racer_columns=racer_columns)


def _watch_app(screen: Screen[None]) -> _SessionApp:
    """The app of a watch screen: `WatchApp`, or `PlayApp` (a tournament's other races)."""
    from .tui import _SessionApp

    assert isinstance(screen.app, _SessionApp)
    return screen.app


class WatchPicker(Screen[None]):
    """Live races to pick from (Enter watches); in follow mode the first running one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_follow", "Follow (TV)"),
        Binding("f5", "refresh", "Refresh"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.finished: set[RaceId] = set()
        #: The rows the table shows (race, game, status, players).
        self._rows: list[tuple[RaceId, str, str, str]] = []
        #: The server has answered a `list_races` of this screen (an empty table means none).
        self._listed = False

    def compose(self) -> ComposeResult:
        yield Static(id="picker-head")
        yield columned_table("races", "race", "game", "status", "players")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.action_refresh()
        self.set_interval(REFRESH_S, self.action_refresh)
        self.update_view()

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def action_refresh(self) -> None:
        app = _watch_app(self)

        async def ask() -> None:
            await app.session.list_races()
            self._listed = True
            self.update_view()

        app.background(ask())

    def action_toggle_follow(self) -> None:
        app = _watch_app(self)
        app.follow = not app.follow
        self.update_view()
        self.follow_next()

    def update_view(self) -> None:
        app = _watch_app(self)
        head = "live races — Enter watches, f toggles follow (TV)"
        if app.follow:  # a line of its own: it went past the end of a line of 80 columns
            head += "\nfollow mode (TV): the next live race comes on by itself"
        table = self.query_one("#races", FittedTable)
        rows: list[tuple[RaceId, str, str, str]] = [
            (info.race_id, info.game, str(info.status), ", ".join(r.name for r in info.racers))
            for info in app.session.state.lobby.values()
        ]
        if self._listed and not rows:
            head += f"\nno live race now (the list is asked again every {REFRESH_S:g} s)"
        self.query_one("#picker-head", Static).update(Text(head, style="bold"))
        if rows == self._rows and table.row_count == len(rows):
            return  # the same list: the table (and its cursor) stays as it is
        # The list comes again every few seconds: the cursor stays on its race, not row 0.
        table.fill((row[0], tuple(as_text(cell) for cell in row)) for row in rows)
        self._rows = rows

    def follow_next(self) -> None:
        app = _watch_app(self)
        if not app.follow or app.screen is not self:
            return
        lobby = app.session.state.lobby.values()
        running = [i for i in lobby if i.status == "running" and i.race_id not in self.finished]
        waiting = [i for i in lobby if i.status == "countdown" and i.race_id not in self.finished]
        choices = running or waiting
        if choices:
            app.watch_race(choices[0].race_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:  # a row's key is its race's id
            _watch_app(self).watch_race(RaceId(event.row_key.value))


class WatchScreen(Screen[None]):
    """Every racer's board as the server sends it, progress bars and the clock. Where the
    boards do not fit side by side (`watch_layout`), one is shown at a time, its racer
    marked ▶ among the racers' lines: Tab shows the next one, Shift+Tab the one before."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("tab", "board(1)", "Next board"),
        Binding("shift+tab", "board(-1)", "Board", show=False),
        Binding("f", "toggle_follow", "Follow (TV)"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, race_id: RaceId, *, ascii: bool = False) -> None:
        super().__init__()
        self.race_id = race_id
        self.ascii = ascii
        self._next: Timer | None = None
        self.boards_layout = WatchLayout()
        #: The racer whose board is shown when one is shown at a time (None: the first).
        self.shown_racer: PlayerId | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="watch-head")
        yield Grid(id="watch-boards")
        yield RacersPanel(id="racers", ascii=self.ascii, every=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.update_view()

    def on_resize(self) -> None:
        self.update_view()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "board":  # offered while one board is shown at a time
            return self.boards_layout.single
        return True

    def action_board(self, delta: int) -> None:
        players = self._players()
        if not self.boards_layout.single or not players:
            return
        at = players.index(self.shown_racer) if self.shown_racer in players else 0
        self.shown_racer = players[(at + delta) % len(players)]
        self.update_view()

    def _players(self) -> list[PlayerId]:
        """The racers with a board, in the race's order."""
        race = _watch_app(self).session.state.races.get(self.race_id)
        if race is None:
            return []
        return list(race.racers) or list(race.boards)

    def action_back(self) -> None:
        app = _watch_app(self)
        app.background(app.session.unwatch(self.race_id))
        app.pop_screen()

    def action_toggle_follow(self) -> None:
        app = _watch_app(self)
        app.follow = not app.follow
        self.update_head()
        self._maybe_move_on()

    def update_head(self) -> None:
        app = _watch_app(self)
        race = app.session.state.races.get(self.race_id)
        if race is None:
            self.query_one("#watch-head", Static).update(as_text(f"watching {self.race_id}…"))
            return
        why = race.lost or race.gone
        if why is not None:
            # The server said it lost the race, or answered the sync after a reconnect so.
            gone = f"race {self.race_id}: the server no longer has it ({why})"
            self.query_one("#watch-head", Static).update(as_text(link_text(app.session) + gone))
            return
        # What matters first (status, clock, the deal's verdict, the winner, TV), then what
        # may give way on a narrow terminal: the game and the long deal number or commitment.
        parts = [f"race {self.race_id}", race.status]
        if race.status == "running":
            parts.append(f"⏱ {clock_text(race.remaining_ms(app.session.conn.server_now_ms()))}")
        delay = race.info.spectator_delay_ms if race.info else 0
        if race.is_live and race.info is not None and race.info.deal_held:
            parts.append("boards once the round ends")  # the round's other matches share it
        elif delay and race.is_live:
            parts.append(f"boards {delay / 1000:g}s behind")
        if race.commitment_ok is not None:
            parts.append("deal ✓ verified" if race.commitment_ok else "deal ✗ MISMATCH")
        if race.results:
            parts.append(winners_text(race.results))
        if app.follow:
            parts.append("TV")
        extras: list[tuple[str, int]] = [(race.game or "?", 0)]
        if race.commitment_ok is not None and race.game_number is not None:
            extras.append((f"#{race.game_number}", 5))
        elif race.commitment:
            extras.append((f"commitment {race.commitment[:12]}…", 15))
        head_widget = self.query_one("#watch-head", Static)
        width = head_widget.size.width or self.app.size.width
        # The winner's name and the deal come from the server.
        head = as_text(fit_line(link_text(app.session) + SEP.join(parts), extras, width))
        head.stylize("bold")
        head_widget.update(head)

    def update_view(self) -> None:
        app = _watch_app(self)
        race = app.session.state.races.get(self.race_id)
        self.update_head()
        players = self._players()
        self._lay_out(len(players))
        if self.shown_racer not in players:
            self.shown_racer = players[0] if players else None
        marked = self.shown_racer if self.boards_layout.single else None
        self.query_one("#racers", RacersPanel).show(race, marked)
        if race is None:
            return
        grid = self.query_one("#watch-boards", Grid)
        existing = {w.id: w for w in grid.query(BoardWidget)}
        wanted = {f"board-{player_id}" for player_id in players}
        for widget_id, gone in existing.items():
            if widget_id not in wanted:  # a racer who left the open race: no board
                gone.remove()
        for player_id in players:
            widget_id = f"board-{player_id}"
            widget = existing.get(widget_id)
            if widget is None:
                widget = BoardWidget(id=widget_id, ascii=self.ascii)
                grid.mount(widget)
            racer = race.racers.get(player_id)
            delay_s = race.info.spectator_delay_ms / 1000 if race.info else 0
            if race.info is not None and race.info.deal_held:
                widget.placeholder = HELD_DEAL_PLACEHOLDER
            elif delay_s and race.is_live:
                widget.placeholder = f"spectators see each board {delay_s:g} s late"
            widget.show(race.boards.get(player_id), title=racer.name if racer else player_id)
            widget.display = not self.boards_layout.single or player_id == self.shown_racer
        grid.styles.grid_size_columns = self.boards_layout.columns

    def _lay_out(self, boards: int) -> None:
        """The layout for `boards` in the screen's room (`watch_layout`); the footer again
        when Tab comes or goes."""
        size = self.size if self.size.area else self.app.size
        head = self.query_one("#watch-head", Static).size.height or 1
        layout = watch_layout(boards, size.width, size.height - head - 1)
        if layout == self.boards_layout:
            return
        self.boards_layout = layout
        self.query_one("#racers", RacersPanel).columns = layout.racer_columns
        self.refresh_bindings()

    def on_race_event(self, incoming: Incoming) -> None:
        if isinstance(incoming, RaceList):
            return
        self._maybe_move_on()

    def _maybe_move_on(self) -> None:
        app = _watch_app(self)
        race = app.session.state.races.get(self.race_id)
        if race is None or not race.is_finished or not app.follow or self._next is not None:
            return
        self._next = self.set_timer(FOLLOW_PAUSE_S, self._move_on)

    def _move_on(self) -> None:
        app = _watch_app(self)
        if app.screen is not self:
            return
        picker = app.screen_stack[-2] if len(app.screen_stack) > 1 else None
        if isinstance(picker, WatchPicker):
            picker.finished.add(self.race_id)
        app.background(app.session.unwatch(self.race_id))
        app.pop_screen()


class ReplayScreen(Screen[None]):
    """A finished race, move by move, for each racer."""

    # Short enough for 60 columns: ← and → share one key in the footer, as PgUp/PgDn
    # (10 moves) share none.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "step(1)", "Step", key_display="←→"),
        Binding("left", "step(-1)", "Back", show=False),
        Binding("pagedown", "step(10)", "+10", show=False),
        Binding("pageup", "step(-10)", "-10", show=False),
        Binding("home", "seek(0)", "First"),
        Binding("end", "seek(-1)", "Last"),
        Binding("tab", "racer(1)", "Racer"),
        Binding("space", "autoplay", "Play"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, replay: ReplayModel, *, ascii: bool = False) -> None:
        super().__init__()
        self.cursor = ReplayCursor(replay)
        self.ascii = ascii
        self._player: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="replay-head")
        yield BoardWidget(id="board", ascii=self.ascii)
        yield Static(id="replay-line")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.update_view()

    def update_view(self) -> None:
        replay = self.cursor.replay
        report = self.cursor.report
        ranking = "  ".join(
            f"{e.rank}. {e.name} {e.on_foundations}/{e.total}" for e in replay.results
        )
        # The commitment's verdict beside the deal, the replay's (and why not) beside the
        # ranking: an illegal move is not a deal that does not match.
        commitment = "commitment ✓" if report.commitment_ok else "commitment ✗ MISMATCH"
        deal = f"{shorten(replay.game)} deal {shorten(replay.game_number)} ({commitment})"
        if report.is_valid:
            verdict = "✓ verified"
        else:
            count = len(report.problems)
            verdict = f"✗ NOT verified ({count} problem{'s' if count > 1 else ''}: "
            verdict += f"{shorten(report.problems[0], 120)})"
            ranking = f"results as the file states them: {ranking}"
        head = f"replay {shorten(replay.race_id)}: {deal} {verdict}  {ranking}"
        shown = as_text(head)  # names and numbers come from the file: shown, never read
        shown.stylize("bold")
        self.query_one("#replay-head", Static).update(shown)
        if not replay.racers:
            return
        if not self.cursor.boards:  # the deal cannot be made: nothing to step through
            self.query_one("#replay-line", Static).update(as_text(self.cursor.report.problems[-1]))
            return
        # The name is the file's: on one line, so a newline in it writes no line of its own.
        title = one_line(self.cursor.racer.name)
        self.query_one("#board", BoardWidget).show(self.cursor.board, title=title)
        self.query_one("#replay-line", Static).update(as_text(self.cursor.describe()))

    def action_step(self, delta: int) -> None:
        self.cursor.step(delta)
        self.update_view()

    def action_seek(self, ply: int) -> None:
        self.cursor.seek(self.cursor.last_ply if ply < 0 else ply)
        self.update_view()

    def action_racer(self, delta: int) -> None:
        self.cursor.next_racer(delta)
        self.update_view()

    def action_autoplay(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None
            return
        self._player = self.set_interval(0.4, self._auto_step)

    def _auto_step(self) -> None:
        if self.cursor.ply >= self.cursor.last_ply and self._player is not None:
            self._player.stop()
            self._player = None
            return
        self.action_step(1)
