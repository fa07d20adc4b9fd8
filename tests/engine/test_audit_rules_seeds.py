"""Audit of LCRandom31's upper seed bands against RULES.md ("Game numbers and the shuffle").

The recorded PySolFC deals reach ms2147483648 but no seed from 2^32 on. These checks follow
from the rules' arithmetic alone, without a second copy of the generator:
- from 2^32 on, the state starts at seed - 2^32, so ms(2^32 + n) walks seed n's states and
  draws their bits 16..31, plus 1;
- from 2^31 to 2^32 - 1, the state differs from seed - 2^31's by 2^31 at every step (214013 is
  1 mod 4), so the draws are seed - 2^31's with bit 15 set.
"""

from __future__ import annotations

import pytest

from solrace.engine import deal
from solrace.engine.seeds import LCRandom31

DRAWS = 2000


def draws(seed: int) -> list[int]:
    gen = LCRandom31(seed)
    return [gen.randint(0, 2**17 - 1) for _ in range(DRAWS)]  # wider than any output: raw


@pytest.mark.parametrize("n", [1, 2, 11982, 2**31 - 1, 2**32 - 1])
def test_seeds_from_2_32_draw_bits_16_to_31_plus_one(n: int) -> None:
    low, high = draws(n), draws(2**32 + n)
    if n < 2**31:
        expected_low = [(h - 1) & 0x7FFF for h in high]
    else:
        expected_low = [((h - 1) & 0x7FFF) | 0x8000 for h in high]
    assert low == expected_low
    assert all(1 <= h <= 0x10000 for h in high)
    assert any(h - 1 >= 0x8000 for h in high)  # bit 31 of the state is drawn too


def test_seed_2_32_plus_1_starts_with_known_values() -> None:
    # Seed 1's first state is 2745024 (0x29E2C0): bits 16..31 are 41, so the draw is 42.
    assert draws(2**32 + 1)[:1] == [42]
    assert draws(1)[:3] == [41, 18467, 6334]


@pytest.mark.parametrize("n", [1, 2, 12345, 2**31 - 1])
def test_seeds_from_2_31_draw_with_bit_15_set(n: int) -> None:
    assert draws(2**31 + n) == [d | 0x8000 for d in draws(n)]


def test_randint_reduces_the_draw_modulo_the_range() -> None:
    raw = draws(2**32 + 7)[:50]
    gen = LCRandom31(2**32 + 7)
    assert [gen.randint(3, 3 + 51) for _ in range(50)] == [3 + r % 52 for r in raw]


@pytest.mark.parametrize("number", ["ms4294967296", "ms4294967297", "ms8589934591"])
def test_upper_band_ms_deals_are_full_and_differ_from_the_low_seed(number: str) -> None:
    game = deal("klondike", number)
    low = deal("klondike", f"ms{int(number[2:]) - 2**32}") if number != "ms4294967296" else None
    texts = game.pile_texts()
    cards = " ".join(texts.values()).replace("#", "").split()
    assert sorted(cards) == sorted(set(cards)) and len(cards) == 52
    if low is not None:
        assert low.pile_texts() != texts
