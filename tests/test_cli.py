"""The `solrace` command (solrace/cli.py) through real subprocesses: a closed stdout.

Each command writes to a pipe whose reading end is already closed, as when `| head` has exited:
the command must end quietly with status 141 (no `BrokenPipeError` traceback, nothing on stderr).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from solrace.cli import BROKEN_PIPE_STATUS, INTERRUPTED_STATUS, main
from solrace.server.settings import LOG_LEVELS, Settings
from tests.server.test_verify import MOVES, sample

SOLRACE = [sys.executable, "-m", "solrace.cli"]


def run_into_closed_pipe(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*SOLRACE, *args],
            input=stdin,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.fixture
def replay_file(tmp_path: Path) -> Path:
    path = tmp_path / "race.json"
    path.write_text(sample(MOVES).model_dump_json())
    return path


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["-h"], BROKEN_PIPE_STATUS),
        (["--version"], BROKEN_PIPE_STATUS),
        (["deal", "klondike", "1"], BROKEN_PIPE_STATUS),
        (["deal", "klondike", "1", "--json"], BROKEN_PIPE_STATUS),
        (["verify", "REPLAY"], BROKEN_PIPE_STATUS),
        (["replay", "REPLAY", "--plain"], BROKEN_PIPE_STATUS),
        # argparse ignores a failed write of its help and exits 0 through SystemExit
        (["deal", "--help"], 0),
    ],
)
def test_a_closed_stdout_ends_the_command_quietly(
    args: list[str], status: int, replay_file: Path
) -> None:
    args = [str(replay_file) if arg == "REPLAY" else arg for arg in args]
    done = run_into_closed_pipe(args)
    assert (done.returncode, done.stderr) == (status, "")


def test_the_engine_loop_ends_quietly_on_a_closed_stdout() -> None:
    done = run_into_closed_pipe(["engine"], stdin='{"cmd":"new","game":"klondike","deal":"1"}\n')
    assert (done.returncode, done.stderr) == (BROKEN_PIPE_STATUS, "")


def test_an_open_stdout_gets_everything(replay_file: Path) -> None:
    done = subprocess.run(
        [*SOLRACE, "replay", str(replay_file), "--plain"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "replay verified"


def test_main_in_process_returns_the_command_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"]) == 0
    assert capsys.readouterr().out.startswith("usage: solrace COMMAND")
    assert main(["no-such-command"]) == 2


@pytest.mark.parametrize("args", [["help", "help"], ["--help", "-h"]])
def test_help_about_help_prints_the_usage(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 0
    said = capsys.readouterr()
    assert said.err == ""
    assert said.out.startswith("usage: solrace COMMAND [ARGS...]\n")


def test_no_command_prints_the_usage_as_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    # `solrace` alone printed the usage and exited 0, as if it had done something.
    assert main([]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("solrace: a command is required\n\nusage: solrace COMMAND")
    assert "'solrace COMMAND --help' (or 'solrace help COMMAND') explains each command." in said.err


#: `solrace ARGS` with Ctrl-C raising KeyboardInterrupt, as in a terminal: a job started in
#: the background of a shell script (as a CI runner may be) has SIGINT ignored, and so would
#: the command it starts.
AS_IN_A_TERMINAL = [
    sys.executable,
    "-c",
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'solrace'; runpy.run_module('solrace.cli', run_name='__main__')",
]


def test_ctrl_c_ends_the_engine_loop_quietly() -> None:
    engine = subprocess.Popen(
        [*AS_IN_A_TERMINAL, "engine"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert engine.stdin is not None and engine.stdout is not None
        engine.stdin.write('{"cmd":"new","game":"klondike","deal":"1"}\n')
        engine.stdin.flush()
        assert '"ok": true' in engine.stdout.readline()  # in the loop, waiting for a line
        engine.send_signal(signal.SIGINT)
        _, errors = engine.communicate(timeout=60)
    finally:
        engine.kill()
    assert (engine.returncode, errors) == (INTERRUPTED_STATUS, "")


def test_serve_help_lists_every_log_level_the_settings_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        "--log-level LEVEL DEBUG, INFO, WARNING, ERROR or CRITICAL, any case (default INFO)"
        in shown
    )
    for level in LOG_LEVELS:  # what the help lists is what the settings take
        assert Settings(log_level=level.lower()).log_level == level


def test_serve_help_names_the_unit_of_each_duration() -> None:
    from solrace.server.serve_cli import build_parser

    for action in build_parser()._actions:
        setting = action.dest
        if setting.endswith("_s") and not setting.endswith("_per_s"):
            assert action.metavar == "SECONDS", setting
