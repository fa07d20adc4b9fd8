"""SQLite's errors as the `sqlite:` store's: `StoreUnavailableError` for a database that is
there but cannot be used just now (busy, locked, full, failing), so a caller may retry;
`StoreError` for any other.
"""

from __future__ import annotations

import sqlite3

from solrace.server.store.base import StoreError, StoreUnavailableError

#: SQLite's primary result codes for a database that is there but cannot be used just now:
#: another connection held the lock past the busy timeout, the disk is full or failing. A
#: retry later may succeed, so they are `StoreUnavailableError`; any other is a `StoreError`.
_UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)


def store_error(exc: sqlite3.Error, context: str, after: str = "") -> StoreError:
    """The store's error for a `sqlite3` one (raise it `from exc`), `after` added to its
    message: `StoreUnavailableError` if the database is busy, locked, full or failing, else
    `StoreError`."""
    message = f"{context}: {exc}{after}"
    if primary_code(exc) in _UNAVAILABLE_CODES:
        return StoreUnavailableError(message)
    return StoreError(message)


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error; None for one Python's sqlite3 raises
    itself (a closed connection, ...)."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


__all__ = ["primary_code", "store_error"]
