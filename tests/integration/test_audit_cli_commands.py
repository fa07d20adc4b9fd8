"""`solrace` and its commands' help as real processes: every command's `--help` (or
`solrace help COMMAND`) prints that command's usage and exits 0; an unknown command is one
line and the usage on stderr, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from solrace.cli import COMMANDS

SOLRACE = [sys.executable, "-m", "solrace.cli"]


def solrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SOLRACE, *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("form", ["COMMAND --help", "help COMMAND"])
def test_each_command_s_help_is_its_own(command: str, form: str) -> None:
    done = solrace(*form.replace("COMMAND", command).split())
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"usage: solrace {command} ")


def test_help_for_an_unknown_command_is_refused_as_the_command_is() -> None:
    done = solrace("help", "srve")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("solrace: unknown command 'srve'\n\nusage: solrace COMMAND")
