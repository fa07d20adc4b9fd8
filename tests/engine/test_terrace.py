"""Terrace family rule edges (RULES.md "Terrace family"), on hand-built positions and deals."""

from __future__ import annotations

import pytest

from solrace.engine import DEAL, Move, deal, parse_game_number
from solrace.engine.seeds import shuffled_deck

from .positions import assert_plays, assert_refused, cards, position

CHOOSING_GAMES = ("terrace", "queen-of-italy", "generals-patience")
STOCK_BASE_GAMES = ("blondes-and-brunettes", "falling-star")
TERRACE_GAMES = CHOOSING_GAMES + STOCK_BASE_GAMES
REFILLING_GAMES = ("terrace", "generals-patience", *STOCK_BASE_GAMES)
RESERVE_SIZES = {
    "terrace": 11,
    "queen-of-italy": 11,
    "generals-patience": 13,
    "blondes-and-brunettes": 10,
    "falling-star": 11,
}
SUIT_FOUNDATIONS = {"C": ("f0", "f1"), "S": ("f2", "f3"), "H": ("f4", "f5"), "D": ("f6", "f7")}


def _stock(*dealt: str) -> str:
    """Stock text whose cards are dealt in the order given (the first is the top)."""
    return " ".join(f"#{c}" for c in reversed(dealt))


# -- the deal and choosing the base ----------------------------------------------------------


@pytest.mark.parametrize("game_id", CHOOSING_GAMES)
@pytest.mark.parametrize("number", ["1", "31999", "123456"])
def test_choosing_deal_locks_the_stock_and_offers_only_base_moves(
    game_id: str, number: str
) -> None:
    game = deal(game_id, number)
    texts = game.pile_texts()
    assert game.phase() == "choose_base"
    assert game.base_rank() is None
    assert len(texts["reserve[0]"].split()) == RESERVE_SIZES[game_id]
    assert [len(texts[f"tableau[{i}]"].split()) for i in range(9)] == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert texts["waste"] == ""
    assert all(texts[f"foundation[{i}]"] == "" for i in range(8))
    expected = {
        Move(f"t{i}", f) for i in range(4) for f in SUIT_FOUNDATIONS[texts[f"tableau[{i}]"][1]]
    }
    assert set(game.legal_moves()) == expected
    assert_refused(game, "deal", "the stock is locked until the base card is chosen")
    assert_refused(game, "r0-f0", "choose the base card first")
    assert_refused(game, "t0-t4", "choose the base card first")


@pytest.mark.parametrize("game_id", CHOOSING_GAMES)
def test_choosing_the_base_deals_to_every_empty_tableau_pile_then_the_waste(game_id: str) -> None:
    dealt = ["2H", "3S", "4D", "5C", "6H", "7S", "8D", "9C", "TH"]
    game = position(
        game_id,
        {
            "reserve[0]": "QH JS 4C",
            "tableau[0]": "5H",
            "tableau[1]": "9C",
            "tableau[2]": "JD",
            "tableau[3]": "2S",
            "stock": _stock(*dealt),
        },
    )
    assert game.phase() == "choose_base"
    assert_refused(game, "t1-f2", "9C can start only f0 or f1")
    assert_plays(game, "t1-f1")
    texts = game.pile_texts()
    assert game.phase() == "play"
    assert game.base_rank() == 8
    assert texts["foundation[1]"] == "9C"
    # The emptied t1 first, then t4..t8 in index order, then one card to the waste.
    order = ["tableau[1]", *(f"tableau[{i}]" for i in range(4, 9)), "waste"]
    assert [texts[name] for name in order] == dealt[:7]
    assert [texts[f"tableau[{i}]"] for i in (0, 2, 3)] == ["5H", "JD", "2S"]  # unchosen stay
    assert texts["stock"] == _stock(*dealt[7:])
    game.undo()
    assert game.phase() == "choose_base"
    assert game.pile_texts()["stock"] == _stock(*dealt)


