"""A board as text: pure layout of an engine `BoardView` into a grid of styled characters.

One layout serves the Textual board widget (styled `rich.text.Text`, mouse hits by cell) and
the plain line mode (`Rendered.plain`). It reads only the view and the piles' kinds, so every
game in the registry gets a layout without naming any game:
- stock, waste and foundations flow along the top, wrapping when the row is full;
- each reserve is one fanned row;
- up to ten tableau piles stand as columns; more (Colorado's 20, British Square's 16) lie as
  fanned rows in one or more grid columns.
When a pile does not fit, face-down cards collapse into one back with a count and the middle of
a long face-up run folds into a `⋮n` marker; the cards that play (the tops) always show.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rich.text import Text

from solrace.engine import BoardView, PileView, UnknownGameError, game_class, to_short_name
from solrace.server.protocol.messages import ResultEntry
from solrace.server.protocol.replay import result_time

SUIT_SYMBOLS: Final = {"C": "♣", "S": "♠", "H": "♥", "D": "♦"}
RED_SUITS: Final = frozenset("HD")

STYLE_RED: Final = "bold #b00000 on #f2f2f2"
STYLE_BLACK: Final = "bold #000000 on #f2f2f2"
STYLE_BACK: Final = "#9fb7ff on #1f3a80"
STYLE_LABEL: Final = "dim"
STYLE_SELECTED: Final = "reverse bold"
STYLE_EMPTY: Final = "dim"
STYLE_TITLE: Final = "bold"
STYLE_WON: Final = "bold green"
STYLE_STUCK: Final = "bold yellow"

MAX_COLUMNS: Final = 10
"""More tableau piles than this lie as rows instead of standing as columns."""

_ROW_LABEL_WIDTH: Final = 4
"""A fanned row's label (`t12 `), before its cards."""


def wants_color(environ: Mapping[str, str] | None = None) -> bool:
    """False when the user asked for no colour (https://no-color.org)."""
    env = os.environ if environ is None else environ
    return not env.get("NO_COLOR")


@dataclass(frozen=True, slots=True)
class Hit:
    """What a cell of the board shows: a pile, and how many cards from there to the top.

    `depth` is 0 for a pile's label, an empty pile or its face-down cards (a target, not
    something to pick up), else the number of cards a pick at this cell takes."""

    pile: str
    depth: int


@dataclass(slots=True)
class Rendered:
    """A rendered board: plain lines, the same with styles, and the hit of each cell."""

    lines: list[str]
    text: Text
    hits: dict[tuple[int, int], Hit] = field(default_factory=dict)

    @property
    def plain(self) -> str:
        return "\n".join(self.lines)

    @property
    def height(self) -> int:
        return len(self.lines)

    @property
    def width(self) -> int:
        return max((len(line) for line in self.lines), default=0)

    def hit(self, x: int, y: int) -> Hit | None:
        return self.hits.get((x, y))


class _Faces:
    """How cards, backs and gaps look in one rendering."""

    def __init__(self, unicode: bool) -> None:
        self.unicode = unicode
        self.back = "▒▒" if unicode else "##"
        self.empty = "··" if unicode else "--"
        self.fold = "⋮" if unicode else ":"

    def card(self, text: str) -> tuple[str, str]:
        rank, suit = text[0], text[1]
        face = rank + (SUIT_SYMBOLS.get(suit, suit) if self.unicode else suit)
        return face, STYLE_RED if suit in RED_SUITS else STYLE_BLACK


