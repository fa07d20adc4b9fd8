"""Every game's board as text: fits 80x24, shows no face-down card, uses more room if any."""

from __future__ import annotations

import random
import re

import pytest

from solrace.client.render import (
    STYLE_RED,
    Hit,
    header_line,
    header_lines,
    render_board,
    render_plain,
    wants_color,
)
from solrace.engine import GAME_IDS, Audience, BoardView, Game, deal, to_short_name, view
from solrace.server.protocol.ids import PlayerId

CARD = re.compile(r"(?<![A-Za-z0-9])([A2-9TJQK][CSHD])(?![A-Za-z0-9])")


def positions(game_id: str, count: int = 6) -> list[BoardView]:
    """The deal and boards after random playouts of growing length (long columns included)."""
    boards: list[BoardView] = []
    for seed in range(count):
        game: Game = deal(game_id, str(seed + 1))
        rng = random.Random(seed)
        for _ in range(seed * 60):
            moves = game.card_moves() or game.legal_moves()
            if not moves:
                break
            game.play(rng.choice(moves))
        board = view(game, Audience.PLAYER)
        assert isinstance(board, BoardView)
        boards.append(board)
    return boards


def tall_klondike() -> BoardView:
    """A Klondike view with the tallest column the rules allow (6 backs + K..A)."""
    board = positions("klondike", 1)[0]
    run = ["KS", "QH", "JC", "TD", "9S", "8H", "7C", "6D", "5S", "4H", "3C", "2D", "AS"]
    piles = dict(board.piles)
    t6 = piles["tableau[6]"]
    piles["tableau[6]"] = type(t6)(t6.name, 6, tuple(run))
    return BoardView(board.game_id, piles, 1, "play", None, board.progress, won=False, stuck=False)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_every_game_fits_80x24_and_shows_every_pile(game_id: str) -> None:
    for board in positions(game_id):
        rendered = render_board(board, 80, 24, unicode=False, color=False)
        assert rendered.height <= 24, rendered.plain
        assert rendered.width <= 80, rendered.plain
        text = rendered.plain
        for name, pile in board.piles.items():
            assert re.search(rf"(?<![a-z0-9]){to_short_name(name)}(?![0-9])", text), name
            if pile.cards:
                assert pile.cards[-1] in text, (name, text)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_no_face_down_card_is_ever_shown(game_id: str) -> None:
    for seed, board in enumerate(positions(game_id)):
        game = deal(game_id, str(seed + 1))
        hidden = {p.name for p in game.piles if p.face_down_count()}
        text = render_plain(board)
        shown = set(CARD.findall(text))
        face_up = {c for p in board.piles.values() for c in p.cards}
        assert shown <= face_up, (shown - face_up, hidden)
        backs = sum(p.down for p in board.piles.values() if not p.name.startswith("stock"))
        if backs:
            assert "##" in text


def test_tallest_klondike_column_fits_and_folds_only_when_short_of_room() -> None:
    board = tall_klondike()
    full = render_board(board, 80, 24, unicode=False, color=False)
    assert full.height <= 24
    assert "AS" in full.plain and "KS" in full.plain
    assert ":" not in "".join(line[36:] for line in full.lines[3:])  # nothing folded
    small = render_board(board, 80, 14, unicode=True, color=False)
    assert small.height <= 14
    assert "A♠" in small.plain and "K♠" in small.plain and "⋮" in small.plain


@pytest.mark.parametrize("game_id", ["colorado", "british-square", "terrace", "klondike"])
def test_more_room_means_no_folding(game_id: str) -> None:
    for board in positions(game_id):
        big = render_board(board, 160, 50, unicode=False, color=False)
        tokens = big.plain.split()
        assert not any(re.fullmatch(r"[+:]\d+", token) for token in tokens), big.plain
        for name, pile in board.piles.items():
            if name.startswith(("tableau", "reserve")):
                for card in pile.cards:
                    assert card in big.plain


