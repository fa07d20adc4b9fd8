"""What every write of the `sqlite:` store shares: one `BEGIN IMMEDIATE` transaction.

Both connections run in autocommit mode (`isolation_level=None`), so a write that has more
than one statement, or that checks before it writes, says where its transaction starts and
ends: here, once.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

log = logging.getLogger("solrace.server.store")


def transaction(db: sqlite3.Connection, work: Callable[[], T]) -> T:
    """Run `work` in one `BEGIN IMMEDIATE` transaction on `db` and commit what it wrote;
    if it raises (or the commit fails), roll back and let the error through.

    IMMEDIATE takes the write lock up front, so the reads `work` checks before it writes
    cannot be overtaken by another writer, in this process or another one on the file. A
    `work` that decides to write nothing simply returns: committing nothing costs nothing."""
    db.execute("BEGIN IMMEDIATE")
    try:
        outcome = work()
        db.execute("COMMIT")
    except BaseException:
        _roll_back(db)
        raise
    return outcome


def _roll_back(db: sqlite3.Connection) -> None:
    """Undo the open transaction, if SQLite has not already (it does after some errors,
    e.g. a full disk); a failure here must not hide the error that led to it."""
    if not db.in_transaction:
        return
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        log.warning("rollback failed: %s", exc)
