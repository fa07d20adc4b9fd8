"""The node's token secret (server/node_secret.py): the file made whole and private, and one
that is not a whole secret refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.node_secret import load_secret
from solrace.server.settings import Settings
from tests.server.serve_command import serve

pytestmark = pytest.mark.usefixtures("no_solrace_environment")


def test_a_secret_file_that_is_not_a_whole_secret_is_refused_never_used(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Tokens signed with an empty key could be made by anyone: a secret file left empty (a
    start that failed while writing it, before it was written whole) stops the node."""
    (tmp_path / "secret").write_text("")
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path))
    assert code == 1
    assert lines == [
        f"solrace serve: error: the token secret {tmp_path / 'secret'} is empty or cut short "
        "(0 characters, at least 16): restore it from a backup, or remove it to make a new one "
        "(every player's token then stops working)"
    ]


def test_a_secret_file_that_is_not_text_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Random bytes written as they come (head -c 32 /dev/urandom > secret) are no secret the
    node can read: it says so and how to make one."""
    (tmp_path / "secret").write_bytes(bytes(range(16)) + b"\x92\xff" + bytes(range(16)))
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path))
    path = tmp_path / "secret"
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: the token secret {path} is not text (byte 16 is not UTF-8): "
            f"write 16 characters or more into it (openssl rand -hex 32 > {path}), or remove it "
            "to make a new one (every player's token then stops working)"
        ],
    )
    assert path.read_bytes()[16:18] == b"\x92\xff"  # left as it was


def test_the_secret_file_is_made_whole_and_private(tmp_path: Path) -> None:
    secret = load_secret(Settings(data_dir=tmp_path))
    path = tmp_path / "secret"
    assert len(secret) == 64 and path.read_text() == secret.decode()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no draft left beside it
    assert load_secret(Settings(data_dir=tmp_path)) == secret  # made once