def test_hits_name_the_pile_and_the_number_of_cards_picked() -> None:
    board = tall_klondike()
    rendered = render_board(board, 80, 24, unicode=False, color=False)
    lines = rendered.lines
    row = next(i for i, line in enumerate(lines) if line.endswith("AS"))
    x = lines[row].index("AS")
    assert rendered.hit(x, row) == Hit("t6", 1)
    row_k = next(i for i, line in enumerate(lines) if line.rstrip().endswith("KS"))
    assert rendered.hit(lines[row_k].index("KS"), row_k) == Hit("t6", 13)
    stock_row = next(i for i, line in enumerate(lines) if line.startswith("s "))
    assert rendered.hit(0, stock_row) == Hit("s", 0)


def test_colour_styles_and_no_color() -> None:
    board = positions("klondike", 1)[0]
    styled = render_board(board, 80, 24, color=True)
    styles = {str(span.style) for span in styled.text.spans}
    assert STYLE_RED in styles
    plain = render_board(board, 80, 24, color=False)
    assert all(str(span.style) in ("bold", "reverse bold") for span in plain.text.spans)
    assert wants_color({"NO_COLOR": "1"}) is False
    assert wants_color({}) is True


def test_selected_pile_label_is_highlighted() -> None:
    board = positions("klondike", 1)[0]
    rendered = render_board(board, 80, 24, color=False, selected="t3")
    assert any(str(span.style) == "reverse bold" for span in rendered.text.spans)


def test_header_names_the_game_progress_and_pass() -> None:
    board = positions("casino-klondike", 1)[0]
    line = header_line(board)
    assert line.startswith("Casino Klondike") and "0/52" in line and "pass 1/3" in line
    assert len(header_line(board, width=30)) <= 30


def test_a_narrow_header_keeps_the_racer_s_name_and_drops_words_first() -> None:
    """A spectator's board titled with its racer's name: the name stays however narrow (it
    used to become the game's id, so eight boards all read `queen-of-italy ...`)."""
    board = positions("queen-of-italy", 1)[0]
    line = header_line(board, "dora", width=26)
    assert line.startswith("dora  0/104") and "foundations" not in line
    assert header_line(board, width=26).startswith("Queen of Italy  0/104")  # the game


def test_a_header_too_long_for_its_line_never_cuts_a_part() -> None:
    """On 60 columns the hint of what to do first lost its end (`...play a t card to its`),
    and a racer's board of 29 said `pass 1` for `pass 1/∞`."""
    hint = "choose the base: play a t card to its foundation"
    queen = positions("queen-of-italy", 1)[0]
    assert header_lines(queen, width=60, rows=2) == ["Queen of Italy  0/104 on foundations", hint]
    assert header_line(queen, width=60) == "Queen of Italy  0/104"  # one line: the parts that fit
    klondike = positions("klondike", 1)[0]
    assert header_line(klondike, "bob-the-builder", width=29) == "bob-the-builder  0/52"
    assert header_line(klondike, "a-name-longer-than-the-line", width=20) == "a-name-longer-than-…"
    for game_id in GAME_IDS:
        board = positions(game_id, 1)[0]
        whole = header_line(board, width=500).split("  ")
        for width in (20, 29, 40, 60):
            for rows in (1, 2):
                lines = header_lines(board, width=width, rows=rows)
                assert len(lines) <= rows and all(len(line) <= width for line in lines)
                for part in "  ".join(lines).split("  ")[1:]:  # the title may be cut
                    assert part in whole or part == f"{board.progress[0]}/{board.progress[1]}"


def test_the_own_board_on_60_columns_has_its_whole_hint() -> None:
    """The hint takes a second line where the board leaves one spare; a small board (a
    spectator's) keeps its lines for the piles."""
    queen = positions("queen-of-italy", 1)[0]
    lines = render_board(queen, 60, 13, color=False).lines
    assert lines[:2] == [
        "Queen of Italy  0/104 on foundations",
        "choose the base: play a t card to its foundation",
    ]
    small = render_board(queen, 29, 6, color=False, title="dora")
    assert small.lines[0] == "dora  0/104" and small.height <= 6


