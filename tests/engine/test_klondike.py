"""Klondike family rule edges (RULES.md "Klondike family"), on hand-built positions."""

from __future__ import annotations

import pytest

from solrace.engine import DEAL, Move

from .positions import assert_plays, assert_refused, cards, position

PYSOL_KLONDIKES = ("klondike", "klondike-draw3", "vegas-klondike", "casino-klondike")
BOOK_KLONDIKES = ("klondike-book", "klondike-book-3", "klondike-book-1")
ALL_KLONDIKES = PYSOL_KLONDIKES + BOOK_KLONDIKES

# Cards that can never be played in the positions below (no tableau, no Aces, no Kings).
DEAD_STOCK = "#5H #6H #7H"


def _passes(game_id: str, clicks: int = 60) -> int:
    """Click the stock until it refuses (at most ``clicks`` times); the round reached."""
    game = position(game_id, {"stock": DEAD_STOCK})
    for _ in range(clicks):
        if DEAL not in game.legal_moves():
            assert not game.is_legal(DEAL)
            break
        game.play(DEAL)
    return game.round


@pytest.mark.parametrize(
    ("game_id", "passes"),
    [
        ("vegas-klondike", 1),
        ("klondike-book-1", 1),
        ("casino-klondike", 3),
        ("klondike-book-3", 4),
    ],
)
def test_limited_redeals(game_id: str, passes: int) -> None:
    assert _passes(game_id) == passes


@pytest.mark.parametrize("game_id", ["klondike", "klondike-draw3", "klondike-book"])
def test_unlimited_redeals(game_id: str) -> None:
    assert _passes(game_id, clicks=60) > 10
    game = position(game_id, {"waste": "5H 6H"}, round_=1000)
    assert_plays(game, "deal")
    assert game.round == 1001


@pytest.mark.parametrize(
    ("game_id", "last_round"),
    [
        ("vegas-klondike", 1),
        ("klondike-book-1", 1),
        ("casino-klondike", 3),
        ("klondike-book-3", 4),
    ],
)
def test_no_redeal_after_the_last_pass(game_id: str, last_round: int) -> None:
    game = position(game_id, {"waste": "5H 6H"}, round_=last_round)
    assert_refused(game, "deal", "no redeal left")
    if last_round > 1:
        game = position(game_id, {"waste": "5H 6H"}, round_=last_round - 1)
        assert_plays(game, "deal")
        assert game.round == last_round


@pytest.mark.parametrize("game_id", ALL_KLONDIKES)
def test_empty_stock_and_waste_cannot_be_clicked(game_id: str) -> None:
    game = position(game_id, {"tableau[0]": "5C"})
    assert_refused(game, "deal", "the stock and the waste are both empty")


def test_draw3_deals_three_then_what_is_left() -> None:
    game = position("klondike-draw3", {"stock": "#2H #3H #4H #5H #6H"})
    game.play("deal")
    assert game.pile_texts()["waste"] == "6H 5H 4H"
    assert game.pile_texts()["stock"] == "#2H #3H"
    game.play("deal")
    assert game.pile_texts()["waste"] == "6H 5H 4H 3H 2H"
    assert game.pile_texts()["stock"] == ""


@pytest.mark.parametrize(
    ("game_id", "waste_after", "stock_after"),
    [("klondike", "6H", "#2H #3H #4H #5H"), ("klondike-draw3", "6H 5H 4H", "#2H #3H")],
)
def test_redeal_turns_the_waste_over_in_original_order_and_auto_deals(
    game_id: str, waste_after: str, stock_after: str
) -> None:
    game = position(game_id, {"waste": "6H 5H 4H 3H 2H", "tableau[0]": "9C"})
    game.play("deal")
    texts = game.pile_texts()
    # The first card dealt in the first pass comes first again; auto deal turns it up at once.
    assert texts["waste"] == waste_after
    assert texts["stock"] == stock_after
    assert game.round == 2
    assert game.touched_piles() == ("stock", "waste")


def test_auto_deal_refills_an_emptied_waste() -> None:
    game = position("klondike", {"waste": "AC", "stock": "#9H #5H"})
    game.play("w-f0")
    assert game.pile_texts()["waste"] == "5H"
    assert game.pile_texts()["stock"] == "#9H"


