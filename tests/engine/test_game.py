"""What every board shares (engine/game.py): stuck, won, refusals, undo, copy, state text."""

from __future__ import annotations

import pytest

from solrace.engine import (
    DEAL,
    GAME_IDS,
    IllegalMoveError,
    InvalidCardError,
    InvalidMoveError,
    InvalidPositionError,
    Move,
    NothingToUndoError,
    deal,
)
from solrace.engine.piles import FOUNDATION, STOCK

from .positions import assert_refused, cards, position, snapshot

# -- stuck -------------------------------------------------------------------------------------


@pytest.mark.parametrize("game_id", ["klondike", "klondike-draw3", "casino-klondike"])
def test_multi_pass_stuck_when_cycling_the_stock_brings_nothing(game_id: str) -> None:
    game = position(game_id, {"tableau[0]": "5C", "stock": "#7H #8D #9S #6H"})
    assert game.legal_moves() == [DEAL]
    before = snapshot(game)
    assert game.is_stuck()
    assert snapshot(game) == before  # asking does not change the board


@pytest.mark.parametrize("game_id", ["klondike", "klondike-draw3", "casino-klondike"])
def test_multi_pass_not_stuck_when_the_stock_holds_a_playable_card(game_id: str) -> None:
    # Draw 1 and draw 3 both turn the Ace up in the first pass.
    game = position(game_id, {"tableau[0]": "5C", "stock": "#7H #8D #AH #9S #6H"})
    before = snapshot(game)
    assert not game.is_stuck()
    assert snapshot(game) == before


def test_multi_pass_not_stuck_when_the_next_round_brings_a_card() -> None:
    # The Ace lies under the waste's top: only a redeal brings it back.
    game = position("casino-klondike", {"tableau[0]": "5C", "waste": "AH 7H"}, round_=2)
    assert game.legal_moves() == [DEAL]
    assert not game.is_stuck()
    last = position("casino-klondike", {"tableau[0]": "5C", "waste": "AH 7H"}, round_=3)
    assert last.legal_moves() == []
    assert last.is_stuck()


def test_multi_pass_not_stuck_while_a_card_move_is_left() -> None:
    game = position("klondike", {"tableau[0]": "5C", "tableau[1]": "6D"})
    assert not game.is_stuck()


@pytest.mark.parametrize("game_id", ["vegas-klondike", "klondike-book-1"])
def test_one_pass_stuck_only_without_any_legal_move(game_id: str) -> None:
    game = position(game_id, {"tableau[0]": "5C", "stock": "#7H #8D"})
    assert game.legal_moves() == [DEAL]
    assert not game.is_stuck()  # one pass: a stock click is a move
    game = position(game_id, {"tableau[0]": "5C", "waste": "7H 8D"})
    assert game.legal_moves() == []
    assert game.is_stuck()


