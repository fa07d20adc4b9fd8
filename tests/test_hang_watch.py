"""The hang guard (tests/hang_watch.py) ends a run whose test pytest-timeout could not stop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STUCK_TEST = """
import time


def test_swallows_its_timeout():
    try:
        time.sleep(30)
    except BaseException:  # pytest-timeout's exception, lost as a finaliser would lose it
        time.sleep(30)


def test_never_reached():
    pass
"""

SLOW_TEST = """
import time


def test_slow_without_a_limit():
    time.sleep(3)
"""


def run_pytest(folder: Path, test: str, *options: str) -> subprocess.CompletedProcess[str]:
    """A pytest child on `test` (its file's text) with the guard, 1 s past the limit."""
    (folder / "test_child.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.hang_watch", "-q", *options],
        cwd=folder,
        env={**os.environ, "HANG_WATCH_S": "1", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=25,  # well before the stuck test's own 60 s
        check=False,
    )


def test_a_test_stuck_past_its_timeout_ends_the_run_with_the_stacks(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, STUCK_TEST, "--timeout=1")
    assert done.returncode == 1, done.stdout + done.stderr
    said = "test_child.py::test_swallows_its_timeout still running after 2 s"  # 1 s + 1 s
    assert said in done.stderr, done.stderr
    assert "in test_swallows_its_timeout" in done.stderr  # the stack says where
    assert "test_never_reached" not in done.stdout + done.stderr


def test_a_test_without_a_time_limit_is_not_watched(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, SLOW_TEST, "--timeout=0")  # 3 s, past the guard's 1 s
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still running" not in done.stderr
