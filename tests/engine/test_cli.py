"""The engine's command line (engine/cli.py) through real subprocesses.

``solrace engine`` is the conformance interface: one JSON object per line in, one per line out,
flushed each time (these tests wait for each answer before sending the next command).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, Any

import pytest

from solrace.engine import deal

from .conformance import deals_data, layout_text

STATE_KEYS = {"game", "deal", "piles", "won", "stuck", "progress", "round", "phase", "base_rank"}
SOLRACE = [sys.executable, "-m", "solrace.cli"]


class Engine:
    """A running ``solrace engine``: send one command, read its one answer."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [*SOLRACE, "engine"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    @property
    def stdin(self) -> IO[str]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    def send_line(self, line: str) -> dict[str, Any]:
        self.stdin.write(line + "\n")
        self.stdin.flush()
        assert self.proc.stdout is not None
        answer = self.proc.stdout.readline()
        assert answer.endswith("\n"), f"no answer to {line!r}"
        decoded = json.loads(answer)
        assert isinstance(decoded, dict)
        return decoded

    def send(self, **command: Any) -> dict[str, Any]:
        return self.send_line(json.dumps(command))

    def close(self) -> tuple[int, str]:
        self.stdin.close()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        rest = self.proc.stdout.read()
        errors = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        code = self.proc.wait(timeout=30)
        assert rest == ""
        return code, errors


@pytest.fixture
def engine() -> Iterator[Engine]:
    process = Engine()
    try:
        yield process
    finally:
        if process.proc.poll() is None:
            code, errors = process.close()
            assert code == 0, errors


def assert_is_state(state: dict[str, Any]) -> None:
    assert set(state) == STATE_KEYS
    assert isinstance(state["game"], str) and isinstance(state["deal"], str)
    assert isinstance(state["won"], bool) and isinstance(state["stuck"], bool)
    on, total = state["progress"]
    assert isinstance(on, int) and isinstance(total, int)
    assert isinstance(state["round"], int) and isinstance(state["phase"], str)
    assert state["base_rank"] is None or state["base_rank"] in "A23456789TJQK"
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in state["piles"].items())


def test_new_legal_play_undo_state(engine: Engine) -> None:
    answer = engine.send(cmd="new", game="klondike-draw3", deal="123456")
    assert answer["ok"] is True and set(answer) == {"ok", "state"}
    state = answer["state"]
    assert_is_state(state)
    layout = deals_data()["games"]["klondike_draw3"]["deals"]["123456"]["layout"]
    assert state["piles"] == layout_text(layout)
    assert state["game"] == "klondike-draw3" and state["deal"] == "123456"
    assert (state["won"], state["stuck"], state["progress"]) == (False, False, [0, 52])
    assert (state["round"], state["phase"], state["base_rank"]) == (1, "play", None)

    local = deal("klondike-draw3", "123456")
    legal = engine.send(cmd="legal")
    assert legal == {"ok": True, "moves": [str(m) for m in local.legal_moves()]}
    assert "deal" in legal["moves"]

    for move in legal["moves"][:2]:
        played = engine.send(cmd="play", move=move)
        local.play(move)
        assert played["ok"] is True
        assert_is_state(played["state"])
        assert played["state"]["piles"] == local.pile_texts()
    assert engine.send(cmd="state")["state"]["piles"] == local.pile_texts()

    undone = engine.send(cmd="undo")
    local.undo()
    assert undone["ok"] is True and undone["state"]["piles"] == local.pile_texts()
    engine.send(cmd="undo")
    assert engine.send(cmd="state") == {"ok": True, "state": state}


def test_terrace_state_reports_phase_and_base_rank(engine: Engine) -> None:
    state = engine.send(cmd="new", game="terrace", deal="1")["state"]
    assert (state["phase"], state["base_rank"], state["progress"]) == (
        "choose_base",
        None,
        [0, 104],
    )
    assert "reserve[0]" in state["piles"] and "foundation[7]" in state["piles"]
    first = engine.send(cmd="legal")["moves"][0]
    state = engine.send(cmd="play", move=first)["state"]
    assert state["phase"] == "play"
    assert state["base_rank"] == state["piles"][f"foundation[{first[4:]}]"][0]
    assert state["progress"] == [1, 104]


