from __future__ import annotations

from solrace.client.wire_text import as_text, one_line, printable


def test_controls_are_shown_as_escapes_and_text_is_kept() -> None:
    assert printable("ann\x1b[2J\x07") == "ann\\x1b[2J\\x07"
    assert printable("a\tb\rc\x7f\x85\u202ed") == "a\\x09b\\x0dc\\x7f\\x85\\u202ed"
    assert printable("line one\nline two") == "line one\nline two"  # the client's own lines
    assert one_line("line one\nline two") == "line one\\x0aline two"
    assert printable("élan ♠ 名前") == "élan ♠ 名前"
    # Line and paragraph separators and the Arabic letter mark move or reorder text too.
    assert printable("a\u2028b\u2029c\u061cd") == "a\\u2028b\\u2029c\\u061cd"


def test_a_widget_value_is_shown_not_read_as_markup() -> None:
    text = as_text("[bold]ann[/bold] [@click=app.quit]x[/]\x1b[2J")
    assert text.plain == "[bold]ann[/bold] [@click=app.quit]x[/]\\x1b[2J"
    assert not text.spans