class _Canvas:
    def __init__(self, width: int, color: bool, faces: _Faces, selected: str | None) -> None:
        self.width = width
        self.color = color
        self.faces = faces
        self.selected = selected
        self.chars: list[list[str]] = []
        self.styles: list[list[str]] = []
        self.hits: dict[tuple[int, int], Hit] = {}

    def put(self, x: int, y: int, text: str, style: str = "", hit: Hit | None = None) -> int:
        """Write `text` at (x, y), clipped to the width; returns the x after it."""
        while len(self.chars) <= y:
            self.chars.append([" "] * self.width)
            self.styles.append([""] * self.width)
        if not self.color and style not in (STYLE_SELECTED, STYLE_TITLE):
            style = ""
        for i, ch in enumerate(text):
            cx = x + i
            if cx >= self.width:
                break
            self.chars[y][cx] = ch
            self.styles[y][cx] = style
            if hit is not None:
                self.hits[(cx, y)] = hit
        return x + len(text)

    def finish(self) -> Rendered:
        lines: list[str] = []
        text = Text(no_wrap=True, overflow="crop")
        for y, (row, styles) in enumerate(zip(self.chars, self.styles, strict=True)):
            end = len(row)
            while end and row[end - 1] == " " and not styles[end - 1]:
                end -= 1
            lines.append("".join(row[:end]))
            if y:
                text.append("\n")
            x = 0
            while x < end:
                style = styles[x]
                start = x
                while x < end and styles[x] == style:
                    x += 1
                text.append("".join(row[start:x]), style=style or None)
        return Rendered(lines, text, self.hits)


def _kind(name: str) -> str:
    return name.split("[", 1)[0]


def _short(name: str) -> str:
    try:
        return to_short_name(name)
    except ValueError:
        return name


def _label_style(short: str, selected: str | None) -> str:
    return STYLE_SELECTED if short == selected else STYLE_LABEL


def _title_of(game_id: str) -> tuple[str, int, int]:
    """The game's title, its stock passes (-1: unlimited) and draw count."""
    try:
        cls = game_class(game_id)
    except UnknownGameError:
        return game_id, 1, 1
    return cls.title, cls.max_rounds, cls.draw


def header_line(board: BoardView, title: str | None = None, width: int = 80) -> str:
    """One line about the board: title, progress, round, base rank, outcome."""
    return header_lines(board, title, width)[0]


def header_lines(
    board: BoardView, title: str | None = None, width: int = 80, rows: int = 1
) -> list[str]:
    """The board's title, progress, round, base rank, hint and outcome in at most `rows`
    lines of `width`: one line when it fits, with shorter words when that fits (a given
    title, a racer's name, stays); else broken between its parts onto up to `rows` lines;
    else one line of the parts that fit whole (the title cut if it must): never a part cut
    in its middle (`pass 1` for `pass 1/∞`, half of the hint)."""
    name, max_rounds, _ = _title_of(board.game_id)
    on, total = board.progress
    parts = [title or name, f"{on}/{total} on foundations"]
    if max_rounds != 1:
        rounds = "∞" if max_rounds < 0 else str(max_rounds)
        parts.append(f"pass {board.round}/{rounds}")
    if board.base_rank:
        parts.append(f"base {board.base_rank}")
    if board.phase == "choose_base":
        parts.append("choose the base: play a t card to its foundation")
    if board.won:
        parts.append("WON")
    elif board.stuck:
        parts.append("STUCK")
    short = [*parts]  # shorter words; a given title (a racer's name) stays
    short[1] = f"{on}/{total}"
    if title is None and len(board.game_id) < len(name):
        short[0] = board.game_id
    for form in (parts, short):
        if len(_SEP.join(form)) <= width:
            return [_SEP.join(form)]
    for form in (parts, short):
        lines = _broken(form, width)
        if lines is not None and len(lines) <= rows:
            return lines
    line = short[0] if len(short[0]) <= width else short[0][: width - 1] + "…"
    for part in short[1:]:
        if len(line) + len(_SEP) + len(part) <= width:
            line += _SEP + part
    return [line]


_SEP: Final = "  "


def _broken(parts: list[str], width: int) -> list[str] | None:
    """`parts` on as many lines of `width` as they need, each whole (None: one is wider)."""
    lines: list[str] = []
    for part in parts:
        if len(part) > width:
            return None
        if lines and len(lines[-1]) + len(_SEP) + len(part) <= width:
            lines[-1] += _SEP + part
        else:
            lines.append(part)
    return lines


