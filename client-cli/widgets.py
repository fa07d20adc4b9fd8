"""Textual widgets: a board that draws itself with `render.py` and knows which card was
clicked, and a panel of racers' progress bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Footer
from textual.widgets.data_table import CellDoesNotExist, CursorType, RowDoesNotExist

from solrace.engine import BoardView
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.vocab import RacerStateName

from .connection import LinkStatus
from .render import Hit, Rendered, render_board, wants_color
from .state import RacerStatus, RaceState

if TYPE_CHECKING:
    from .session import Session


def link_text(session: Session) -> str:
    """The link's trouble, first in a screen's head line (where a narrow terminal cuts the
    end): nothing while connected."""
    if session.link is LinkStatus.CONNECTED:
        return ""
    if session.link is LinkStatus.CLOSED:
        return f"DISCONNECTED ({session.closed or 'closed'}) — "
    return "reconnecting… — "


BAR_WIDTH = 16


class KeysFooter(Footer):
    """The screen's keys. Narrower than `WIDE` columns it is compact (one space between keys)
    and leaves out the command palette's key (Ctrl+P still opens it): every screen's keys
    then fit in 60 columns, where the palette's key, docked right, covered the last ones."""

    WIDE: ClassVar[int] = 80

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < self.WIDE
        if self.compact == narrow and self.show_command_palette != narrow:
            return
        self.compact = narrow
        self.show_command_palette = not narrow
        self.call_after_refresh(self.recompose)  # the palette's key comes and goes


def columned_table(table_id: str, *columns: str, cursor_type: CursorType = "row") -> DataTable[Any]:
    """A table with its columns already there: a screen's `update_view` may add rows before
    the screen's `on_mount` runs (a server message handled while the screen mounts)."""
    widget: DataTable[Any] = DataTable(id=table_id, cursor_type=cursor_type)
    widget.add_columns(*columns)
    return widget


STATE_STYLES: dict[RacerStateName, str] = {
    "finished": "bold green",
    "playing": "",
    "joined": "dim",
    "stuck": "yellow",
    "resigned": "red",
    "gone": "red",
    "timed_out": "yellow",
}


