"""README.md's Python snippet runs as shown: every statement, on the real deal it names.

A comment after a statement that has a value (an expression that is not None) must start with
that value's repr; a comment after a `print(...)` must start with what it printed. Other
comments are free text.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"


def python_snippet() -> str:
    [block] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    return str(block)


def comment_on(lines: list[str], lineno: int) -> str | None:
    _code, sep, comment = lines[lineno - 1].partition("  # ")
    return comment if sep else None


def test_the_python_snippet_runs_as_shown() -> None:
    source = python_snippet()
    lines = source.splitlines()
    namespace: dict[str, Any] = {}
    checked = 0
    for statement in ast.parse(source).body:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            if isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), "README", "eval"), namespace)
            else:
                exec(compile(ast.Module([statement], []), "README", "exec"), namespace)
                value = None
        if value is not None:
            comment = comment_on(lines, statement.end_lineno or statement.lineno)
            assert comment is not None and comment.startswith(repr(value)), (value, comment)
            checked += 1
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                comment = comment_on(lines, node.lineno)
                shown = printed.getvalue().strip()
                assert shown and comment is not None and comment.startswith(shown), (
                    shown,
                    comment,
                )
                checked += 1
    assert checked >= 5  # the snippet still shows values (and this test still reads them)
