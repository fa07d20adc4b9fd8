"""`solrace verify FILE` as a real process, given files that are no replay: a file larger
than any replay, or one without end, is refused in one line (exit 2) after reading a bounded
part of it, not read into memory to its end."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.test_verify import MOVES, sample

#: The largest replay file read (`solrace.replay_file.MAX_REPLAY_FILE_BYTES`).
LARGEST_FILE_BYTES = 16 * 2**20

#: The address space the command may use: room for Python and its imports, and for a
#: replay file up to the cap, not for a file read whole past it.
MEMORY_LIMIT_BYTES = 1536 * 2**20


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def verify(*argv: str) -> tuple[int, str, str]:
    """`python -m solrace.cli verify ARGV` under `MEMORY_LIMIT_BYTES`: status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "solrace.cli", "verify", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit_memory,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_replay_verifies_under_the_memory_limit(tmp_path: Path) -> None:
    path = tmp_path / "race.json"
    path.write_text(sample(MOVES).model_dump_json(indent=2))
    code, out, err = verify(str(path))
    assert (code, out.splitlines()[-1], err) == (0, "replay verified", "")


@pytest.mark.parametrize("size", [LARGEST_FILE_BYTES + 1, 64 * 2**30])
def test_a_file_larger_than_any_replay_is_one_line_and_exit_2(tmp_path: Path, size: int) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as file:
        file.truncate(size)  # sparse: takes no disk
    code, out, err = verify(str(path))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"solrace verify: {path} is not a solrace replay: larger than any replay (at most 16 MiB)"
    ]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_file_without_end_is_one_line_and_exit_2() -> None:
    code, out, err = verify("/dev/zero")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "solrace verify: /dev/zero is not a solrace replay: larger than any replay (at most 16 MiB)"
    ]
