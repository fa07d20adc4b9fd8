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


def test_a_test_stuck_past_its_timeout_ends_the_run_with_the_stacks(tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(STUCK_TEST)
    env = {**os.environ, "HANG_WATCH_S": "2", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.hang_watch", "--timeout=1", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=25,  # well before the stuck test's own 60 s
        check=False,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "test_stuck.py::test_swallows_its_timeout still running after 2 s" in done.stderr
    assert "in test_swallows_its_timeout" in done.stderr  # the stack says where
    assert "test_never_reached" not in done.stdout + done.stderr
