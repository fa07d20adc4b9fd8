"""README.md's Python snippet runs as shown: every statement, on the real deal it names.

A comment after a statement that has a value (an expression that is not None) must start with
that value's repr; a comment after a `print(...)` must start with what it printed. Other
comments are free text.

The tournament walk-through is a flow a newcomer can paste: every `solrace tournament` command
in it parses, and `bots` (which stays until the tournament has finished) runs in the
background before `start`, with the admin token the server was started with: a random one
(one the server takes) made into a file that both terminals read.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from solrace.client.tournament_cli import build_parser
from solrace.server.settings import Settings

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


def tournament_block() -> tuple[str, list[str]]:
    """The text before the tournament walk-through (its section's lead) and its lines."""
    section = README.read_text().split("## Tournaments and ratings\n", 1)[1]
    lead, block = re.findall(r"(.*?)```\n(.*?)```", section, flags=re.DOTALL)[0]
    return lead, [line for line in block.splitlines() if line.strip()]


def test_the_tournament_walk_through_runs_bots_in_the_background() -> None:
    lead, lines = tournament_block()
    exported = dict(word.split("=", 1) for word in shlex.split(lines[0].removeprefix("export ")))
    # The token is made at random into a file, which the server and the second terminal read.
    [(making, kept)] = re.findall(r"`(python3 -c '[^`]*') > (\S+)`", lead)
    assert f'`solrace serve --admin-token "$(cat {kept})"`' in lead
    assert exported["SOLRACE_ADMIN_TOKEN"] == f"$(cat {kept})"
    python = [sys.executable, *shlex.split(making)[1:]]
    made = [
        subprocess.run(python, capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(2)
    ]
    assert made[0] != made[1]  # a new one each time
    assert Settings(admin_token=made[0]).admin_token == made[0]  # one the server takes
    commands: list[tuple[list[str], bool]] = []
    for line in lines[1:]:
        words = shlex.split(line, comments=True)
        background = words[-1:] == ["&"]
        words = words[:-1] if background else words
        if words[:2] != ["solrace", "tournament"]:
            assert words == ["wait"], line  # waits for the background bots
            continue
        argv = [exported["URL"] if w == "$URL" else w for w in words[2:]]
        args = build_parser().parse_args(argv)  # exits (a failure) if it does not parse
        assert args.server == "ws://127.0.0.1:8765", line
        commands.append((argv, background))
    order = [argv[2] for argv, _ in commands]
    assert order.index("bots") < order.index("start"), order
    for argv, background in commands:
        assert background == (argv[2] == "bots"), argv  # only the one that stays
