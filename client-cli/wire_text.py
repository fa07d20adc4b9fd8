"""Text from the wire made safe for a terminal.

Names, race ids, error texts and reasons come from the server (and from other players through
it): an ESC, CSI or OSC in one of them would drive the user's terminal (colours, the window
title, a cleared screen, hyperlinks), a carriage return or backspace would overwrite what the
client wrote. Every text the client prints goes through `printable` (the newlines of the text
the client itself put together are kept); one value is made `one_line` where a newline of its
own must not start a line that looks like the client's.
"""

from __future__ import annotations

from rich.text import Text

from solrace.server.protocol.safe_text import one_line, printable


def as_text(value: str) -> Text:
    """A value for a Textual widget (a table cell, a line): `one_line`, as a rich `Text`, so
    that `[bold]` or `[@click=...]` in a name is shown, never read as markup (a plain `str`
    cell or `Static.update(str)` is parsed as markup)."""
    return Text(one_line(value))


__all__ = ["as_text", "one_line", "printable"]
