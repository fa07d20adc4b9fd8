"""Colorado rule edges (RULES.md "Colorado"), on hand-built positions and real deals."""

from __future__ import annotations

from collections import Counter

from solrace.engine import Move, deal

from .positions import assert_plays, assert_refused, cards, position

BASES = {
    "foundation[0]": "AC",
    "foundation[1]": "AS",
    "foundation[2]": "AH",
    "foundation[3]": "AD",
    "foundation[4]": "KC",
    "foundation[5]": "KS",
    "foundation[6]": "KH",
    "foundation[7]": "KD",
}


def test_deal_puts_the_bases_on_the_foundations() -> None:
    game = deal("colorado", "123456")
    texts = game.pile_texts()
    assert {name: texts[name] for name in BASES} == BASES
    assert all(len(texts[f"tableau[{i}]"].split()) == 1 for i in range(20))
    assert "#" not in " ".join(texts[f"tableau[{i}]"] for i in range(20))
    assert len(texts["waste"].split()) == 1
    assert len(texts["stock"].split()) == 75
    everything = Counter(" ".join(texts.values()).replace("#", "").split())
    assert set(everything.values()) == {2} and len(everything) == 52


def test_an_emptied_pile_takes_the_waste_card_at_once() -> None:
    game = position("colorado", {**BASES, "tableau[0]": "2C", "waste": "9H", "stock": "#4S #5D"})
    game.play("t0-f0")
    texts = game.pile_texts()
    assert texts["foundation[0]"] == "AC 2C"
    assert texts["tableau[0]"] == "9H"
    assert texts["waste"] == "5D"  # the emptied waste is dealt to at once
    assert texts["stock"] == "#4S"


def test_an_emptied_pile_stays_empty_when_the_waste_is_empty() -> None:
    game = position("colorado", {**BASES, "tableau[0]": "2C", "tableau[1]": "QD"})
    game.play("t0-f0")
    assert game.pile_texts()["tableau[0]"] == ""
    assert game.legal_moves() == [Move("t1", "f7")]


def test_an_empty_pile_later_takes_a_waste_card_like_any_pile() -> None:
    # Waste empty at the moment t0 empties: t0 stays empty, then auto deal fills the waste.
    game = position("colorado", {**BASES, "tableau[0]": "2C", "tableau[1]": "8S", "stock": "#7H"})
    game.play("t0-f0")
    texts = game.pile_texts()
    assert texts["tableau[0]"] == ""
    assert texts["waste"] == "7H"
    assert {Move("w", "t0"), Move("w", "t1")} <= set(game.legal_moves())
    assert_plays(game, "w-t0")
    assert game.pile_texts()["tableau[0]"] == "7H"


def test_tableau_takes_any_card_but_only_from_the_waste() -> None:
    game = position("colorado", {**BASES, "tableau[0]": "5H", "tableau[1]": "6S", "waste": "QS"})
    assert_refused(game, "t0-t1", "t1 takes cards only from the waste")
    assert_plays(game, "w-t1")
    assert game.pile_texts()["tableau[1]"] == "6S QS"
    game.undo()
    assert_plays(game, "w-t0")  # same colour, no order: any card goes
    assert_refused(game, "t0-t1:2", "t1 takes cards only from the waste")


def test_tableau_cards_go_only_to_the_foundations_one_at_a_time() -> None:
    game = position("colorado", {**BASES, "tableau[0]": "3C 2C", "waste": "9H"})
    assert_refused(game, "t0-f0:2", "Colorado moves one card at a time")
    assert_plays(game, "t0-f0")
    assert_plays(game, "t0-f0")


def test_foundation_cards_never_move() -> None:
    game = position(
        "colorado",
        {**BASES, "foundation[0]": "AC 2C", "tableau[0]": "3H", "waste": "9H", "stock": "#5C"},
    )
    assert_refused(game, "f0-t0", "foundation cards never move")
    assert_refused(game, "f0-f1", "foundation cards never move in Colorado")
    assert_refused(game, "f4-f0", "foundation cards never move in Colorado")
    assert all(not m.src.startswith("f") for m in game.legal_moves())


def test_up_foundations_from_ace_down_foundations_from_king() -> None:
    game = position(
        "colorado",
        {
            **BASES,
            "tableau[0]": "QC",
            "tableau[1]": "2C",
            "tableau[2]": "JC",
            "tableau[3]": "QS",
            "waste": "2S",
        },
    )
    legal = set(game.legal_moves())
    assert {Move("t0", "f4"), Move("t1", "f0"), Move("t3", "f5"), Move("w", "f1")} <= legal
    assert_refused(game, "t2-f4", "f4 needs a Queen of clubs next, not JC")
    assert_refused(game, "t0-f0", "f0 needs a 2 of clubs next, not QC")
    assert_refused(game, "t0-f5", "f5 needs a Queen of spades next, not QC")
    assert_refused(game, "t1-f4", "f4 needs a Queen of clubs next, not 2C")


def test_empty_down_foundation_starts_with_the_king_of_its_suit() -> None:
    game = position("colorado", {"tableau[0]": "KH", "tableau[1]": "AH", "tableau[2]": "KS"})
    assert set(game.legal_moves()) == {Move("t0", "f6"), Move("t1", "f2"), Move("t2", "f5")}


def test_the_stock_deals_only_onto_an_empty_waste_and_only_once() -> None:
    game = position("colorado", {**BASES, "tableau[0]": "9D", "waste": "7H", "stock": "#5C"})
    assert_refused(game, "deal", "play the waste card first")
    game.play("w-t0")
    assert game.pile_texts()["waste"] == "5C"  # auto deal
    game.play("w-t0")
    assert game.pile_texts()["waste"] == ""
    assert_refused(game, "deal", "the stock is empty (one pass only)")


def test_won_with_all_104_cards_on_the_foundations() -> None:
    up = {f"foundation[{i}]": cards(s, "A23456789TJQK") for i, s in enumerate("CSHD")}
    down = {f"foundation[{i + 4}]": cards(s, "KQJT98765432A") for i, s in enumerate("CSHD")}
    game = position("colorado", {**up, **down})
    assert game.progress() == (104, 104)
    assert game.is_won()
    assert not game.is_stuck()
    almost = position(
        "colorado", {**up, **down, "foundation[7]": cards("D", "KQJT98765432"), "tableau[0]": "AD"}
    )
    assert almost.progress() == (103, 104)
    assert not almost.is_won()
    almost.play("t0-f7")
    assert almost.is_won()
