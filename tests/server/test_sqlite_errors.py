"""SQLite's errors as the `sqlite:` store's (server/store/sqlite_errors.py): only a database
that is busy, locked, full or failing is `StoreUnavailableError`; any other error is a plain
`StoreError`. Real SQLite files on disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from solrace.server.store import StoreError, StoreUnavailableError
from solrace.server.store.sqlite_errors import store_error


def test_only_a_busy_locked_full_or_failing_database_is_unavailable(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "errors.sqlite3", isolation_level=None, timeout=0)
    other = sqlite3.connect(tmp_path / "errors.sqlite3", isolation_level=None, timeout=0)
    try:
        db.execute("CREATE TABLE t (x)")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(sqlite3.OperationalError) as busy:
            db.execute("INSERT INTO t VALUES (1)")
        other.execute("ROLLBACK")
        with pytest.raises(sqlite3.OperationalError) as no_table:  # a bug: retrying won't help
            db.execute("SELECT * FROM nowhere")
    finally:
        db.close()
        other.close()
    with pytest.raises(sqlite3.ProgrammingError) as closed:  # raised by Python: no code
        db.execute("SELECT 1")

    assert isinstance(store_error(busy.value, "here"), StoreUnavailableError)
    for other_error in (no_table.value, closed.value):
        error = store_error(other_error, "here")
        assert type(error) is StoreError and str(error) == f"here: {other_error}"
