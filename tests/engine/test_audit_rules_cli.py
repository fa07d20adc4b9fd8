"""Audit of ``solrace engine`` (the conformance interface) against its promise: bad input gets
``{"ok": false, ...}`` and the process keeps going. Driven through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SOLRACE = [sys.executable, "-m", "solrace.cli"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        pytest.param("[" * 100_000, "nested too deeply", id="nested-arrays"),
        pytest.param(
            '{"cmd": "state", "n": ' + "1" * 5000 + "}",
            "a number has too many digits",
            id="long-number-in-object",
        ),
        pytest.param("1" * 5000, "a number has too many digits", id="long-number"),
    ],
)
def test_a_line_json_cannot_read_is_answered_and_the_engine_goes_on(line: str, error: str) -> None:
    commands = [line, json.dumps({"cmd": "new", "game": "klondike", "deal": "1"})]
    done = subprocess.run(
        [*SOLRACE, "engine"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answers = [json.loads(a) for a in done.stdout.splitlines()]
    assert len(answers) == 2
    assert answers[0] == {"ok": False, "error": f"not JSON this engine reads: {error}"}
    assert answers[1]["ok"] is True
    assert answers[1]["state"]["game"] == "klondike"
