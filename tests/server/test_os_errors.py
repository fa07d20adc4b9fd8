"""`describe_os_error` (server/os_errors.py): an OSError's words, without its errno number."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from solrace.server.os_errors import describe_os_error


def test_the_system_s_words_and_the_file_without_the_errno_number(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file, not a folder")
    with pytest.raises(OSError) as raised:
        (tmp_path / "data" / "solrace.sqlite3").write_text("")
    assert str(raised.value).startswith(f"[Errno {errno.ENOTDIR}]")
    assert describe_os_error(raised.value) == (
        f"Not a directory: '{tmp_path / 'data' / 'solrace.sqlite3'}'"
    )


def test_an_error_without_a_file_or_without_the_system_s_words() -> None:
    assert describe_os_error(OSError(errno.EADDRNOTAVAIL, "Cannot assign")) == "Cannot assign"
    assert describe_os_error(OSError("the disk said no")) == "the disk said no"