#: Most lines a board's header takes (when the board keeps room for its piles).
HEADER_ROWS: Final = 2


def render_board(
    board: BoardView,
    width: int = 80,
    height: int = 24,
    *,
    unicode: bool = True,
    color: bool = True,
    selected: str | None = None,
    title: str | None = None,
    show_header: bool = True,
) -> Rendered:
    """Lay `board` out in at most `width` x `height` cells (80 x 24 always suffices).

    The top row's cells stand two spaces apart, one when that is what makes the board fit.
    A header too long for one line (`header_lines`) takes two where the board leaves a line
    spare (the player's own board on 60 columns), else one line of the parts that fit (a
    spectator's small board keeps its lines for the piles)."""
    width = max(width, 20)
    height = max(height, 6)
    args = (board, width, height, unicode, color, selected)
    if not show_header:
        return _fitted(*args, [])[0]
    rendered, fits = _fitted(*args, header_lines(board, title, width))
    if rendered.height < height and fits:
        folded = header_lines(board, title, width, rows=HEADER_ROWS)
        if len(folded) > 1:
            taller, taller_fits = _fitted(*args, folded)
            if taller.height <= height and taller_fits:
                return taller
    return rendered


def _fitted(
    board: BoardView,
    width: int,
    height: int,
    unicode: bool,
    color: bool,
    selected: str | None,
    header: list[str],
) -> tuple[Rendered, bool]:
    """The board laid out under `header`, its top row's cells two spaces apart, or one
    when that fits better; and whether its tableau found room."""
    args = (board, width, height, unicode, color, selected, header)
    rendered, fits = _layout(*args, gap=2)
    if rendered.height > height or not fits:
        tight, tight_fits = _layout(*args, gap=1)
        if (tight_fits, -tight.height) > (fits, -rendered.height):
            return tight, tight_fits
    return rendered, fits


def _layout(
    board: BoardView,
    width: int,
    height: int,
    unicode: bool,
    color: bool,
    selected: str | None,
    header: list[str],
    *,
    gap: int,
) -> tuple[Rendered, bool]:
    """The board laid out under its `header` lines, and whether its tableau found room (else
    a line says not)."""
    faces = _Faces(unicode)
    canvas = _Canvas(width, color, faces, selected)
    _, _, draw = _title_of(board.game_id)
    style = STYLE_WON if board.won else STYLE_STUCK if board.stuck else STYLE_TITLE
    for y, line in enumerate(header):
        canvas.put(0, y, line, style)
    y = len(header)

    top: list[PileView] = []
    reserves: list[PileView] = []
    tableau: list[PileView] = []
    for pile in board.piles.values():
        kind = _kind(pile.name)
        if kind == "tableau":
            tableau.append(pile)
        elif kind == "reserve":
            reserves.append(pile)
        else:
            top.append(pile)
    top.sort(key=lambda p: ("stock", "waste", "foundation").index(_kind(p.name)))

    y = _draw_top_row(canvas, top, y, max(draw, 1), gap)
    for pile in reserves:
        _draw_fanned_row(canvas, pile, (0, y), width)
        y += 1
    rows_left = height - y
    if tableau and rows_left >= 4 and len(tableau) <= MAX_COLUMNS:
        # A spare line between the top and the columns when the columns do not need it.
        needed = 1 + max(p.down + len(p.cards) for p in tableau)
        if needed < rows_left:
            y += 1
            rows_left -= 1
    fits = True
    if tableau:
        if len(tableau) <= MAX_COLUMNS and len(tableau) * 3 <= width:
            _draw_columns(canvas, tableau, y, rows_left)
        else:
            fits = _draw_rows(canvas, tableau, y, rows_left)
    return canvas.finish(), fits