def test_refused_commands_answer_errors_and_change_nothing(engine: Engine) -> None:
    before_game = engine.send(cmd="state")
    assert before_game["ok"] is False and "no game yet" in before_game["error"]
    state = engine.send(cmd="new", game="klondike", deal="1")["state"]

    refusals = [
        ('{"cmd": "play", "move": "t0-t1"}', "it needs a red 9 on TS, not QH"),
        ('{"cmd": "play", "move": "t0-t9"}', "klondike has no pile t9"),
        ('{"cmd": "play", "move": "sideways"}', "cannot read move 'sideways'"),
        ('{"cmd": "play", "move": 3}', 'play needs "move" as a string'),
        ('{"cmd": "play"}', 'play needs "move" as a string'),
        ('{"cmd": "undo"}', "no move to undo"),
        ('{"cmd": "fly"}', "unknown cmd 'fly': use new, legal, play, undo, state"),
        ('{"move": "deal"}', "unknown cmd None"),
        ("{not json", "not JSON"),
        ('"state"', "expected a JSON object"),
        ("[1, 2]", "expected a JSON object"),
        ('{"cmd": "new", "game": "nope", "deal": "1"}', "unknown game 'nope'"),
        ('{"cmd": "new", "game": "klondike", "deal": "0"}', "game numbers start at 1"),
        ('{"cmd": "new", "game": "klondike", "deal": "ms0"}', "ms numbers run from ms1"),
        ('{"cmd": "new", "game": "klondike", "deal": 5}', 'new needs "game" and "deal"'),
        (json.dumps({"cmd": "new", "game": "klondike", "deal": "1" * 5000}), "too long"),
    ]
    for line, message in refusals:
        answer = engine.send_line(line)
        assert answer["ok"] is False, line
        assert set(answer) == {"ok", "error"}
        assert message in answer["error"], (line, answer)
        # The position is unchanged and the process keeps answering.
        assert engine.send(cmd="state") == {"ok": True, "state": state}, line


def test_blank_lines_are_skipped_and_eof_ends_the_process(engine: Engine) -> None:
    engine.stdin.write("\n   \n")
    answer = engine.send(cmd="new", game="british-square", deal="ms4294967297")
    assert answer["ok"] is True and answer["state"]["deal"] == "ms4294967297"
    code, errors = engine.close()
    assert code == 0
    assert errors == ""


def run_solrace(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SOLRACE, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


@pytest.mark.parametrize(("game_id", "key"), [("klondike", "klondike"), ("colorado", "colorado")])
def test_deal_json_prints_the_conformance_layout(game_id: str, key: str) -> None:
    result = run_solrace("deal", game_id, "1", "--json")
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout)
    assert_is_state(state)
    assert state["piles"] == layout_text(deals_data()["games"][key]["deals"]["1"]["layout"])
    assert (state["game"], state["deal"]) == (game_id, "1")


def test_deal_prints_a_layout_for_a_person() -> None:
    result = run_solrace("deal", "klondike", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Klondike (klondike), game 1"
    assert lines[1] == "round 1, phase play, 0/52 on foundations"
    assert any(line.strip().startswith("tableau[6] ( t6): ## ## ## ## ## ## ") for line in lines)
    assert "\x1b[" not in result.stdout  # not a terminal: no colour


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("deal", "nope", "1"), "solrace deal: unknown game 'nope'"),
        (("deal", "klondike", "abc"), "solrace deal: invalid game number 'abc'"),
    ],
)
def test_deal_refuses_bad_input_clearly(args: tuple[str, ...], message: str) -> None:
    result = run_solrace(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def _deal_on_a_terminal(no_color: bool, value: str = "1") -> str:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = value
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*SOLRACE, "deal", "klondike", "1"], stdout=follower, stderr=subprocess.DEVNULL, env=env
        )
    finally:
        os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal is gone once the process has exited
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode()


def test_deal_uses_colour_on_a_terminal_unless_no_color() -> None:
    coloured = _deal_on_a_terminal(no_color=False)
    plain = _deal_on_a_terminal(no_color=True)
    assert "Klondike (klondike), game 1" in coloured and "Klondike (klondike), game 1" in plain
    assert "\x1b[31m" in coloured  # red cards in red
    assert "\x1b[" not in plain


def test_deal_keeps_colour_when_no_color_is_empty() -> None:
    """no-color.org: NO_COLOR turns colour off when it is set to something, not when empty."""
    assert "\x1b[31m" in _deal_on_a_terminal(no_color=True, value="")