@pytest.mark.parametrize("game_id", STOCK_BASE_GAMES)
@pytest.mark.parametrize("number", ["1", "2", "31999", "32000", "123456", "ms4294967297"])
def test_stock_gives_the_base_at_the_deal(game_id: str, number: str) -> None:
    game = deal(game_id, number)
    texts = game.pile_texts()
    reserve = RESERVE_SIZES[game_id]
    # The stock's end is its top: reserve cards first, then t0..t8, then the base, then waste.
    order = [card for _, card in shuffled_deck(parse_game_number(number), 2)][::-1]
    base = order[reserve + 9]
    base_text = "A23456789TJQK"[base % 13] + "CSHD"[base // 13]
    first_of_suit = int(SUIT_FOUNDATIONS[base_text[1]][0][1:])
    assert game.phase() == "play"
    assert game.base_rank() == base % 13
    assert [texts[f"foundation[{i}]"] for i in range(8)] == [
        base_text if i == first_of_suit else "" for i in range(8)
    ]
    assert len(texts["reserve[0]"].split()) == reserve
    assert all(len(texts[f"tableau[{i}]"].split()) == 1 for i in range(9))
    assert len(texts["waste"].split()) == 1
    assert len(texts["stock"].split()) == 104 - reserve - 9 - 2
    assert DEAL in game.legal_moves()  # no choice to make: the stock is open at once


# -- building -----------------------------------------------------------------------------------


@pytest.mark.parametrize("game_id", TERRACE_GAMES)
def test_tableau_builds_down_in_alternating_colours_wrapping_king_on_ace(game_id: str) -> None:
    game = position(
        game_id,
        {
            "foundation[0]": "5C",
            "tableau[0]": "AH",
            "tableau[1]": "KS",
            "tableau[2]": "AS",
            "tableau[3]": "2D",
            "tableau[4]": "KH",
            "waste": "9C",
            "stock": "#3C",
        },
    )
    legal = set(game.legal_moves())
    assert {Move("t1", "t0"), Move("t2", "t3")} <= legal
    assert_refused(
        game,
        "t1-t2",
        "t2 builds down in alternating colours (a King goes on an Ace): "
        "it needs a red King on AS, not KS",
    )
    # no wrap upwards
    assert_refused(
        game, "t0-t1", "t1 builds down in alternating colours: it needs a red Queen on KS, not AH"
    )
    assert_refused(game, "t4-t0", "it needs a black King on AH, not KH")
    assert_plays(game, "t1-t0")
    assert game.pile_texts()["tableau[0]"] == "AH KS"
    assert_refused(game, "t0-t2:2", "cards move one at a time in this game")


@pytest.mark.parametrize("game_id", TERRACE_GAMES)
def test_foundations_build_up_from_the_base(game_id: str) -> None:
    # Alternating colours, suit free; General's Patience: in suit.
    in_suit = game_id == "generals-patience"
    legal_top = "TC" if in_suit else "TD"
    game = position(
        game_id,
        {
            "foundation[0]": "9C",
            "tableau[0]": "TS",
            "tableau[1]": legal_top,
            "tableau[2]": "JC" if in_suit else "JS",
            "tableau[3]": "TC" if not in_suit else "TD",
            "waste": "9H",
            "stock": "#4C",
        },
    )
    wanted = "f0 needs a 10 of clubs next" if in_suit else "f0 needs a red 10 next"
    assert_refused(game, "t0-f0", f"{wanted}, not TS")
    assert_refused(game, "t3-f0", f"{wanted}, not {'TD' if in_suit else 'TC'}")
    assert_refused(game, "t2-f0", f"{wanted}, not {'JC' if in_suit else 'JS'}")
    assert_refused(game, "w-f0", f"{wanted}, not 9H")
    # Other foundations start only with the base rank in their own suit.
    assert_refused(game, "t0-f2", "f2 starts with a 9 of spades, not TS")
    assert_refused(game, "w-f6", "f6 starts with a 9 of diamonds, not 9H")
    assert_plays(game, "w-f4")
    assert game.pile_texts()["foundation[4]"] == "9H"
    assert_plays(game, "t1-f0")
    assert_plays(game, "t2-f0")
    assert game.pile_texts()["foundation[0]"] == f"9C {legal_top} {'JC' if in_suit else 'JS'}"


@pytest.mark.parametrize("game_id", TERRACE_GAMES)
def test_foundations_wrap_from_king_to_ace_and_stop_at_13_cards(game_id: str) -> None:
    if game_id == "generals-patience":
        run, ace, next_after_full = cards("C", "QK"), "AC", "QC"
        full = cards("C", "QKA23456789TJ")
    else:
        run, ace, next_after_full = "QC KH", "AS", "QH"
        full = "QC KH AS 2D 3C 4H 5S 6D 7C 8H 9S TD JC"
    game = position(
        game_id,
        {
            "foundation[0]": run,
            "foundation[1]": full,
            "tableau[0]": ace,
            "reserve[0]": next_after_full,
        },
    )
    assert_refused(game, "r0-f1", f"f1 is complete (13 cards), not {next_after_full}")
    assert_plays(game, "t0-f0")
    assert game.pile_texts()["foundation[0]"] == f"{run} {ace}"


@pytest.mark.parametrize("game_id", TERRACE_GAMES)
def test_reserve_cards_go_only_to_the_foundations(game_id: str) -> None:
    game = position(
        game_id,
        {
            "reserve[0]": "9H 3C" if game_id == "generals-patience" else "9H 3D",
            "foundation[0]": "2C",
            "tableau[0]": "4S",
            "waste": "KD",
            "stock": "#7C",
        },
    )
    assert_refused(game, "r0-t0", "reserve cards go only to the foundations")
    assert_refused(game, "r0-t1", "reserve cards go only to the foundations")
    assert_refused(game, "r0-f0:2", "cards move one at a time in this game")
    assert_plays(game, "r0-f0")
    assert game.pile_texts()["reserve[0]"] == "9H"  # only the top card plays
    assert Move("r0", "f0") not in game.legal_moves()


# -- refills and spaces -------------------------------------------------------------------------


@pytest.mark.parametrize("game_id", REFILLING_GAMES)
def test_emptied_tableau_pile_takes_the_waste_and_the_waste_is_refilled(game_id: str) -> None:
    game = position(
        game_id,
        {
            "foundation[0]": "5C",
            "tableau[0]": "5H",
            "tableau[1]": "8C",
            "waste": "JS",
            "stock": _stock("TD", "7H"),
        },
    )
    assert_plays(game, "t0-f4")
    texts = game.pile_texts()
    assert texts["tableau[0]"] == "JS"
    assert texts["waste"] == "TD"
    assert texts["stock"] == _stock("7H")
    assert_plays(game, "w-t0")
    assert game.pile_texts()["tableau[0]"] == "JS TD"
    assert game.pile_texts()["waste"] == "7H"  # an emptied waste is refilled at once


@pytest.mark.parametrize("game_id", REFILLING_GAMES)
def test_spaces_take_any_tableau_card_once_stock_and_waste_are_exhausted(game_id: str) -> None:
    game = position(
        game_id,
        {"foundation[0]": "5C", "tableau[0]": "5H", "tableau[1]": "8C", "reserve[0]": "9D"},
    )
    assert_plays(game, "t0-f4")
    assert game.pile_texts()["tableau[0]"] == ""
    assert_plays(game, "t1-t0")
    assert_refused(game, "r0-t1", "reserve cards go only to the foundations")
    assert_refused(game, "deal", "the stock is empty (one pass only)")


@pytest.mark.parametrize("game_id", REFILLING_GAMES)
def test_foundation_cards_never_move_with_terrace_rules(game_id: str) -> None:
    game = position(game_id, {"foundation[0]": "5C 6H", "tableau[0]": "7S", "waste": "9D"})
    assert_refused(game, "f0-t0", "foundation cards never move in this game")
    assert all(not m.src.startswith("f") for m in game.legal_moves())


def test_queen_of_italy_spaces_take_any_single_card_and_nothing_refills() -> None:
    game = position(
        "queen-of-italy",
        {
            "reserve[0]": "4D",
            "foundation[0]": "5C 6H",
            "tableau[0]": "5H",
            "tableau[1]": "7S",
            "tableau[2]": "KC",
            "waste": "QD",
            "stock": _stock("2C"),
        },
    )
    assert_plays(game, "t0-f4")
    texts = game.pile_texts()
    assert texts["tableau[0]"] == ""  # not refilled from the waste
    assert texts["waste"] == "QD"
    legal = set(game.legal_moves())
    assert {Move("t1", "t0"), Move("t2", "t0"), Move("w", "t0"), Move("f0", "t0")} <= legal
    assert_refused(game, "r0-t0", "reserve cards go only to the foundations")
    assert_plays(game, "f0-t0")
    assert game.pile_texts()["tableau[0]"] == "6H"
    assert game.pile_texts()["foundation[0]"] == "5C"


def test_queen_of_italy_take_back_never_moves_a_base_card() -> None:
    game = position(
        "queen-of-italy",
        {
            "foundation[0]": "5C 6H",
            "foundation[2]": "5S",
            "tableau[0]": "7S",
            "waste": "QD",
            "stock": _stock("2C"),
        },
    )
    assert_refused(game, "f2-t1", "a foundation's base card never moves")
    assert_plays(game, "f0-t0")
    assert game.pile_texts()["tableau[0]"] == "7S 6H"
    assert_refused(game, "f0-t1", "a foundation's base card never moves")
    assert all(not m.src.startswith("f") for m in game.legal_moves())


def test_queen_of_italy_auto_deal_refills_an_empty_waste() -> None:
    game = position(
        "queen-of-italy", {"foundation[0]": "5C", "waste": "6H", "stock": _stock("9S", "2D")}
    )
    game.play("w-f0")
    assert game.pile_texts()["waste"] == "9S"
    assert game.pile_texts()["stock"] == _stock("2D")


def test_stock_deals_one_card_per_click_one_pass() -> None:
    game = position("queen-of-italy", {"foundation[0]": "5C", "stock": _stock("9S", "2D")})
    assert_plays(game, "deal")
    assert game.pile_texts()["waste"] == "9S"
    assert_plays(game, "deal")
    assert game.pile_texts()["waste"] == "9S 2D"
    assert_refused(game, "deal", "the stock is empty (one pass only)")


@pytest.mark.parametrize("game_id", TERRACE_GAMES)
def test_won_with_eight_full_foundations(game_id: str) -> None:
    in_suit = game_id == "generals-patience"
    piles = {}
    for i in range(8):
        suit = "CSHD"[i // 2]
        if in_suit:
            piles[f"foundation[{i}]"] = cards(suit, "3456789TJQKA2")
        else:
            other = "H" if suit in "CS" else "C"
            piles[f"foundation[{i}]"] = " ".join(
                r + (suit if k % 2 == 0 else other) for k, r in enumerate("3456789TJQKA2")
            )
    game = position(game_id, piles)
    assert game.progress() == (104, 104)
    assert game.is_won()
    assert not game.is_stuck()
