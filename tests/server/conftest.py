"""Fixtures of the server tests: a SQLite file on disk, and another connection on it that
takes its write lock and lets it go again; for the tests of `solrace serve` and of `App`, a
port something listens on, and no `SOLRACE_*` variable of the machine (`no_solrace_environment`,
which they ask for in their `pytestmark`)."""

from __future__ import annotations

import os
import socket
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


@pytest.fixture
def no_solrace_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("SOLRACE_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A port (from the OS) on 127.0.0.1 that something else listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]