def test_only_the_top_waste_card_plays() -> None:
    game = position("klondike", {"waste": "KH QS", "tableau[1]": "KD"})
    assert_refused(game, "w-t0:2", "w cannot give 2 cards at once")
    assert_refused(game, "w-t0", "t0 is empty: only a King may start it, not QS")
    assert_plays(game, "w-t1")


@pytest.mark.parametrize("game_id", ALL_KLONDIKES)
def test_spaces_take_only_kings_or_runs_headed_by_a_king(game_id: str) -> None:
    piles = {
        "waste": "QS",
        "tableau[1]": "#2C KH QS",
        "tableau[2]": "#3C JD",
        "tableau[3]": "#4C KC",
    }
    game = position(game_id, piles)
    assert_refused(game, "w-t0", "t0 is empty: only a King may start it, not QS")
    assert_refused(game, "t2-t0", "t0 is empty: only a King may start it, not JD")
    assert_plays(game, "t1-t0:2")
    assert game.pile_texts()["tableau[0]"] == "KH QS"
    assert game.pile_texts()["tableau[1]"] == "2C"
    assert_plays(game, "t3-t4")
    assert game.pile_texts()["tableau[3]"] == "4C"


@pytest.mark.parametrize("game_id", PYSOL_KLONDIKES)
def test_a_foundation_king_may_go_back_to_a_space(game_id: str) -> None:
    game = position(game_id, {"foundation[2]": cards("H", "A23456789TJQK")})
    assert_plays(game, "f2-t0")
    assert game.pile_texts()["tableau[0]"] == "KH"


@pytest.mark.parametrize("game_id", PYSOL_KLONDIKES)
def test_foundation_take_back_in_pysolfc_games(game_id: str) -> None:
    game = position(game_id, {"foundation[1]": "AS 2S", "tableau[0]": "#9C 3H", "waste": "7C"})
    assert Move("f1", "t0") in game.legal_moves()
    game.play("f1-t0")
    assert game.pile_texts()["foundation[1]"] == "AS"
    assert game.pile_texts()["tableau[0]"] == "#9C 3H 2S"
    assert_refused(
        game, "f1-t0", "t0 builds down in alternating colours: it needs a red Ace on 2S, not AS"
    )


@pytest.mark.parametrize("game_id", BOOK_KLONDIKES)
def test_no_foundation_take_back_in_book_games(game_id: str) -> None:
    game = position(game_id, {"foundation[1]": "AS 2S", "tableau[0]": "#9C 3H", "waste": "7C"})
    assert_refused(game, "f1-t0", "foundation cards never move back in this game")
    assert all(m.src != "f1" for m in game.legal_moves())


def test_foundations_build_up_in_suit_one_card_at_a_time() -> None:
    game = position("klondike", {"foundation[0]": "AC", "tableau[0]": "3C 2C", "waste": "2S"})
    assert_refused(game, "w-f0", "f0 needs the 2 of clubs next, not 2S")
    assert_refused(game, "t0-f0:2", "f0 takes one card at a time, not 2")
    assert_refused(game, "w-f1", "f1 starts with the Ace of spades, not 2S")
    assert_plays(game, "t0-f0")


def _run_position() -> dict[str, str]:
    return {
        "tableau[0]": "#5C 9H 8S 7H",
        "tableau[1]": "9D",
        "tableau[2]": "TS",
        "tableau[3]": "8C",
        "foundation[2]": cards("H", "A23456"),
    }


@pytest.mark.parametrize("game_id", PYSOL_KLONDIKES)
def test_pysolfc_games_move_any_face_up_tail(game_id: str) -> None:
    game = position(game_id, _run_position())
    legal = set(game.legal_moves())
    assert {Move("t0", "t1", 2), Move("t0", "t2", 3), Move("t0", "t3", 1)} <= legal
    assert_plays(game, "t0-t1:2")
    assert game.pile_texts()["tableau[1]"] == "9D 8S 7H"