def _draw_top_row(canvas: _Canvas, piles: list[PileView], y: int, draw: int, gap: int) -> int:
    """Stock, waste and foundations as `label cards` cells flowing left to right."""
    if not piles:
        return y
    x = 0
    for pile in piles:
        cell = _top_cell(pile, canvas.faces, draw)
        cell_width = sum(len(t) for t, _, _ in cell)
        if x and x + cell_width > canvas.width:
            x = 0
            y += 1
        for i, (text, style, hit) in enumerate(cell):
            shown = _label_style(hit.pile if hit else "", canvas.selected) if i == 0 else style
            x = canvas.put(x, y, text, shown, hit)
        x += gap
    return y + 1


def _top_cell(pile: PileView, faces: _Faces, draw: int) -> list[tuple[str, str, Hit | None]]:
    short = _short(pile.name)
    target = Hit(short, 0)
    cell: list[tuple[str, str, Hit | None]] = [(short, STYLE_LABEL, target), (" ", "", target)]
    kind = _kind(pile.name)
    count = pile.down + len(pile.cards)
    if kind == "stock":
        if count:
            cell.append((faces.back, STYLE_BACK, target))
            cell.append((str(count), STYLE_LABEL, target))
        else:
            cell.append((faces.empty, STYLE_EMPTY, target))
        return cell
    if not pile.cards:
        cell.append((faces.empty, STYLE_EMPTY, target))
        return cell
    shown = pile.cards[-draw:] if kind == "waste" else pile.cards[-1:]
    for i, card in enumerate(shown):
        face, style = faces.card(card)
        top = i == len(shown) - 1
        cell.append((face, style, Hit(short, 1) if top else target))
        if not top:
            cell.append((" ", "", target))
    if kind == "foundation" and count > 1:
        cell.append((("×" if faces.unicode else "x") + str(count), STYLE_LABEL, target))
    return cell


