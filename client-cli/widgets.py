"""Textual widgets: a board that draws itself with `render.py` and knows which card was
clicked, and a panel of racers' progress bars."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.css.scalar import Unit
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Footer
from textual.widgets.data_table import CellDoesNotExist, CursorType, RowDoesNotExist

from solrace.engine import BoardView
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.vocab import RacerStateName

from .link_status import LinkStatus
from .render import Hit, Rendered, render_board, wants_color
from .state import RacerStatus, RaceState
from .wire_text import as_text

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


def wrap_parts(parts: Sequence[str], width: int, sep: str = "  ") -> str:
    """`parts` joined by `sep`, on as many lines as `width` needs: a head line on a narrow
    terminal breaks between its parts, never inside one (a part wider than `width` starts
    its own line, where it wraps)."""
    lines: list[str] = []
    for part in parts:
        if lines and cell_len(lines[-1] + sep + part) <= width:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return "\n".join(lines)


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


def fitted_widths(widths: Sequence[int], least: Sequence[int], room: int) -> list[int] | None:
    """Column widths whose sum is at most `room`, from each column's widest cell (`widths`):
    None when they fit as they are, else the widest columns narrowed first, none below its
    `least` (its header). Where even that does not fit, every column is at its least."""
    if sum(widths) <= room:
        return None
    fitted = [max(width, low) for width, low in zip(widths, least, strict=True)]
    while sum(fitted) > room:
        wider = [i for i, width in enumerate(fitted) if width > least[i]]
        if not wider:
            break
        widest = max(wider, key=lambda i: fitted[i])
        fitted[widest] -= 1
    return fitted


#: A table's row: its key (None: no key) and its cells.
Row = tuple[str | None, Sequence[str | Text]]
#: A table's form: its headers and rows.
Form = tuple[tuple[str, ...], list[tuple[str | None, tuple[Text, ...]]]]


def _lines_of(cell: Text) -> list[str]:
    return cell.plain.split("\n")


def _texts(cells: Sequence[str | Text]) -> tuple[Text, ...]:
    """A row's cells as `Text` (a `str` shown as it is: never read as markup)."""
    return tuple(cell if isinstance(cell, Text) else as_text(cell) for cell in cells)


def _height(cells: Sequence[Text]) -> int:
    """The lines a row of these cells takes."""
    return max((len(_lines_of(cell)) for cell in cells), default=1)


