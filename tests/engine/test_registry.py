"""The game registry (engine/registry.py): ids, unknown ids, deal and replay."""

from __future__ import annotations

import pytest

from solrace.engine import GAME_IDS, GAMES, UnknownGameError, deal, game_class, replay

RULES_IDS = (
    "klondike",
    "klondike-draw3",
    "vegas-klondike",
    "casino-klondike",
    "klondike-book",
    "klondike-book-3",
    "klondike-book-1",
    "colorado",
    "terrace",
    "queen-of-italy",
    "generals-patience",
    "blondes-and-brunettes",
    "falling-star",
    "british-square",
)
PYSOLFC_IDS = {
    "klondike": 2,
    "klondike-draw3": 18,
    "vegas-klondike": 129,
    "casino-klondike": 61,
    "klondike-book": None,
    "klondike-book-3": None,
    "klondike-book-1": None,
    "colorado": 296,
    "terrace": 135,
    "queen-of-italy": 431,
    "generals-patience": 136,
    "blondes-and-brunettes": 137,
    "falling-star": 138,
    "british-square": 35,
}


def test_every_game_of_rules_md_is_registered() -> None:
    assert GAME_IDS == RULES_IDS
    for game_id, cls in GAMES.items():
        assert cls.game_id == game_id
        assert cls.pysolfc_id == PYSOLFC_IDS[game_id]
        assert game_class(game_id) is cls


@pytest.mark.parametrize("game_id", ["nope", "Klondike", "klondike ", "", "spider"])
def test_unknown_game_ids_are_refused_with_the_known_ones(game_id: str) -> None:
    with pytest.raises(UnknownGameError) as info:
        deal(game_id, "1")
    message = str(info.value)
    assert f"unknown game {game_id!r}" in message
    assert "klondike, klondike-draw3" in message and "british-square" in message


def test_unknown_game_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown game"):
        game_class(None)  # type: ignore[arg-type]


def test_book_deals_are_the_pysolfc_deals_they_name() -> None:
    # klondike-book and klondike-book-3 deal as 18 (draw 3), klondike-book-1 as 2 (draw 1).
    for number in ("1", "123456"):
        draw3 = deal("klondike-draw3", number).pile_texts()
        draw1 = deal("klondike", number).pile_texts()
        assert deal("klondike-book", number).pile_texts() == draw3
        assert deal("klondike-book-3", number).pile_texts() == draw3
        assert deal("klondike-book-1", number).pile_texts() == draw1


def test_replay_rebuilds_the_board_from_its_moves() -> None:
    game = deal("klondike-draw3", "42")
    for _ in range(12):
        game.play(game.legal_moves()[-1])
    again = replay("klondike-draw3", "42", [str(m) for m in game.history])
    assert again.pile_texts() == game.pile_texts()
    assert again.round == game.round
    assert again.history == game.history
