"""Fixtures of the server tests: a SQLite file on disk, and another connection on it that
takes its write lock and lets it go again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "solrace.sqlite3"


class Holder:
    """Another connection on the file that takes its write lock and lets it go again."""

    def __init__(self, database: Path) -> None:
        # Any thread may let the lock go (`check_same_thread`).
        self.db = sqlite3.connect(
            database, isolation_level=None, timeout=0, check_same_thread=False
        )

    def lock(self) -> None:
        # The file is in WAL mode: EXCLUSIVE shuts every other writer out; readers go on.
        self.db.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.db.execute("ROLLBACK")


@pytest.fixture
def holder(database: Path) -> Iterator[Holder]:
    other = Holder(database)
    yield other
    other.db.close()