@pytest.mark.parametrize("game_id", BOOK_KLONDIKES)
def test_book_games_move_only_the_whole_face_up_run(game_id: str) -> None:
    game = position(game_id, _run_position())
    assert_refused(game, "t0-t1:2", "only the whole face-up run of t0 moves (3 cards)")
    assert_refused(game, "t0-t3", "only the whole face-up run of t0 moves (3 cards)")
    assert Move("t0", "f2") in game.legal_moves()  # the top card alone still goes up
    tableau_moves = {m for m in game.legal_moves() if m.src == "t0" and m.dst.startswith("t")}
    assert tableau_moves == {Move("t0", "t2", 3)}
    assert_plays(game, "t0-t2:3")
    assert game.pile_texts()["tableau[0]"] == "5C"  # turned face up automatically
    assert game.pile_texts()["tableau[2]"] == "TS 9H 8S 7H"


def _kings(bottom_of_t3: str) -> dict[str, str]:
    return {
        "tableau[0]": "KC",
        "tableau[1]": "KS QH",
        "tableau[2]": "KH",
        "tableau[3]": bottom_of_t3,
        "tableau[5]": "#3C 5D 4S",
        "waste": "4C",
    }


@pytest.mark.parametrize("game_id", BOOK_KLONDIKES)
def test_book_spaces_take_anything_once_four_kings_lie_face_up_at_the_bottom(
    game_id: str,
) -> None:
    game = position(game_id, _kings("KD"))
    legal = set(game.legal_moves())
    assert {Move("w", "t4"), Move("t5", "t4", 2), Move("t1", "t4", 2)} <= legal
    assert Move("t5", "t4", 1) not in legal  # still whole runs only
    assert Move("t1", "t4", 1) not in legal
    assert_plays(game, "t5-t4:2")
    assert game.pile_texts()["tableau[4]"] == "5D 4S"
    assert game.pile_texts()["tableau[5]"] == "3C"


@pytest.mark.parametrize(
    "t3",
    [
        "#2C KD",  # a King over a face-down card is not at the bottom
        "#KD 5S",  # a face-down King does not count
        "QD",  # only three Kings
        "KD QS",  # fine, but a fourth column holds no King: see below
    ],
)
@pytest.mark.parametrize("game_id", BOOK_KLONDIKES)
def test_book_spaces_take_only_kings_until_four_kings_lie_at_the_bottom(
    game_id: str, t3: str
) -> None:
    piles = _kings(t3)
    if t3 == "KD QS":
        piles["tableau[2]"] = "#KH 5C"
    game = position(game_id, piles)
    assert_refused(game, "w-t4", "t4 is empty: only a King may start it, not 4C")
    assert_refused(game, "t5-t4:2", "t4 is empty: only a King may start it, not the 2-card run")
    # The player is told how far the board is from the exception (face-up Kings only).
    assert_refused(
        game,
        "w-t4",
        "not 4C (any card may once all four Kings lie at the bottom of columns: 3 do now)",
    )


@pytest.mark.parametrize("game_id", PYSOL_KLONDIKES)
def test_pysolfc_spaces_stay_king_only_with_four_kings_down(game_id: str) -> None:
    game = position(game_id, _kings("KD"))
    assert_refused(game, "w-t4", "t4 is empty: only a King may start it, not 4C")


@pytest.mark.parametrize("game_id", ALL_KLONDIKES)
def test_face_down_tops_turn_up_automatically(game_id: str) -> None:
    game = position(
        game_id, {"tableau[0]": "#5C #7D KH", "foundation[0]": "AC", "tableau[1]": "#2C"}
    )
    # A board set up with a face-down top card turns it over after the next action.
    game.play("t0-t2")
    texts = game.pile_texts()
    assert texts["tableau[0]"] == "#5C 7D"
    assert texts["tableau[1]"] == "2C"
    game.play("t1-f0")
    assert game.pile_texts()["tableau[1]"] == ""
    assert all(not m.is_deal for m in game.legal_moves())


@pytest.mark.parametrize("game_id", ALL_KLONDIKES)
def test_tableau_builds_down_in_alternating_colours_without_wrap(game_id: str) -> None:
    game = position(
        game_id,
        {"tableau[0]": "9C", "tableau[1]": "AH", "tableau[2]": "KS", "waste": "8C"},
    )
    assert_refused(
        game, "w-t0", "t0 builds down in alternating colours: it needs a red 8 on 9C, not 8C"
    )
    assert_refused(
        game,
        "t2-t1",
        "t1 builds down in alternating colours and ends at the Ace: nothing goes on AH, not KS",
    )
    assert_refused(game, "t1-t2", "it needs a red Queen on KS, not AH")