class FittedTable(DataTable[Any]):
    """A table that fits its width: each column as wide as its widest cell while they all
    fit; when they do not, the widest columns give way and their cells wrap onto more lines
    (the row grows), so that no cell is cut and no column hides past the right edge (a 60
    column terminal). The headers stay whole. A table may also have a stacked form (fewer
    columns, two lines a row) for when its own columns do not fit (`fill`)."""

    def __init__(
        self, *headers: str, id: str | None = None, cursor_type: CursorType = "row"
    ) -> None:
        super().__init__(id=id, cursor_type=cursor_type)
        #: The headers of the columns shown (the stacked form's, when it is shown).
        self.headers = headers
        #: The columns' widths when they were narrowed to fit (None: as wide as their cells).
        self.widths: list[int] | None = None
        self._forms: list[Form] = [(headers, [])]
        self._laid_out_for = (0, 0)
        self.add_columns(*headers)

    def fill(
        self, rows: Iterable[Row], *, stacked: tuple[Sequence[str], Iterable[Row]] | None = None
    ) -> None:
        """Show `rows` (each its key and cells; a `str` is shown as it is, never as markup)
        instead of those shown, the cursor staying on the row of the same key. `stacked`,
        the same rows with other headers (fewer columns, cells of two lines), is shown
        instead when the columns of `rows` do not fit side by side."""
        forms = [(self._forms[0][0], rows)]
        if stacked is not None:
            forms.append((tuple(stacked[0]), stacked[1]))
        self._forms = [
            (headers, [(key, _texts(cells)) for key, cells in form_rows])
            for headers, form_rows in forms
        ]
        self._lay_out()

    def _capacity(self) -> int:
        """How many lines the table shows without a vertical scrollbar."""
        height = self.styles.height
        if height is not None and not height.is_auto:
            return self.size.height
        most = self.styles.max_height
        if most is not None and most.unit is Unit.CELLS:
            return int(most.value)
        parent = self.parent
        return parent.size.height if isinstance(parent, Widget) else self.size.height

    def _choose(self) -> tuple[Form, list[int], bool]:
        """The form to show, its columns' widths, and whether they were narrowed: the first
        form whose columns fit with every word whole (narrowed where a cell's words wrap
        onto more lines), else the last one, its words folded where they must be."""
        width = self.size.width
        chosen: tuple[Form, list[int], bool] = (self._forms[0], [], False)
        for reserve in (0, self.styles.scrollbar_size_vertical):
            chosen = self._choose_form(width - reserve)
            (_, rows), widths, _ = chosen
            wrapped = (self._wrap_row(cells, widths) for _, cells in rows)
            lines = self.header_height + sum(_height(cells) for cells in wrapped)
            if not width or lines <= self._capacity():
                break  # no vertical scrollbar: its columns are free
        return chosen

    def _choose_form(self, width: int) -> tuple[Form, list[int], bool]:
        padding = 2 * self.cell_padding
        for index, form in enumerate(self._forms):
            headers, rows = form
            natural = [cell_len(header) for header in headers]
            words = [max(1, cell_len(header)) for header in headers]
            for _, cells in rows:
                for i, cell in enumerate(cells):
                    natural[i] = max(natural[i], *(cell_len(t) for t in _lines_of(cell)))
                    words[i] = max([words[i], *(cell_len(w) for w in cell.plain.split())])
            room = width - padding * len(headers)
            if not width or sum(natural) <= room:
                return form, natural, False  # as wide as their cells (or no width yet)
            if sum(words) <= room or index == len(self._forms) - 1:
                least = words if sum(words) <= room else [max(1, cell_len(h)) for h in headers]
                fitted = fitted_widths(natural, least, room)
                return form, natural if fitted is None else fitted, True
        raise AssertionError("a table has a form")

    def _lay_out(self) -> None:
        chosen = selected_key(self)
        self._laid_out_for = (self.size.width, self._capacity())
        (headers, rows), widths, narrowed = self._choose()
        shown = widths if narrowed else None
        if headers != self.headers or shown != self.widths:
            self.headers, self.widths = headers, shown
            self.clear(columns=True)
            for header, width in zip(headers, widths, strict=True):
                self.add_column(header, width=width if narrowed else None)
        else:
            self.clear()
        for key, cells in rows:
            wrapped = self._wrap_row(cells, widths)
            self.add_row(*wrapped, key=key, height=_height(wrapped))
        select_key(self, chosen)

    def _wrap_row(self, cells: Sequence[Text], widths: Sequence[int]) -> list[Text]:
        """Each cell in lines of at most its column's width (words whole where they fit)."""
        wrapped: list[Text] = []
        for cell, width in zip(cells, widths, strict=True):
            if all(cell_len(line) <= width for line in _lines_of(cell)):
                wrapped.append(cell)
            else:
                lines = cell.wrap(self.app.console, width, overflow="fold")
                wrapped.append(Text("\n").join(lines))
        return wrapped

    def on_resize(self, event: events.Resize) -> None:
        if (self.size.width, self._capacity()) != self._laid_out_for:
            self._lay_out()


def columned_table(table_id: str, *columns: str, cursor_type: CursorType = "row") -> FittedTable:
    """A table with its columns already there: a screen's `update_view` may add rows before
    the screen's `on_mount` runs (a server message handled while the screen mounts)."""
    return FittedTable(*columns, id=table_id, cursor_type=cursor_type)


