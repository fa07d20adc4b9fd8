"""The process of `solrace serve` around its node (server/serve_process.py): a failed start
leaves no trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.serve_command import serve

pytestmark = pytest.mark.usefixtures("no_solrace_environment")


def test_a_failed_start_removes_the_data_dir_it_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, listening_port: int
) -> None:
    fresh = tmp_path / "new" / "data"
    assert serve(capsys, "--port", str(listening_port), "--data-dir", str(fresh))[0] == 1
    assert list(tmp_path.iterdir()) == []  # "new" went too: this start made it
    # A folder that was there before keeps what it had, and what the start added.
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes").write_text("mine")
    assert serve(capsys, "--port", str(listening_port), "--data-dir", str(kept))[0] == 1
    assert (kept / "notes").read_text() == "mine"
    assert (kept / "secret").exists()