def test_result_lines_say_what_their_time_is() -> None:
    from solrace.client.render import result_line
    from solrace.server.protocol.messages import ResultEntry
    from solrace.server.protocol.vocab import RacerStateName

    def entry(state: RacerStateName, cards: int, ms: int) -> ResultEntry:
        return ResultEntry(
            rank=1, player_id=PlayerId("p1"), name="ann", state=state, on_foundations=cards,
            total=52, elapsed_ms=ms,
        )  # fmt: skip

    assert result_line(entry("finished", 52, 93_012)) == "1. ann finished 52/52 in 93.012s"
    assert result_line(entry("resigned", 17, 8_700)) == (
        "1. ann resigned 17/52, last card out at 8.700s"
    )
    assert result_line(entry("timed_out", 0, 0)) == "1. ann timed_out 0/52"


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_any_size_down_to_the_smallest_renders_within_it(game_id: str) -> None:
    """A board in a small share of the screen (a spectator's three boards in 80x24) is laid
    out within its width, however cramped (a pile's row with room for one card used to fail
    with an IndexError: `solrace watch` exited 1). Lines past the height are the widget's
    to clip."""
    for board in positions(game_id, 4):
        for width in (20, 24, 27, 33, 40):
            for height in (6, 8, 11):
                rendered = render_board(board, width, height, unicode=False, color=False)
                assert rendered.width <= width, (width, height)


def test_racer_lines_fit_the_panel_one_line_each() -> None:
    """At 60 columns a racer's line wrapped, so the panel's rows held half the racers."""
    from solrace.client.state import RacerStatus
    from solrace.client.widgets import BAR_WIDTH, racer_lines

    racers = [
        RacerStatus(
            PlayerId(f"p{n}"), f"racer-with-a-long-name-{n}", "playing", False, 12, 104, 1234
        )
        for n in range(8)
    ]
    for width in (40, 60, 80, 120):
        lines = racer_lines(racers, PlayerId("p0"), width)
        assert len(lines) == 8
        assert all(len(line.plain) <= width and "\n" not in line.plain for line in lines)
    wide = racer_lines(racers, PlayerId("p0"), 120)[0].plain
    assert "█" * 2 in wide or "░" * BAR_WIDTH in wide  # the whole bar where there is room
    assert "1234 moves" in wide and "(away)" in wide


def test_a_short_racer_line_keeps_cards_and_state_and_cuts_the_name() -> None:
    """Half a line of a 60 column panel (the watch screen's two racers to a line)."""
    from solrace.client.state import RacerStatus
    from solrace.client.widgets import short_racer_line

    racer = RacerStatus(PlayerId("p1"), "racer-with-a-long-name", "timed_out", True, 12, 104, 9)
    line = short_racer_line(racer, PlayerId("p1"), 29, unicode=True).plain
    assert line == "▶ racer-wit… 12/104 timed_out"
    short = RacerStatus(PlayerId("p2"), "ann", "playing", True, 3, 52, 9)
    assert short_racer_line(short, None, 29, unicode=False).plain == (
        "  ann" + " " * 11 + " 3/52 playing"
    )


@pytest.mark.parametrize("game_id", ["colorado", "british-square"])
def test_a_small_board_still_shows_every_tableau_top_card(game_id: str) -> None:
    """A spectator's board at 60x20 with 3-4 racers (29x7, 29x8): Colorado's 20 piles used to
    show their labels only (each card drawn under the next label). The top cards line up,
    each line labelled with its first pile, and clicking one picks that pile's top card."""
    for board in positions(game_id, 4):
        for width, height in ((29, 7), (29, 8), (30, 9), (38, 7)):
            rendered = render_board(board, width, height, unicode=False, color=False)
            assert rendered.width <= width
            assert rendered.height <= height, (width, height, rendered.plain)
            for name, pile in board.piles.items():
                if name.startswith("tableau") and pile.cards:
                    top = pile.cards[-1]
                    spots = [
                        (x, y)
                        for y, line in enumerate(rendered.lines)
                        for x in range(len(line) - 1)
                        if line[x : x + 2] == top
                        and rendered.hit(x, y) == Hit(to_short_name(name), 1)
                    ]
                    assert spots, (name, width, height, rendered.plain)


def test_a_board_with_no_room_for_its_tableau_says_so() -> None:
    board = positions("colorado", 1)[0]
    rendered = render_board(board, 20, 6, unicode=False, color=False)
    assert "20 piles: no room" in rendered.plain
