"""British Square rule edges (RULES.md "British Square"), on hand-built positions and a deal."""

from __future__ import annotations

import pytest

from solrace.engine import Move, deal

from .positions import assert_plays, assert_refused, cards, position

UP = "A23456789TJQK"
DOWN = UP[::-1]


def test_deal_lays_sixteen_cards_and_one_to_the_waste() -> None:
    texts = deal("british-square", "123456").pile_texts()
    assert all(len(texts[f"tableau[{i}]"].split()) == 1 for i in range(16))
    assert "#" not in " ".join(texts[f"tableau[{i}]"] for i in range(16))
    assert len(texts["waste"].split()) == 1
    assert len(texts["stock"].split()) == 87
    assert all(texts[f"foundation[{i}]"] == "" for i in range(4))


def test_a_one_card_pile_takes_the_same_suit_one_rank_above_or_below() -> None:
    piles = {"tableau[0]": "5H", "tableau[1]": "4H", "tableau[2]": "6H", "tableau[3]": "5H"}
    piles |= {"tableau[4]": "6D", "waste": "4S"}
    game = position("british-square", piles)
    legal = set(game.legal_moves())
    assert {Move("t1", "t0"), Move("t2", "t0"), Move("t0", "t1"), Move("t0", "t2")} <= legal
    assert_refused(
        game, "t3-t0", "t0 builds in suit, up or down: it needs a 4 or 6 of hearts on 5H, not 5H"
    )
    assert_refused(game, "t4-t0", "it needs a 4 or 6 of hearts on 5H, not 6D")
    assert_refused(game, "w-t0", "it needs a 4 or 6 of hearts on 5H, not 4S")


@pytest.mark.parametrize(
    ("pile", "with_", "against", "rule"),
    [
        ("5H 6H", "7H", "5H", "t0 builds up in hearts: it needs a 7 of hearts on 6H, not 5H"),
        ("5H 4H", "3H", "5H", "t0 builds down in hearts: it needs a 3 of hearts on 4H, not 5H"),
    ],
)
def test_two_bottom_cards_set_the_direction(pile: str, with_: str, against: str, rule: str) -> None:
    game = position(
        "british-square",
        {"tableau[0]": pile, "tableau[1]": with_, "tableau[2]": against, "waste": "KH"},
    )
    assert_refused(game, "t2-t0", rule)
    assert_plays(game, "t1-t0")
    assert game.pile_texts()["tableau[0]"] == f"{pile} {with_}"


def test_direction_must_be_kept_in_suit_over_a_long_pile() -> None:
    game = position(
        "british-square",
        {"tableau[0]": cards("S", "98765"), "tableau[1]": "4S", "tableau[2]": "6S", "waste": "4C"},
    )
    assert_refused(game, "t2-t0", "t0 builds down in spades: it needs a 4 of spades on 5S, not 6S")
    assert_refused(game, "w-t0", "t0 builds down in spades: it needs a 4 of spades on 5S, not 4C")
    assert_plays(game, "t1-t0")


def test_direction_is_free_again_when_back_to_one_card() -> None:
    game = position(
        "british-square",
        {
            "tableau[0]": "5H 6H",
            "tableau[1]": "4H",
            "foundation[2]": cards("H", "A2345"),
            "waste": "KC",
        },
    )
    assert_refused(game, "t1-t0", "t0 builds up in hearts: it needs a 7 of hearts on 6H, not 4H")
    game.play("t0-f2")
    assert game.pile_texts()["tableau[0]"] == "5H"
    assert_plays(game, "t1-t0")
    assert game.pile_texts()["tableau[0]"] == "5H 4H"


@pytest.mark.parametrize(
    ("pile", "card", "rule"),
    [
        ("KS", "AS", "t0 builds in suit, up or down: it needs a Queen of spades on KS, not AS"),
        ("AS", "KS", "t0 builds in suit, up or down: it needs a 2 of spades on AS, not KS"),
        ("QS KS", "AS", "t0 builds up in spades and ends at the King: nothing goes on KS, not AS"),
        ("2S AS", "KS", "t0 builds down in spades and ends at the Ace: nothing goes on AS, not KS"),
    ],
)
def test_no_wrapping(pile: str, card: str, rule: str) -> None:
    game = position("british-square", {"tableau[0]": pile, "tableau[1]": card})
    assert_refused(game, "t1-t0", rule)


def test_foundations_go_up_a_to_k_then_down_k_to_a() -> None:
    game = position(
        "british-square",
        {
            "foundation[0]": cards("C", UP),
            "tableau[0]": "QC",
            "tableau[1]": "KC",
            "tableau[2]": "KC",
            "waste": "AS",
        },
    )
    assert_refused(game, "t0-f0", "f0 needs a second King of clubs next (then builds down), not QC")
    assert_plays(game, "t1-f0")
    assert_refused(game, "t2-f0", "f0 builds down now and needs a Queen of clubs next, not KC")
    assert_plays(game, "t0-f0")
    assert game.pile_texts()["foundation[0]"] == cards("C", UP + "KQ")
    assert_plays(game, "w-f1")  # from the waste too


def test_a_full_26_card_foundation_takes_nothing_more() -> None:
    game = position(
        "british-square",
        {"foundation[3]": f"{cards('D', UP)} {cards('D', DOWN[:-1])}", "tableau[0]": "AD"},
    )
    assert_plays(game, "t0-f3")
    assert len(game.pile_texts()["foundation[3]"].split()) == 26
    game = position(
        "british-square", {"foundation[3]": f"{cards('D', UP)} {cards('D', DOWN)}", "waste": "AD"}
    )
    assert_refused(game, "w-f3", "f3 is complete (26 cards), not AD")
    assert_refused(game, "w-f0", "f0 starts with an Ace of clubs, not AD")


def test_foundation_cards_never_move_back() -> None:
    game = position("british-square", {"foundation[0]": "AC 2C", "tableau[0]": "3C"})
    assert_refused(game, "f0-t0", "foundation cards never move back in British Square")
    assert_refused(game, "f0-t1", "foundation cards never move back in British Square")


def test_spaces_are_not_refilled_and_take_any_single_card() -> None:
    game = position(
        "british-square",
        {
            "foundation[2]": cards("H", "A234"),
            "tableau[0]": "5H",
            "tableau[1]": "9C 8C",
            "waste": "JD",
            "stock": "#2S",
        },
    )
    game.play("t0-f2")
    texts = game.pile_texts()
    assert texts["tableau[0]"] == ""
    assert texts["waste"] == "JD"
    assert texts["stock"] == "#2S"
    assert {Move("w", "t0"), Move("t1", "t0")} <= set(game.legal_moves())
    assert_refused(game, "t1-t0:2", "British Square moves one card at a time")
    assert_plays(game, "t1-t0")
    game.undo()
    assert_plays(game, "w-t0")


def test_stock_one_card_per_click_one_pass() -> None:
    game = position("british-square", {"tableau[0]": "9C", "stock": "#2S #3S"})
    assert_plays(game, "deal")
    assert game.pile_texts()["waste"] == "3S"
    assert_plays(game, "deal")
    assert game.pile_texts()["waste"] == "3S 2S"
    assert_refused(game, "deal", "the stock is empty (one pass only)")


def test_won_with_all_104_cards_on_the_foundations() -> None:
    piles = {f"foundation[{i}]": f"{cards(s, UP)} {cards(s, DOWN)}" for i, s in enumerate("CSHD")}
    game = position("british-square", piles)
    assert game.progress() == (104, 104)
    assert game.is_won()
    assert not game.is_stuck()
