"""Cards as small integers with a text form.

A card is ``suit * 13 + rank`` with ranks 0 (Ace) .. 12 (King) and suits in PySolFC's
order: 0 clubs, 1 spades, 2 hearts, 3 diamonds. The engine stores plain ints in its piles
for speed; :class:`Card` is the same int with a readable face for the API.
"""

from __future__ import annotations

from typing import Final

from .errors import InvalidCardError

RANK_CHARS: Final = "A23456789TJQK"
SUIT_CHARS: Final = "CSHD"
ACE: Final = 0
KING: Final = 12

#: Lookup tables indexed by card number; faster than arithmetic in the move checks.
RANK: Final = tuple(c % 13 for c in range(52))
SUIT: Final = tuple(c // 13 for c in range(52))
#: 0 black (clubs, spades), 1 red (hearts, diamonds).
COLOR: Final = tuple((c // 13) >> 1 for c in range(52))
TEXT: Final = tuple(RANK_CHARS[c % 13] + SUIT_CHARS[c // 13] for c in range(52))
#: Words for the messages a player reads: "the 3 of spades", "a red 10".
RANK_NAMES: Final = ("Ace", "2", "3", "4", "5", "6", "7", "8", "9", "10", "Jack", "Queen", "King")
SUIT_NAMES: Final = ("clubs", "spades", "hearts", "diamonds")
COLOR_NAMES: Final = ("black", "red")


def with_article(words: str) -> str:
    """``words`` after its indefinite article: ``"an Ace of clubs"``, ``"a red 8"``."""
    return ("an " if words[0] in "A8" else "a ") + words


def card_number(rank: int, suit: int) -> int:
    """The card number of ``rank`` (0..12) in ``suit`` (0..3)."""
    return suit * 13 + rank


class Card(int):
    """One card; an ``int`` in 0..51 that prints as ``"TD"``."""

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse ``"TD"`` (rank then suit, case-insensitive)."""
        t = text.strip().upper()
        if len(t) != 2 or t[0] not in RANK_CHARS or t[1] not in SUIT_CHARS:
            raise InvalidCardError(
                f"not a card: {text!r} (expected rank {RANK_CHARS} then suit {SUIT_CHARS}, e.g. TD)"
            )
        return CARDS[card_number(RANK_CHARS.index(t[0]), SUIT_CHARS.index(t[1]))]

    @property
    def rank(self) -> int:
        return RANK[self]

    @property
    def suit(self) -> int:
        return SUIT[self]

    def __str__(self) -> str:
        return TEXT[self]

    def __format__(self, spec: str) -> str:
        return format(TEXT[self], spec)

    def __repr__(self) -> str:
        return f"Card.parse({TEXT[self]!r})"


CARDS: Final = tuple(Card(c) for c in range(52))


def parse_cards(text: str) -> list[Card]:
    """Parse space-separated cards (``"AC 2D"``); an empty string is no cards."""
    return [Card.parse(t) for t in text.split()]
