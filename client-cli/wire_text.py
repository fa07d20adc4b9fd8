"""Text from the wire made safe for a terminal.

Names, race ids, error texts and reasons come from the server (and from other players through
it): an ESC, CSI or OSC in one of them would drive the user's terminal (colours, the window
title, a cleared screen, hyperlinks), a carriage return or backspace would overwrite what the
client wrote. Every text the client prints goes through `printable` (the newlines of the text
the client itself put together are kept); one value is made `one_line` where a newline of its
own must not start a line that looks like the client's.
"""

from __future__ import annotations

import re
from typing import Final

from rich.text import Text

#: C0 controls but the newline, DEL, C1 controls (0x9b is a CSI on its own), and the Unicode
#: direction overrides and isolates (which reorder what follows them on the line).
_UNSAFE: Final = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_UNSAFE_OR_NEWLINE: Final = re.compile(_UNSAFE.pattern[:-1] + "\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character but the newline shown as its escape (`\\x1b`)."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """`printable`, and newlines shown as `\\x0a` too: one value on one line."""
    return _UNSAFE_OR_NEWLINE.sub(_escape, text)


def as_text(value: str) -> Text:
    """A value for a Textual widget (a table cell, a line): `one_line`, as a rich `Text`, so
    that `[bold]` or `[@click=...]` in a name is shown, never read as markup (a plain `str`
    cell or `Static.update(str)` is parsed as markup)."""
    return Text(one_line(value))
