"""Text a client sends that people will read or type: refused unless it can be seen.

A tournament's name and a correction's reason are shown to other clients as they are; an
invite code is typed by the players a creator tells it to. Text with control characters (an
escape sequence, a new line) or other non-printable ones (a direction override, a zero-width
space) is refused, and so is text with nothing to show (empty, spaces, or only characters
drawn as nothing, such as the blank Braille pattern): a list would show it blank, and nobody
could type it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, Field

#: The zero-width non-joiner and joiner: Persian and other scripts write words with them, and
#: emoji sequences (a family, a flag with a sign) are joined by the joiner.
_JOINERS = frozenset("\u200c\u200d")

#: Letters and symbols, by their Unicode category, that are drawn as nothing (Hangul fillers,
#: the blank Braille pattern, the musical null notehead): they show no more than a space.
_BLANK_SHOWING = frozenset("\u115f\u1160\u2800\u3164\uffa0\U0001d159")


def _shows(c: str) -> bool:
    """Is `c` drawn as something: a letter, number, punctuation or symbol, not one of the
    blank ones? (Spaces, marks of any kind and format characters are not.)"""
    return unicodedata.category(c)[0] in "LNPS" and c not in _BLANK_SHOWING


def _joins(text: str, at: int) -> bool:
    """Is the joiner at `at` between two characters it can join: after a letter, number,
    punctuation, symbol or mark (an emoji's variation selector is a mark) and before one that
    is drawn? A joiner anywhere else (at an end, doubled, next to a space) only hides."""
    before = text[at - 1] if at > 0 else " "
    after = text[at + 1] if at + 1 < len(text) else " "
    return unicodedata.category(before)[0] in "LNPSM" and _shows(after)


def printable(text: str) -> str:
    """Refuse control characters (escape sequences, new lines) and other non-printable ones
    (bidirectional overrides, zero-width marks), but a joiner where it joins: such text is
    shown to others as it is."""
    bad = next(
        (
            c
            for at, c in enumerate(text)
            if not c.isprintable() and not (c in _JOINERS and _joins(text, at))
        ),
        None,
    )
    if bad is not None:
        raise ValueError(
            f"non-printable character U+{ord(bad):04X} (control characters and the like)"
        )
    return text


def not_blank(what: str) -> Callable[[str], str]:
    """A validator refusing text with nothing to show (empty, only spaces, or only characters
    drawn as nothing), whose refusal names the text as `what` ("a tournament's name")."""

    def check(text: str) -> str:
        if not any(_shows(c) for c in text):
            raise ValueError(
                f"{what} must not be empty or only spaces (or other characters drawn as nothing)"
            )
        return text

    return check


ShownText = Annotated[str, Field(max_length=64), AfterValidator(printable)]
"""Free text other clients are shown (a tournament's name, a correction's reason)."""
TournamentName = Annotated[ShownText, AfterValidator(not_blank("a tournament's name"))]
"""A tournament's name: shown text with something to show."""
InviteCode = Annotated[ShownText, AfterValidator(not_blank("an invite code"))]
"""A race's invite code: text with something to show, that its players can type (an empty
code made a race "private" that anyone joined by sending the empty code)."""

__all__ = ["InviteCode", "ShownText", "TournamentName", "not_blank", "printable"]
