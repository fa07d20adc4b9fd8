"""Audit of the stuck test against RULES.md ("Common to all"): with draw 3, a card in the stock
or waste counts only if some run of stock clicks, within the redeals left, brings it to the top
of the waste. Every position below has no card move: only the clicks can help."""

from __future__ import annotations

import pytest

from solrace.engine import DEAL

from .positions import position, snapshot

# Seven single black cards: nothing builds on another, none goes to a foundation, no space.
TOPS = ("9C", "9S", "7C", "7S", "5C", "5S", "3S")
COLUMNS = {f"tableau[{i}]": card for i, card in enumerate(TOPS)}


@pytest.mark.parametrize("game_id", ["klondike-draw3", "klondike-book", "klondike-book-3"])
def test_draw3_an_ace_that_no_click_turns_up_leaves_the_board_stuck(game_id: str) -> None:
    # Turned over, the waste deals AC 5H 7H, then 9H: the Ace is never the top card.
    game = position(game_id, {**COLUMNS, "waste": "AC 5H 7H 9H"})
    assert game.legal_moves() == [DEAL]
    before = snapshot(game)
    assert game.is_stuck()
    assert snapshot(game) == before


def test_draw1_turns_up_the_same_ace() -> None:
    game = position("klondike", {**COLUMNS, "waste": "AC 5H 7H 9H"})
    assert game.legal_moves() == [DEAL]
    assert not game.is_stuck()


@pytest.mark.parametrize(
    ("stock", "stuck"),
    [
        ("#AC #5H #7H", False),  # one click: 7H 5H AC
        ("#AC #5H #7H #9H", False),  # 9H 7H 5H, then AC
        ("#AC #5H #7H #9H #JH", False),  # JH 9H 7H, then 5H AC
        ("#5H #7H #AC", True),  # AC 7H 5H every time round
        ("#5H #7H #9H #AC", True),  # AC 9H 7H, then 5H
    ],
)
def test_draw3_a_stock_ace_counts_only_if_a_click_turns_it_up(stock: str, stuck: bool) -> None:
    game = position("klondike-draw3", {**COLUMNS, "stock": stock})
    assert game.is_stuck() is stuck


@pytest.mark.parametrize(
    ("game_id", "round_", "stuck"),
    [
        ("klondike-book-3", 3, False),  # one redeal left: it deals 5H 7H AC
        ("klondike-book-3", 4, True),  # three redeals used: the waste stays as it is
        ("klondike-draw3", 40, False),  # unlimited
        ("klondike-book", 40, False),
    ],
)
def test_draw3_the_redeals_left_decide(game_id: str, round_: int, stuck: bool) -> None:
    game = position(game_id, {**COLUMNS, "waste": "5H 7H AC 9H"}, round_=round_)
    assert game.is_stuck() is stuck
    assert game.legal_moves() == ([] if stuck else [DEAL])
    if not stuck:
        game.play(DEAL)
        assert game.pile_texts()["waste"] == "5H 7H AC"
        assert game.round == round_ + 1
