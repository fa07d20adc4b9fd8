"""Storage backends chosen by URL: `memory:`, `sqlite:PATH`, `redis://HOST:PORT/DB`."""

from __future__ import annotations

from solrace.server.settings import REDIS_SCHEMES, REDIS_URL_FORMS
from solrace.server.store.base import (
    NameTakenError,
    NotPlayingError,
    PlyConflictError,
    Store,
    StoreError,
    StoreUnavailableError,
    UncountedMovesError,
    UnknownRaceError,
)
from solrace.server.store.memory import MemoryStore
from solrace.server.store.sqlite import SqliteStore
from solrace.server.store.sqlite_files import StoreLockedError
from solrace.server.url_redaction import redact

__all__ = [
    "MemoryStore",
    "NameTakenError",
    "NotPlayingError",
    "PlyConflictError",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
    "UncountedMovesError",
    "UnknownRaceError",
    "open_store",
]


STORE_URL_FORMS = f"memory:, sqlite:PATH, {REDIS_URL_FORMS}"


def open_store(url: str) -> Store:
    """The (unopened) store a URL names: `memory:`, `sqlite:PATH` (`sqlite:///abs/path` too) or
    `redis://[:password@]HOST:PORT/DB` (`rediss://` for TLS, `unix://` for a socket).

    A SQLite store locks its file while open: a second store on it (another server) is
    refused, `StoreLockedError`. Redis is shared by design; memory shares nothing."""
    if url == "memory:":
        return MemoryStore()
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:")
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError("sqlite: needs a path, e.g. sqlite:data/solrace.sqlite3")
        return SqliteStore(path)
    if url.startswith(REDIS_SCHEMES):
        from solrace.server.store.redis import RedisStore

        return RedisStore(url)
    raise ValueError(f"unsupported store URL {redact(url)!r}; accepted: {STORE_URL_FORMS}")