def test_one_pass_families_stuck_without_any_legal_move() -> None:
    assert position("colorado", {"tableau[0]": "5C"}).is_stuck()
    assert not position("colorado", {"tableau[0]": "5C", "waste": "9H"}).is_stuck()
    assert not position("colorado", {"tableau[0]": "5C", "stock": "#2D"}).is_stuck()
    # Every pile filled (spaces take any card), no two cards of a suit one rank apart, no Ace.
    square = {f"tableau[{i}]": "3579"[i % 4] + "CSHD"[i // 4] for i in range(16)}
    assert position("british-square", square).is_stuck()
    assert not position("british-square", {**square, "stock": "#9H"}).is_stuck()
    assert not position("british-square", {**square, "tableau[15]": ""}).is_stuck()
    terrace = {"foundation[0]": "5C", **{f"tableau[{i}]": "9" + "HDCS"[i % 4] for i in range(9)}}
    assert position("terrace", terrace).is_stuck()
    assert not position("terrace", {**terrace, "stock": "#2S"}).is_stuck()


def test_a_won_game_is_not_stuck() -> None:
    piles = {f"foundation[{i}]": cards(s, "A23456789TJQK") for i, s in enumerate("CSHD")}
    for game_id in ("klondike", "vegas-klondike"):
        game = position(game_id, piles)
        assert game.is_won()
        assert not game.is_stuck()
        assert game.progress() == (52, 52)


def test_fresh_deals_are_neither_won_nor_stuck() -> None:
    for game_id in GAME_IDS:
        game = deal(game_id, "1")
        assert not game.is_won()
        on, total = game.progress()
        assert total == 52 * game.decks
        texts = game.pile_texts()
        assert on == sum(len(texts[f"foundation[{i}]"].split()) for i in range(game.n_foundations))


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("game_id", "piles", "move", "message"),
    [
        (
            "klondike",
            {"tableau[3]": "9C", "waste": "9H"},
            "w-t3",
            "t3 builds down in alternating colours: it needs a red 8 on 9C, not 9H",
        ),
        ("klondike", {"tableau[3]": "9C"}, "t9-t3", "klondike has no pile t9"),
        ("klondike", {"tableau[3]": "9C"}, "r0-t3", "klondike has no pile r0"),
        ("klondike", {"tableau[3]": "9C"}, "t3-t3", "t3 cannot move onto itself"),
        ("klondike", {"tableau[3]": "9C"}, "t2-t3", "t2 is empty"),
        ("klondike", {"tableau[3]": "9C 8H"}, "t3-t2:3", "t3 holds only 2 card(s)"),
        ("klondike", {"tableau[3]": "#9C 8H"}, "t3-t2:2", "t3 has only 1 face-up card(s), not 2"),
        ("klondike", {"stock": "#KC"}, "s-t0", "cards leave the stock only by dealing ('deal')"),
        ("klondike", {"tableau[0]": "KC"}, "t0-w", "no card goes onto the waste"),
        ("colorado", {"tableau[0]": "5C"}, "t0-t0", "t0 cannot move onto itself"),
        ("terrace", {"foundation[0]": "5C", "reserve[0]": "7D"}, "r0-t0", "reserve cards go only"),
        (
            "british-square",
            {"tableau[0]": "5C"},
            "t0-f1",
            "f1 starts with an Ace of spades, not 5C",
        ),
    ],
)
def test_illegal_moves_change_nothing_and_say_why(
    game_id: str, piles: dict[str, str], move: str, message: str
) -> None:
    assert_refused(position(game_id, piles), move, message)


UP = "A23456789TJQK"


@pytest.mark.parametrize(
    ("game_id", "piles", "move", "message"),
    [
        # Klondike: each foundation one suit (C S H D), Ace to King.
        ("klondike", {"waste": "AD"}, "w-f0", "f0 starts with the Ace of clubs, not AD"),
        (
            "klondike",
            {"foundation[1]": "AS 2S", "waste": "5S"},
            "w-f1",
            "f1 needs the 3 of spades next, not 5S",
        ),
        (
            "klondike-book",
            {"foundation[1]": "AS 2S", "waste": "3C"},
            "w-f1",
            "f1 needs the 3 of spades next, not 3C",
        ),
        (
            "klondike",
            {"foundation[3]": cards("D", UP), "waste": "KS"},
            "w-f3",
            "f3 is complete (Ace to King of diamonds), not KS",
        ),
        (
            "klondike",
            {"foundation[0]": "AC", "tableau[0]": "3C 2C"},
            "t0-f0:2",
            "f0 takes one card at a time, not 2",
        ),
        # Colorado: f0..f3 up from the Ace, f4..f7 down from the King, in suit.
        ("colorado", {"waste": "QH"}, "w-f6", "f6 starts with a King of hearts, not QH"),
        (
            "colorado",
            {"foundation[0]": cards("C", UP[:7]), "waste": "9C"},
            "w-f0",
            "f0 needs an 8 of clubs next, not 9C",
        ),
        (
            "colorado",
            {"foundation[4]": cards("C", UP[::-1]), "waste": "AC"},
            "w-f4",
            "f4 is complete (King down to Ace of clubs), not AC",
        ),
        # The Terrace family: the base rank in the pile's suit, then up (wrapping) in
        # alternating colours, or in suit in General's Patience.
        (
            "queen-of-italy",
            {"foundation[0]": "TC", "reserve[0]": "TH"},
            "r0-f2",
            "f2 starts with a 10 of spades, not TH",
        ),
        (
            "terrace",
            {"foundation[0]": "KC", "reserve[0]": "AC"},
            "r0-f0",
            "f0 needs a red Ace next, not AC",
        ),
        (
            "falling-star",
            {"foundation[0]": "7D", "waste": "8D"},
            "w-f0",
            "f0 needs a black 8 next, not 8D",
        ),
        (
            "generals-patience",
            {"foundation[0]": "KC", "reserve[0]": "AH"},
            "r0-f0",
            "f0 needs an Ace of clubs next, not AH",
        ),
        # British Square: each suit Ace to King, then a second King down to the Ace.
        (
            "british-square",
            {"foundation[2]": cards("H", UP[:7]), "waste": "9H"},
            "w-f2",
            "f2 needs an 8 of hearts next, not 9H",
        ),
        (
            "british-square",
            {"foundation[2]": cards("H", UP + "K"), "waste": "JH"},
            "w-f2",
            "f2 builds down now and needs a Queen of hearts next, not JH",
        ),
    ],
)
def test_a_refused_foundation_move_names_the_card_the_pile_needs(
    game_id: str, piles: dict[str, str], move: str, message: str
) -> None:
    """A foundation's refusal says what it takes, not only "f0 does not accept AD on an
    empty pile" (the player cannot see from that that f0 is the clubs' pile)."""
    assert_refused(position(game_id, piles), move, message)


@pytest.mark.parametrize(
    ("game_id", "piles", "move", "message"),
    [
        # Klondike: down in alternating colours, no wrap; a space takes only a King.
        (
            "klondike",
            {"tableau[0]": "QH", "tableau[1]": "#3C TS"},
            "t0-t1",
            "t1 builds down in alternating colours: it needs a red 9 on TS, not QH",
        ),
        (
            "klondike-draw3",
            {"tableau[1]": "#3C AH", "tableau[2]": "KS"},
            "t2-t1",
            "t1 builds down in alternating colours and ends at the Ace: nothing goes on AH, not KS",
        ),
        (
            "vegas-klondike",
            {"foundation[2]": "AH 2H", "tableau[1]": "2S"},
            "f2-t1",
            "t1 builds down in alternating colours: it needs a red Ace on 2S, not 2H",
        ),
        (
            "casino-klondike",
            {"waste": "QH"},
            "w-t3",
            "t3 is empty: only a King may start it, not QH",
        ),
        (
            "klondike-book-3",
            {"tableau[0]": "KC QH", "tableau[1]": "#2C JS"},
            "t1-t2",
            "t2 is empty: only a King may start it, not JS (any card may once all four Kings "
            "lie at the bottom of columns: 1 does now)",
        ),
        # A run is named as a run, by the card it starts with and its size: not by that
        # card alone, as if it moved by itself.
        (
            "klondike",
            {"tableau[1]": "#2C 7H 6S 5D"},
            "t1-t3:3",
            "t3 is empty: only a King may start it, not the 3-card run from 7H",
        ),
        (
            "klondike",
            {"tableau[0]": "#3C TS", "tableau[1]": "#2C KH QH JC"},
            "t1-t0:2",
            "t0 builds down in alternating colours: it needs a red 9 on TS, not the 2-card run "
            "from QH",
        ),
        (
            "klondike-book",
            {"tableau[1]": "#2C 7H 6S"},
            "t1-t3:2",
            "t3 is empty: only a King may start it, not the 2-card run from 7H (any card may "
            "once all four Kings lie at the bottom of columns: 0 do now)",
        ),
        (
            "klondike-book-1",
            {"tableau[1]": "#AH", "tableau[2]": "KS QH"},
            "t2-t1:2",
            "t1 does not accept the 2-card run from KS on a face-down card",
        ),
        # A face-down top is not named, and its rule is not guessed at.
        (
            "klondike-book-1",
            {"tableau[1]": "#AH", "tableau[2]": "KS"},
            "t2-t1",
            "t1 does not accept KS on a face-down card",
        ),
        # Colorado: a tableau pile takes any card, but only from the waste.
        ("colorado", {"tableau[0]": "5C", "tableau[1]": "6D"}, "t0-t1", "t1 takes cards only "),
        # The Terrace family: down in alternating colours, a King on an Ace too.
        (
            "terrace",
            {"foundation[0]": "5C", "tableau[0]": "AS", "tableau[1]": "KS"},
            "t1-t0",
            "t0 builds down in alternating colours (a King goes on an Ace): it needs a red King "
            "on AS, not KS",
        ),
        (
            "queen-of-italy",
            {"foundation[2]": "5S 6H", "tableau[0]": "7H"},
            "f2-t0",
            "t0 builds down in alternating colours: it needs a black 6 on 7H, not 6H",
        ),
        (  # the foundations build in suit, the tableau still in alternating colours
            "generals-patience",
            {"foundation[0]": "5C", "tableau[0]": "9C", "waste": "8C"},
            "w-t0",
            "t0 builds down in alternating colours: it needs a red 8 on 9C, not 8C",
        ),
        (
            "blondes-and-brunettes",
            {"foundation[0]": "5C", "tableau[0]": "9C", "tableau[1]": "TD"},
            "t1-t0",
            "t0 builds down in alternating colours: it needs a red 8 on 9C, not TD",
        ),
        (
            "falling-star",
            {"foundation[0]": "5C", "tableau[0]": "AD", "waste": "KD"},
            "w-t0",
            "t0 builds down in alternating colours (a King goes on an Ace): it needs a black "
            "King on AD, not KD",
        ),
        # British Square: in suit, one rank up or down, then the way the bottom two set.
        (
            "british-square",
            {"tableau[0]": "9H", "waste": "9S"},
            "w-t0",
            "t0 builds in suit, up or down: it needs an 8 or 10 of hearts on 9H, not 9S",
        ),
        (
            "british-square",
            {"tableau[0]": "KC", "waste": "AC"},
            "w-t0",
            "t0 builds in suit, up or down: it needs a Queen of clubs on KC, not AC",
        ),
        (
            "british-square",
            {"tableau[0]": "7D 8D", "tableau[1]": "7D"},
            "t1-t0",
            "t0 builds up in diamonds: it needs a 9 of diamonds on 8D, not 7D",
        ),
        (
            "british-square",
            {"tableau[0]": "2S AS", "waste": "KS"},
            "w-t0",
            "t0 builds down in spades and ends at the Ace: nothing goes on AS, not KS",
        ),
        # The waste and the reserve take no card in any game.
        ("klondike", {"tableau[0]": "KC"}, "t0-w", "no card goes onto the waste: only the stock"),
        (
            "terrace",
            {"foundation[0]": "5C", "tableau[0]": "9C"},
            "t0-r0",
            "no card goes onto the reserve: it only gives cards",
        ),
    ],
)
def test_a_refused_tableau_move_names_the_rule_it_breaks(
    game_id: str, piles: dict[str, str], move: str, message: str
) -> None:
    """A tableau pile's refusal says which rule the move breaks and what would fit, not only
    "t1 does not accept QH on TS"."""
    assert_refused(position(game_id, piles), move, message)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_no_refusal_on_a_real_deal_falls_back_to_does_not_accept(game_id: str) -> None:
    """Every game explains a refusal onto its tableau (a face-up top or a space), waste or
    reserve by its own rules: none says only "t1 does not accept QH on TS"."""
    game = deal(game_id, "123456")
    game.play(game.legal_moves()[-1])
    refused = 0
    for src in game.piles:
        for dst in game.piles:
            if src is dst or dst.kind in (STOCK, FOUNDATION):
                continue
            move = Move(src.short, dst.short, 1)
            if game.is_legal(move):
                continue
            with pytest.raises(IllegalMoveError) as info:
                game.play(move)
            assert "does not accept" not in str(info.value), move
            refused += 1
    assert refused > 20


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_refusals_on_a_real_deal_change_nothing(game_id: str) -> None:
    game = deal(game_id, "123456")
    game.play(game.legal_moves()[-1])
    before = snapshot(game)
    refused = 0
    for src in ["s", "w", *(f"f{i}" for i in range(8)), *(f"t{i}" for i in range(20)), "r0"]:
        for dst in ["w", "f0", "f7", "t0", "t5", "t19"]:
            for n in (1, 2):
                move = Move(src, dst, n)
                if game.is_legal(move):
                    continue
                with pytest.raises(IllegalMoveError) as info:
                    game.play(move)
                assert str(info.value)
                refused += 1
    assert refused > 100
    assert snapshot(game) == before


@pytest.mark.parametrize("text", ["", "t1", "t1-", "x-t1", "t1-t2:0", "t1-t2:x", "t01-t2", "w t1"])
def test_unparsable_moves_raise_invalid_move_error(text: str) -> None:
    game = deal("klondike", "1")
    before = snapshot(game)
    with pytest.raises(InvalidMoveError, match="expected 'deal', 'SRC-DST' or 'SRC-DST:N'"):
        game.play(text)
    assert snapshot(game) == before


def test_parse_and_legality_errors_are_distinct_value_errors() -> None:
    assert issubclass(InvalidMoveError, ValueError)
    assert issubclass(IllegalMoveError, ValueError)
    assert not issubclass(InvalidMoveError, IllegalMoveError)
    assert not issubclass(IllegalMoveError, InvalidMoveError)


# -- undo, copy, setup -------------------------------------------------------------------------


def test_undo_without_moves_raises() -> None:
    game = deal("klondike", "1")
    with pytest.raises(NothingToUndoError, match="no move to undo"):
        game.undo()


def test_undo_returns_the_move_and_restores_automatic_follow_ups() -> None:
    game = position("klondike", {"waste": "AC", "stock": "#9H #5H"})
    before = snapshot(game)
    game.play("w-f0")
    assert game.touched_piles() == ("stock", "waste", "foundation[0]")
    assert game.undo() == Move("w", "f0")
    assert snapshot(game) == before
    assert game.touched_piles() == ()


def test_forget_undo_keeps_the_history_and_the_latest_actions() -> None:
    game = deal("klondike-draw3", "11")
    for _ in range(6):
        game.play(DEAL)
    before_last = game.copy()
    before_last.undo()
    game.forget_undo(1)
    assert (game.ply, game.undo_depth) == (6, 1)
    assert game.touched_piles() == ("stock", "waste")
    assert not game.is_stuck()  # the stuck test clicks and takes back on its own records
    assert game.undo() == DEAL
    assert game.pile_texts() == before_last.pile_texts()
    with pytest.raises(NothingToUndoError):
        game.undo()
    game.forget_undo(0)
    assert (game.ply, game.undo_depth) == (5, 0)


def test_copy_is_independent() -> None:
    game = deal("klondike", "7")
    game.play(DEAL)
    after_one = game.pile_texts()
    twin = game.copy()
    assert twin.pile_texts() == after_one
    assert twin.history == game.history
    twin.play(DEAL)
    assert game.pile_texts() == after_one
    assert game.ply == 1
    game.play(DEAL)
    assert game.pile_texts() == twin.pile_texts()
    twin.undo()
    twin.undo()
    assert twin.pile_texts() == deal("klondike", "7").pile_texts()
    assert game.ply == 2
    game.undo()
    assert game.pile_texts() == after_one


def test_from_piles_refuses_unknown_piles_and_cards() -> None:
    with pytest.raises(InvalidPositionError, match="klondike has no pile 'reserve\\[0\\]'"):
        position("klondike", {"reserve[0]": "AC"})
    with pytest.raises(InvalidCardError, match="not a card: 'XX'"):
        position("klondike", {"tableau[0]": "XX"})
    with pytest.raises(InvalidPositionError, match="face-down cards must lie under face-up ones"):
        position("klondike", {"tableau[0]": "AC #2C"})


def test_state_text_round_trips_through_from_piles() -> None:
    for game_id in GAME_IDS:
        game = deal(game_id, "99")
        for move in game.legal_moves()[:1]:
            game.play(move)
        again = position(game_id, game.pile_texts(), round_=game.round)
        assert again.pile_texts() == game.pile_texts()
        assert set(again.legal_moves()) == set(game.legal_moves())
        assert str(game).splitlines()[0].split(": ")[0] in game.pile_texts()
