"""Text from outside (the wire, a replay file) made safe to print on a terminal.

Names, race ids, error texts and reasons come from other players or from files anyone can
write: an ESC, CSI or OSC in one of them would drive the reader's terminal (colours, the
window title, a cleared screen, text made invisible), a carriage return or backspace would
overwrite what the program wrote, and a lone surrogate (valid in JSON) cannot be encoded for
output at all. `printable` shows each of them as its escape (`\\x1b`), keeping newlines;
`one_line` escapes newlines too, for one value that must not start a line of its own (a
forged "replay verified"). Shared by the client and `solrace verify`.
"""

from __future__ import annotations

import re
from typing import Final

#: C0 controls but the newline, DEL, C1 controls (0x9b is a CSI on its own), the Unicode
#: direction overrides and isolates (which reorder what follows them on the line), and lone
#: surrogates.
_UNSAFE: Final = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
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


__all__ = ["one_line", "printable"]