def _draw_fanned_row(canvas: _Canvas, pile: PileView, at: tuple[int, int], cell_width: int) -> None:
    """One pile as a row: label, then the cards bottom to top, the oldest folded if needed."""
    x, y = at
    faces = canvas.faces
    short = _short(pile.name)
    target = Hit(short, 0)
    label_width = _ROW_LABEL_WIDTH
    x0 = x
    canvas.put(x, y, short, _label_style(short, canvas.selected), target)
    x += label_width
    slots = max(1, (cell_width - label_width - 1) // 3)
    total = pile.down + len(pile.cards)
    if total == 0:
        canvas.put(x, y, faces.empty, STYLE_EMPTY, target)
        return
    items: list[tuple[str, str, Hit]] = []
    if pile.down:
        items.append((faces.back + str(pile.down), STYLE_BACK, target))
    n_up = len(pile.cards)
    for i, card in enumerate(pile.cards):
        face, style = faces.card(card)
        items.append((face, style, Hit(short, n_up - i)))
    if len(items) > slots and slots == 1:
        items = items[-1:]  # room for one: the top card (the one to play), nothing folded
    elif len(items) > slots:
        hidden = len(items) - (slots - 1)
        first = items[0][2] if items[0][2].depth == 0 else Hit(short, items[hidden][2].depth + 1)
        items = [(f"+{hidden}", STYLE_LABEL, first), *items[hidden:]]
    for text, style, hit in items:
        if x - x0 >= cell_width:
            break
        canvas.put(x, y, text, style, hit)
        x += len(text) + 1


def _draw_columns(canvas: _Canvas, piles: list[PileView], y: int, rows: int) -> None:
    """Tableau piles as columns fanned downwards, labelled on top."""
    col_width = max(3, min(6, canvas.width // len(piles)))
    card_rows = max(1, rows - 1)
    for i, pile in enumerate(piles):
        x = i * col_width
        short = _short(pile.name)
        canvas.put(x, y, short, _label_style(short, canvas.selected), Hit(short, 0))
        items = _column_items(pile, short, card_rows, canvas.faces)
        for row, (text, style, hit) in enumerate(items):
            canvas.put(x, y + 1 + row, text, style, hit)


def _column_items(
    pile: PileView, short: str, rows: int, faces: _Faces
) -> list[tuple[str, str, Hit]]:
    """A column's rows within `rows` lines: backs collapse first, then the run's middle."""
    target = Hit(short, 0)
    n_up = len(pile.cards)
    ups = [(*faces.card(card), Hit(short, n_up - i)) for i, card in enumerate(pile.cards)]
    if not ups and not pile.down:
        return [(faces.empty, STYLE_EMPTY, target)]
    backs = [(faces.back, STYLE_BACK, target)] * pile.down
    if len(backs) + len(ups) <= rows:
        return backs + ups
    if pile.down:
        backs = [(faces.back[:1] + str(pile.down), STYLE_BACK, target)]
    room = rows - len(backs)
    if len(ups) <= room:
        return backs + ups
    if room < 3:
        return (backs + ups)[-rows:] if rows >= 1 else []
    keep = room - 2  # the run's first card, the fold, then the last `keep` cards
    hidden = len(ups) - 1 - keep
    fold_hit = Hit(short, ups[1 + hidden - 1][2].depth)
    fold = (f"{faces.fold}{hidden}", STYLE_LABEL, fold_hit)
    return [*backs, ups[0], fold, *ups[-keep:]]


def _draw_rows(canvas: _Canvas, piles: list[PileView], y: int, rows: int) -> bool:
    """Many tableau piles as fanned rows, in as many grid columns as the height needs.

    When a grid cell has no room for a label and a card (Colorado's 20 piles in a spectator's
    small board), the piles' top cards line up instead: see `_draw_tops`."""
    rows = max(1, rows)
    grid_cols = max(1, math.ceil(len(piles) / rows))
    per_col = math.ceil(len(piles) / grid_cols)
    cell_width = canvas.width // grid_cols
    if cell_width - 1 < _ROW_LABEL_WIDTH + 2:
        return _draw_tops(canvas, piles, y, rows)
    for i, pile in enumerate(piles):
        col, row = divmod(i, per_col)
        _draw_fanned_row(canvas, pile, (col * cell_width, y + row), cell_width - 1)
    return True


def _draw_tops(canvas: _Canvas, piles: list[PileView], y: int, rows: int) -> bool:
    """The piles' top cards in order, each line labelled with its first pile (`t7  5♠ 2♦ …`
    holds t7, t8, …); a line saying so (False) when even that does not fit in `rows` lines."""
    faces = canvas.faces
    per_line = (canvas.width - _ROW_LABEL_WIDTH) // 3
    lines = math.ceil(len(piles) / per_line) if per_line else rows + 1
    if lines > rows:
        canvas.put(0, y, f"{len(piles)} piles: no room, enlarge the view"[: canvas.width])
        return False
    per_line = math.ceil(len(piles) / lines)
    for line in range(lines):
        chunk = piles[line * per_line : (line + 1) * per_line]
        if not chunk:
            break
        first = _short(chunk[0].name)
        x = canvas.put(0, y + line, first, _label_style(first, canvas.selected), Hit(first, 0))
        x = max(x + 1, _ROW_LABEL_WIDTH)
        for pile in chunk:
            short = _short(pile.name)
            if pile.cards:
                face, style = faces.card(pile.cards[-1])
                canvas.put(x, y + line, face, style, Hit(short, 1))
            elif pile.down:
                canvas.put(x, y + line, faces.back, STYLE_BACK, Hit(short, 0))
            else:
                canvas.put(x, y + line, faces.empty, STYLE_EMPTY, Hit(short, 0))
            x += 3
    return True


def render_plain(board: BoardView, width: int = 80, height: int = 200) -> str:
    """The board in ASCII without styles: the `--plain` mode and screen readers."""
    return render_board(board, width, height, unicode=False, color=False).plain


def result_line(entry: ResultEntry) -> str:
    """`1. ann finished 52/52 in 93.012s`, `2. bob timed_out 17/52, last card out at 8.700s`."""
    line = f"{entry.rank}. {entry.name} {entry.state} {entry.on_foundations}/{entry.total}"
    time = result_time(entry)
    if not time:
        return line
    return f"{line} {time}" if entry.state == "finished" else f"{line}, {time}"
