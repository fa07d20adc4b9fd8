"""Game numbers and PySolFC's two random generators.

A deal is named by a game number typed as text (RULES.md, "Game numbers and the shuffle"):
``msN`` selects LCRandom31 with seed N; otherwise the text is normalised to an integer n that
selects LCRandom31 below 32000 and Python's Mersenne Twister (PySolFC's MTRandom) from 32000 on.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Final, Protocol

from .errors import InvalidGameNumberError

LC_MAX_SEED: Final = 2**33 - 1
MT_THRESHOLD: Final = 32000
#: Longest number accepted: CPython's default int/str limit, so PySolFC on Python >= 3.11 refuses
#: longer ones too. Checked here so the answer never depends on the interpreter's own setting.
MAX_DIGITS: Final = 4300
_MS_RE: Final = re.compile(r"ms([0-9]+)\n?\Z")
_STRIP_RE: Final = re.compile(r"[\s#\-_.,]")


class Generator(Protocol):
    def randint(self, a: int, b: int) -> int: ...


class LCRandom31:
    """The Microsoft-compatible linear congruential generator, as PySolFC extends it to 33 bits."""

    __slots__ = ("_seed", "_state")

    def __init__(self, seed: int) -> None:
        if not 1 <= seed <= LC_MAX_SEED:
            raise InvalidGameNumberError(f"ms seed out of range: {seed} (1..{LC_MAX_SEED})")
        self._seed = seed
        self._state = seed - 2**32 if seed >= 2**32 else seed

    def _next(self) -> int:
        self._state = (self._state * 214013 + 2531011) & LC_MAX_SEED
        if self._seed < 2**31:
            return (self._state >> 16) & 0x7FFF
        if self._seed < 2**32:
            return ((self._state >> 16) & 0x7FFF) | 0x8000
        return ((self._state >> 16) & 0xFFFF) + 1

    def randint(self, a: int, b: int) -> int:
        return a + self._next() % (b - a + 1)


class MTRandom:
    """Python's Mersenne Twister drawn the way PySolFC draws it (not ``random.randint``)."""

    __slots__ = ("_random",)

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randint(self, a: int, b: int) -> int:
        return a + int(self._random.random() * (b - a + 1))


@dataclass(frozen=True, slots=True)
class GameNumber:
    """A parsed game number: the text as typed, the generator it selects and its seed."""

    text: str
    generator: str  # "LCRandom31" or "MTRandom"
    seed: int

    @property
    def canonical(self) -> str:
        """The number as one writes it: the same deal, without the characters PySolFC
        ignores (`-5`, `5_0` and `ms5` are `5`, `50` and `5`; `ms40000` stays: `40000` is
        another deal)."""
        if self.generator == "LCRandom31" and self.seed >= MT_THRESHOLD:
            return f"ms{self.seed}"
        return _to_text(self.seed)

    def new_generator(self) -> Generator:
        if self.generator == "LCRandom31":
            return LCRandom31(self.seed)
        return MTRandom(self.seed)


def _to_int(text: str, digits: str) -> int:
    """``int(digits)`` for up to MAX_DIGITS digits whatever ``sys.get_int_max_str_digits()`` is."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > MAX_DIGITS:
        raise InvalidGameNumberError(
            f"invalid game number {text[:20]!r}...: too long ({len(digits)} digits, "
            f"at most {MAX_DIGITS})"
        )
    n = 0
    for i in range(0, len(digits), 600):  # 640 is the lowest limit Python allows
        chunk = digits[i : i + 600]
        n = n * 10 ** len(chunk) + int(chunk)
    return n


def _to_text(n: int) -> str:
    """``str(n)`` for up to MAX_DIGITS digits whatever ``sys.get_int_max_str_digits()`` is."""
    chunk = 10**600
    low_parts: list[str] = []
    while n >= chunk:
        n, low = divmod(n, chunk)
        low_parts.append(f"{low:0600d}")
    return str(n) + "".join(reversed(low_parts))


def parse_game_number(text: str) -> GameNumber:
    """Read a game number exactly as PySolFC accepts it; refuse invalid ones clearly."""
    if not isinstance(text, str):
        raise InvalidGameNumberError(f"a game number is text, not {type(text).__name__}")
    m = _MS_RE.match(text)
    if m:
        seed = _to_int(text, m.group(1))
        if not 1 <= seed <= LC_MAX_SEED:
            raise InvalidGameNumberError(
                f"invalid game number {text!r}: ms numbers run from ms1 to ms{LC_MAX_SEED}"
            )
        return GameNumber(text, "LCRandom31", seed)
    s = text[:-1] if text.endswith("L") else text
    s = _STRIP_RE.sub("", s.lower())
    if not re.fullmatch(r"\+?[0-9]+", s):
        raise InvalidGameNumberError(
            f"invalid game number {text!r}: expected a positive whole number (e.g. 123456) "
            "or msN (e.g. ms11982)"
        )
    n = _to_int(text, s.lstrip("+"))
    if n == 0:
        raise InvalidGameNumberError(f"invalid game number {text!r}: game numbers start at 1")
    if n < MT_THRESHOLD:
        return GameNumber(text, "LCRandom31", n)
    return GameNumber(text, "MTRandom", n)


def random_ranked_number(rng: random.Random) -> str:
    """A number from [10**16, 10**20), as PySolFC draws one for a random game."""
    return str(rng.randrange(10**16, 10**20))


def shuffled_deck(number: GameNumber, decks: int) -> list[tuple[int, int]]:
    """The shuffled cards as ``(deck, card)`` pairs; the last element is the top of the stock."""
    cards = [(d, c) for d in range(decks) for c in range(52)]
    if number.generator == "LCRandom31" and decks == 1:
        # FreeCell order: by rank, suits C D H S (suit numbers 0, 3, 2, 1).
        ms_suits = (0, 3, 2, 1)
        cards = [(0, ms_suits[i % 4] * 13 + i // 4) for i in range(52)]
    gen = number.new_generator()
    for i in range(len(cards) - 1, 0, -1):
        j = gen.randint(0, i)
        cards[i], cards[j] = cards[j], cards[i]
    return cards
