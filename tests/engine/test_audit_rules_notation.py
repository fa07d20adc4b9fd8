"""Audit of the notation against RULES.md: malformed pile names and moves are refused with the
engine's own error, never another exception."""

from __future__ import annotations

import pytest

from solrace.engine import EngineError, InvalidMoveError, Move, deal, to_short_name


@pytest.mark.parametrize(
    "long",
    [
        "tableau[3]\n",  # a trailing newline
        "stock\n",
        "tableau[\u0663]",  # ARABIC-INDIC DIGIT THREE
        "foundation[\uff10]",  # FULLWIDTH DIGIT ZERO
        "tableau[03]",
        "tableau[-1]",
        " tableau[3]",
    ],
)
def test_a_malformed_long_pile_name_is_refused(long: str) -> None:
    with pytest.raises(InvalidMoveError, match="not a pile name"):
        to_short_name(long)


def test_long_names_with_many_digits_still_read() -> None:
    assert to_short_name("tableau[19]") == "t19"
    assert to_short_name("foundation[0]") == "f0"
    assert Move.from_long("reserve[0]", "foundation[7]") == Move("r0", "f7")


@pytest.mark.parametrize("long", ["tableau[3]\n", "tableau[\u0663]"])
def test_from_long_refuses_a_malformed_name(long: str) -> None:
    with pytest.raises(EngineError):
        Move.from_long(long, "foundation[0]")


@pytest.mark.parametrize("value", [None, 5, 3.5, b"w-t3", ["w-t3"]])
def test_a_value_that_is_not_a_move_is_refused_by_play(value: object) -> None:
    game = deal("klondike", "1")
    before = game.pile_texts()
    with pytest.raises(InvalidMoveError, match="a move is text"):
        game.play(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidMoveError, match="a move is text"):
        game.is_legal(value)  # type: ignore[arg-type]
    assert game.pile_texts() == before
    assert game.ply == 0
