"""Move notation (engine/moves.py): parsing, printing and pile names."""

from __future__ import annotations

import pytest

from solrace.engine import DEAL, InvalidMoveError, Move, to_long_name, to_short_name


@pytest.mark.parametrize(
    ("text", "move", "canonical"),
    [
        ("deal", DEAL, "deal"),
        ("DEAL", DEAL, "deal"),
        (" deal\n", DEAL, "deal"),
        ("w-t3", Move("w", "t3"), "w-t3"),
        ("t6-f0", Move("t6", "f0"), "t6-f0"),
        ("t2-t5:3", Move("t2", "t5", 3), "t2-t5:3"),
        ("T2-T5:3", Move("t2", "t5", 3), "t2-t5:3"),
        ("t2-t5:1", Move("t2", "t5"), "t2-t5"),
        ("r0-f7", Move("r0", "f7"), "r0-f7"),
        ("t19-t10:999", Move("t19", "t10", 999), "t19-t10:999"),
        ("s-w", Move("s", "w"), "s-w"),
    ],
)
def test_parse_and_print(text: str, move: Move, canonical: str) -> None:
    assert Move.parse(text) == move
    assert str(move) == canonical
    assert Move.parse(str(move)) == move


@pytest.mark.parametrize(
    "text",
    [
        "",
        "deal3",
        "t1",
        "t1-",
        "-t1",
        "x-t1",
        "t1-t2:0",
        "t1-t2:01",
        "t1-t2:1000",
        "t01-t2",
        "t100-t2",
        "t1_t2",
        "t1 - t2",
        "f-t1",
        "w3-t1",
        "s1-t1",
        "t1-t2:-1",
    ],
)
def test_unparsable_texts_say_what_is_expected(text: str) -> None:
    with pytest.raises(InvalidMoveError) as info:
        Move.parse(text)
    assert repr(text) in str(info.value)
    assert "e.g. 'w-t3', 't2-t5:3'" in str(info.value)


def test_a_move_must_be_text() -> None:
    with pytest.raises(InvalidMoveError, match="a move is text, not int"):
        Move.parse(3)  # type: ignore[arg-type]


def test_moves_are_frozen_values() -> None:
    move = Move.parse("w-t3")
    assert hash(move) == hash(Move("w", "t3", 1))
    with pytest.raises(AttributeError):
        move.n = 2  # type: ignore[misc]
    assert DEAL.is_deal
    assert not move.is_deal


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("s", "stock"),
        ("w", "waste"),
        ("f0", "foundation[0]"),
        ("t19", "tableau[19]"),
        ("r0", "reserve[0]"),
    ],
)
def test_pile_names_round_trip(short: str, long: str) -> None:
    assert to_long_name(short) == long
    assert to_short_name(long) == short
    assert Move.from_long(long, "tableau[3]", 2) == Move(short, "t3", 2)


@pytest.mark.parametrize("long", ["table[0]", "tableau", "tableau[x]", "Stock", ""])
def test_unknown_long_names_are_refused(long: str) -> None:
    with pytest.raises(InvalidMoveError, match="not a pile name"):
        to_short_name(long)
