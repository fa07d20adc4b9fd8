"""Piles: a list of card numbers plus how many of them, from the bottom, lie face down."""

from __future__ import annotations

from typing import Final

from .cards import TEXT

STOCK: Final = 0
WASTE: Final = 1
FOUNDATION: Final = 2
TABLEAU: Final = 3
RESERVE: Final = 4
#: A face-down card whose identity the holder of the board does not know (see Game.from_visible).
UNKNOWN: Final = -1

KIND_NAMES: Final = ("stock", "waste", "foundation", "tableau", "reserve")
_SHORT: Final = ("s", "w", "f", "t", "r")


class Pile:
    """One pile of a board. The stock is always face down whatever ``down`` says."""

    __slots__ = ("cards", "down", "index", "kind", "name", "number", "short")

    def __init__(self, kind: int, index: int, number: int) -> None:
        self.kind = kind
        self.index = index
        #: Position in the board's pile list (used by the undo journal).
        self.number = number
        if kind in (STOCK, WASTE):
            self.name = KIND_NAMES[kind]
            self.short = _SHORT[kind]
        else:
            self.name = f"{KIND_NAMES[kind]}[{index}]"
            self.short = f"{_SHORT[kind]}{index}"
        self.cards: list[int] = []
        self.down = 0

    def copy(self) -> Pile:
        """An independent pile with the same cards, face-down count and place on the board."""
        pile = Pile(self.kind, self.index, self.number)
        pile.cards = self.cards[:]
        pile.down = self.down
        return pile

    def face_down_count(self) -> int:
        return len(self.cards) if self.kind == STOCK else self.down

    def to_text(self) -> str:
        """The pile in RULES.md text, full information: ``"#TH #9S 8D"``."""
        down = self.face_down_count()
        return " ".join(
            ("#" + (TEXT[c] if c >= 0 else "??")) if i < down else TEXT[c]
            for i, c in enumerate(self.cards)
        )

    def __repr__(self) -> str:
        return f"<Pile {self.name} {self.to_text()!r}>"