class BoardWidget(Widget):
    """One board, laid out for the widget's size; clicks become `BoardWidget.Picked`."""

    DEFAULT_CSS = """
    BoardWidget { height: 1fr; width: 1fr; }
    """

    class Picked(Message):
        """A cell of the board was clicked: the pile (and depth) under it."""

        def __init__(self, board: BoardWidget, hit: Hit) -> None:
            super().__init__()
            self.board = board
            self.hit = hit

    def __init__(
        self,
        *,
        ascii: bool = False,
        title: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.board: BoardView | None = None
        self.selected: str | None = None
        self.ascii = ascii
        self.title = title
        self.placeholder = "waiting for the deal…"
        self._rendered: Rendered | None = None
        self._waiting = ""

    def show(
        self, board: BoardView | None, selected: str | None = None, title: str | None = None
    ) -> None:
        self.board = board
        self.selected = selected
        if title is not None:
            self.title = title
        self.refresh()

    def render(self) -> Text:
        if self.board is None:
            # No board yet (a spectator's come late): whose it will be, and why it waits.
            self._rendered = None
            waiting = Text()
            if self.title:
                waiting.append(f"{self.title}\n", style="bold")
            waiting.append(self.placeholder, style="dim")
            self._waiting = waiting.plain
            return waiting
        width, height = self.content_size.width, self.content_size.height
        self._rendered = render_board(
            self.board,
            max(width, 20),
            max(height, 6),
            unicode=not self.ascii,
            color=wants_color(),
            selected=self.selected,
            title=self.title,
        )
        return self._rendered.text

    @property
    def text(self) -> str:
        """The board as plain text, as last drawn, or what was drawn while it waited for one
        (tests read it)."""
        return self._rendered.plain if self._rendered else self._waiting

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or self._rendered is None:
            return
        hit = self._rendered.hit(offset.x, offset.y)
        if hit is not None:
            self.post_message(self.Picked(self, hit))


def progress_bar(fraction: float, width: int = BAR_WIDTH, unicode: bool = True) -> str:
    full = round(max(0.0, min(1.0, fraction)) * width)
    if unicode:
        return "█" * full + "░" * (width - full)
    return "#" * full + "." * (width - full)


#: A racer's line without its bar and name: mark, cards, state, moves (`racer_line`).
RACER_LINE_FIXED = 32
#: The name column: as wide as the longest name of the race, between these.
NAME_WIDTH_MIN, NAME_WIDTH_MAX = 8, 24


def name_cell(name: str, width: int) -> str:
    """`name` in a column of `width`: cut with an ellipsis when longer (never two names
    looking alike because their ends were cut)."""
    return name if len(name) <= width else name[: width - 1] + "…"


def racer_line(
    racer: RacerStatus,
    me: PlayerId | None,
    unicode: bool = True,
    bar_width: int = BAR_WIDTH,
    name_width: int = 14,
) -> Text:
    mark = ("▶ " if unicode else "> ") if racer.player_id == me else "  "
    line = Text(mark)
    name = name_cell(racer.name, name_width)
    line.append(f"{name:<{name_width}} ", style="bold" if racer.player_id == me else "")
    line.append(progress_bar(racer.fraction, bar_width, unicode=unicode), style="green")
    total = racer.total or 0
    line.append(f" {racer.on_foundations:>3}/{total:<3} ")
    line.append(f"{racer.state:<9}", style=STATE_STYLES.get(racer.state, ""))
    line.append(f" {racer.moves:>4} moves")
    if not racer.connected and not racer.is_done:
        line.append("  (away)", style="yellow")
    return line


def racer_lines(
    racers: list[RacerStatus], me: PlayerId | None, width: int, *, unicode: bool = True
) -> list[Text]:
    """One line per racer within `width` (a wrapped line would push the next racers out of
    the panel): the bar gives way first, then the line's end."""
    longest = max((len(r.name) for r in racers), default=0)
    names = max(NAME_WIDTH_MIN, min(NAME_WIDTH_MAX, longest))
    bar = max(4, min(BAR_WIDTH, width - RACER_LINE_FIXED - names))
    lines = [racer_line(r, me, unicode, bar, names) for r in racers]
    for line in lines:
        line.no_wrap = True
        line.truncate(width, overflow="ellipsis")
    return lines


class RacersPanel(Widget):
    """Every racer: name, progress bar, cards on foundations, state, moves."""

    DEFAULT_CSS = """
    RacersPanel { height: auto; min-height: 1; }
    """

    def __init__(self, *, id: str | None = None, ascii: bool = False) -> None:
        super().__init__(id=id)
        self.race: RaceState | None = None
        self.me: PlayerId | None = None
        self.ascii = ascii

    def show(self, race: RaceState | None, me: PlayerId | None) -> None:
        self.race = race
        self.me = me
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.race.racers) if self.race else 1)

    def render(self) -> Text:
        if self.race is None or not self.race.racers:
            return Text("no racers yet", style="dim")
        racers = list(self.race.racers.values())
        lines = racer_lines(racers, self.me, self.size.width or 80, unicode=not self.ascii)
        return Text("\n").join(lines)

    @property
    def text(self) -> str:
        return self.render().plain


def selected_key(table: DataTable[Any]) -> str | None:
    """The key of the row under the table's cursor; None when there is none (an empty table,
    or a cursor left past the rows a refresh removed)."""
    if not table.row_count:
        return None
    try:
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
    except CellDoesNotExist:
        return None


def select_key(table: DataTable[Any], key: str | None) -> None:
    """Put the cursor on the row of `key` again after the table was filled anew (where that
    row still is; elsewhere the cursor stays)."""
    if key is None:
        return
    try:
        table.move_cursor(row=table.get_row_index(key), animate=False)
    except RowDoesNotExist:
        return


def clock_text(ms: int | None) -> str:
    if ms is None:
        return "--:--"
    seconds = max(0, ms) // 1000
    return f"{seconds // 60}:{seconds % 60:02d}"
