"""Game numbers (engine/seeds.py): every form PySolFC accepts deals, invalid ones are refused."""

from __future__ import annotations

import random
import sys
from collections import Counter

import pytest

from solrace.engine import InvalidGameNumberError, deal, parse_game_number, random_ranked_number
from solrace.engine.seeds import LCRandom31, shuffled_deck


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "game numbers start at 1"),
        ("00", "game numbers start at 1"),
        ("ms0", "ms numbers run from ms1 to ms8589934591"),
        ("ms8589934592", "ms numbers run from ms1 to ms8589934591"),
        ("abc", "expected a positive whole number (e.g. 123456) or msN (e.g. ms11982)"),
        ("", "expected a positive whole number"),
        ("12a", "expected a positive whole number"),
        ("ms", "expected a positive whole number"),
        ("ms-5", "expected a positive whole number"),
        ("1e5", "expected a positive whole number"),
    ],
)
def test_invalid_numbers_are_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(InvalidGameNumberError) as info:
        parse_game_number(text)
    assert message in str(info.value)
    assert repr(text) in str(info.value)
    with pytest.raises(InvalidGameNumberError):
        deal("klondike", text)


@pytest.mark.parametrize(
    "text", ["1" * 5000, "ms" + "1" * 5000, "9" * 100_000], ids=["5000", "ms5000", "100000"]
)
def test_overlong_numbers_are_refused_as_game_numbers(text: str) -> None:
    # Python refuses int() of more than 4300 digits: that must not escape as a bare ValueError.
    with pytest.raises(InvalidGameNumberError, match="too long"):
        parse_game_number(text)


def test_long_numbers_deal_whatever_the_interpreter_digit_limit() -> None:
    text = "7" * 4300
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(640)
        low = deal("klondike", text).pile_texts()
    finally:
        sys.set_int_max_str_digits(before)
    assert low == deal("klondike", text).pile_texts()


def test_a_number_must_be_text() -> None:
    with pytest.raises(InvalidGameNumberError, match="a game number is text, not int"):
        parse_game_number(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "same_as"),
    [
        ("12 345", "12345"),
        ("123L", "123"),
        ("#1-2_3.4,5", "12345"),
        (" 77 ", "77"),
        ("ms123", "123"),
        ("32_000", "32000"),
        ("1,000,000", "1000000"),
        ("-5", "5"),
        ("0007", "7"),
        ("ms40000", "ms40000"),
    ],
)
def test_odd_forms_deal_like_their_plain_number(text: str, same_as: str) -> None:
    for game_id in ("klondike", "british-square"):
        game = deal(game_id, text)
        assert game.number == text  # the number is kept as typed
        assert game.pile_texts() == deal(game_id, same_as).pile_texts()
    assert parse_game_number(text).canonical == same_as  # how it is shown


def test_the_canonical_form_of_a_long_number_whatever_the_digit_limit() -> None:
    digits = "7" + "3" * 3000
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert parse_game_number(f"#{digits}L").canonical == digits
    finally:
        sys.set_int_max_str_digits(limit)


@pytest.mark.parametrize(
    ("text", "generator", "seed"),
    [
        ("1", "LCRandom31", 1),
        ("31999", "LCRandom31", 31999),
        ("32000", "MTRandom", 32000),
        ("ms1", "LCRandom31", 1),
        ("ms32000", "LCRandom31", 32000),
        ("ms4294967297", "LCRandom31", 4294967297),
        ("ms8589934591", "LCRandom31", 8589934591),
        ("1234567890123456789012345", "MTRandom", 1234567890123456789012345),
    ],
)
def test_numbers_select_the_generator(text: str, generator: str, seed: int) -> None:
    number = parse_game_number(text)
    assert (number.text, number.generator, number.seed) == (text, generator, seed)


@pytest.mark.parametrize(
    "text", ["1234567890123456789012345", "ms4294967297", "ms8589934591", "ms2147483648"]
)
def test_large_numbers_deal_full_decks(text: str) -> None:
    for game_id in ("klondike", "colorado"):
        game = deal(game_id, text)
        faces = Counter(" ".join(game.pile_texts().values()).replace("#", "").split())
        assert len(faces) == 52
        assert set(faces.values()) == {game.decks}


def test_distinct_numbers_deal_differently() -> None:
    layouts = {
        str(sorted(deal("klondike", n).pile_texts().items()))
        for n in ("1", "2", "ms4294967297", "ms4294967298", "32000", "10" * 12, "10" * 12 + "1")
    }
    assert len(layouts) == 7


def test_lcrandom31_known_values() -> None:
    # Microsoft's rand(): seed 1 gives 41, 18467, 6334 (bits 16..30 of the state).
    gen = LCRandom31(1)
    assert [gen.randint(0, 32767) for _ in range(3)] == [41, 18467, 6334]
    with pytest.raises(InvalidGameNumberError):
        LCRandom31(0)


def test_one_deck_ms_deals_start_from_the_freecell_order() -> None:
    # The 52-card LCRandom31 shuffle reorders by rank first (AC AD AH AS 2C ...): the
    # well-known FreeCell game 1 deals its first row as JD 2D 9H JC 5D 7H 7C 5H.
    order = [card for _, card in shuffled_deck(parse_game_number("1"), 1)][::-1]
    faces = ["A23456789TJQK"[c % 13] + "CSHD"[c // 13] for c in order]
    assert faces[:8] == ["JD", "2D", "9H", "JC", "5D", "7H", "7C", "5H"]


def test_random_ranked_numbers_are_in_pysolfc_range() -> None:
    rng = random.Random(5)
    for _ in range(100):
        n = int(random_ranked_number(rng))
        assert 10**16 <= n < 10**20
        assert parse_game_number(str(n)).generator == "MTRandom"
