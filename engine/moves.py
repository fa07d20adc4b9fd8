"""Moves and pile names in the notation of RULES.md.

``deal`` clicks the stock; ``SRC-DST`` moves the top card of SRC onto DST; ``SRC-DST:N`` moves
the top N cards. Piles have short names ``s``, ``w``, ``f<i>``, ``t<i>``, ``r<i>`` and long names
``stock``, ``waste``, ``foundation[i]``, ``tableau[i]``, ``reserve[i]``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

from .errors import InvalidMoveError

_KIND_BY_LETTER: Final = {"f": "foundation", "t": "tableau", "r": "reserve"}
_LETTER_BY_KIND: Final = {v: k for k, v in _KIND_BY_LETTER.items()}
_PILE: Final = r"(?:s|w|[ftr](?:0|[1-9][0-9]?))"
_MOVE_RE: Final = re.compile(rf"^({_PILE})-({_PILE})(?::([1-9][0-9]{{0,2}}))?$")
_LONG_RE: Final = re.compile(r"(foundation|tableau|reserve)\[(0|[1-9][0-9]*)\]")


def to_long_name(short: str) -> str:
    """``"t3"`` -> ``"tableau[3]"``."""
    if short == "s":
        return "stock"
    if short == "w":
        return "waste"
    return f"{_KIND_BY_LETTER[short[0]]}[{short[1:]}]"


def to_short_name(long: str) -> str:
    """``"tableau[3]"`` -> ``"t3"``; raises :class:`InvalidMoveError` for an unknown name."""
    if long == "stock":
        return "s"
    if long == "waste":
        return "w"
    m = _LONG_RE.fullmatch(long) if isinstance(long, str) else None
    if not m:
        raise InvalidMoveError(f"not a pile name: {long!r}")
    kind, index = m.groups()
    return f"{_LETTER_BY_KIND[kind]}{index}"


@dataclass(frozen=True, slots=True)
class Move:
    """One player action. ``Move.parse(str(m)) == m`` for every move."""

    src: str
    dst: str
    n: int = 1

    def __post_init__(self) -> None:
        if self.n < 0 or (self.n == 0 and (self.src, self.dst) != ("s", "s")):
            raise InvalidMoveError(f"a move takes 1 or more cards, not {self.n}")

    @property
    def is_deal(self) -> bool:
        return self.n == 0

    @classmethod
    def parse(cls, text: str) -> Move:
        """Parse the notation; raises :class:`InvalidMoveError` with the expected form.

        Moves are values: the same text gives the same object (the latest few thousand
        texts are remembered), so a long history holds references, not copies."""
        if not isinstance(text, str):
            raise InvalidMoveError(f"a move is text, not {type(text).__name__}")
        return _parse(text)

    @classmethod
    def from_long(cls, src: str, dst: str, n: int = 1) -> Move:
        """Build a move from long pile names (the conformance files' form)."""
        return cls(to_short_name(src), to_short_name(dst), n)

    def __str__(self) -> str:
        if self.n == 0:
            return "deal"
        if self.n == 1:
            return f"{self.src}-{self.dst}"
        return f"{self.src}-{self.dst}:{self.n}"


DEAL: Final = Move("s", "s", 0)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Move:
    """`Move.parse` of a string, remembered (a game's moves repeat a few hundred texts)."""
    t = text.strip().lower()
    if t == "deal":
        return DEAL
    m = _MOVE_RE.match(t)
    if not m:
        raise InvalidMoveError(
            f"cannot read move {text!r}: expected 'deal', 'SRC-DST' or 'SRC-DST:N' "
            "with piles s, w, f0.., t0.., r0.. (e.g. 'w-t3', 't2-t5:3')"
        )
    src, dst, count = m.groups()
    return Move(src, dst, int(count) if count else 1)