STATE_STYLES: dict[RacerStateName, str] = {
    "finished": "bold green",
    "playing": "",
    "joined": "dim",
    "stuck": "yellow",
    "resigned": "red",
    "gone": "red",
    "timed_out": "yellow",
}


#: What a board's place says until the deal comes.
DEAL_PLACEHOLDER: Final = "waiting for the deal…"


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
        self.placeholder = DEAL_PLACEHOLDER
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


#: Between two racers on one line of a panel in two columns (`RacersPanel.columns`).
RACER_GAP = "  "


def short_racer_line(racer: RacerStatus, me: PlayerId | None, width: int, unicode: bool) -> Text:
    """A racer in `width` columns (half a line of a narrow panel): mark, name, cards on
    foundations and state; no bar, no moves. The name gives way first (cut with "…")."""
    mark = ("▶ " if unicode else "> ") if racer.player_id == me else "  "
    total = racer.total or 0
    cards = f" {racer.on_foundations}/{total} "
    state = str(racer.state)
    names = max(4, width - len(mark) - len(cards) - len(state))
    line = Text(mark)
    line.append(f"{name_cell(racer.name, names):<{names}}", style="bold" if mark.strip() else "")
    line.append(cards)
    line.append(state, style=STATE_STYLES.get(racer.state, ""))
    line.no_wrap = True
    line.truncate(width, overflow="ellipsis", pad=True)
    return line


class RacersPanel(Widget):
    """Every racer: name, progress bar, cards on foundations, state, moves. A race of more
    racers than the screen has lines to spare shows the player's own line and the first
    others, then how many more there are: 16 racers pushed the board off a screen of 20
    lines, and most of it off one of 24. A panel showing `every` racer (the watch screen's)
    never leaves one out: in two `columns` it puts two racers on a line, each shorter."""

    #: Lines of the screen the panel leaves to the rest (a board above all).
    LEAVES: ClassVar[int] = 16

    DEFAULT_CSS = """
    RacersPanel { height: auto; min-height: 1; }
    """

    def __init__(self, *, id: str | None = None, ascii: bool = False, every: bool = False) -> None:
        super().__init__(id=id)
        self.race: RaceState | None = None
        self.me: PlayerId | None = None
        self.ascii = ascii
        #: Every racer's line, however many (the screen leaves them the room).
        self.every = every
        #: Racers side by side on a line (1 or 2; `every` panels only).
        self.columns = 1

    def show(self, race: RaceState | None, me: PlayerId | None) -> None:
        self.race = race
        self.me = me
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        racers = len(self.race.racers) if self.race else 1
        if self.every:
            return max(1, -(-racers // self.columns))
        return max(1, min(racers, max(2, viewport.height - self.LEAVES)))

    def render(self) -> Text:
        if self.race is None or not self.race.racers:
            return Text("no racers yet", style="dim")
        racers = list(self.race.racers.values())
        if self.every and self.columns > 1:
            return self._in_columns(racers)
        lines = racer_lines(racers, self.me, self.size.width or 80, unicode=not self.ascii)
        room = self.size.height
        if room and len(lines) > room:
            shown = [i for i, racer in enumerate(racers) if racer.player_id == self.me][:1]
            shown += [i for i in range(len(racers)) if i not in shown][: room - 1 - len(shown)]
            more = Text(f"  … {len(racers) - len(shown)} more racers", style="dim")
            lines = [lines[i] for i in sorted(shown)] + [more]
        return Text("\n").join(lines)

    def _in_columns(self, racers: list[RacerStatus]) -> Text:
        """`racers` in `columns` side by side, down the first column first."""
        width = self.size.width or 80
        each = (width - len(RACER_GAP) * (self.columns - 1)) // self.columns
        cells = [short_racer_line(r, self.me, each, not self.ascii) for r in racers]
        rows = -(-len(cells) // self.columns)
        lines = [Text(RACER_GAP).join(cells[row::rows]) for row in range(rows)]
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
