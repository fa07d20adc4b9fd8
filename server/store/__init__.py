"""Storage backends chosen by URL: `memory:`, `sqlite:PATH` (`redis://` comes later)."""

from __future__ import annotations

from solrace.server.store.base import (
    NameTakenError,
    PlyConflictError,
    Store,
    StoreError,
    UnknownRaceError,
)
from solrace.server.store.memory import MemoryStore
from solrace.server.store.sqlite import SqliteStore

__all__ = [
    "MemoryStore",
    "NameTakenError",
    "PlyConflictError",
    "SqliteStore",
    "Store",
    "StoreError",
    "UnknownRaceError",
    "open_store",
]


def open_store(url: str) -> Store:
    """The (unopened) store a URL names: `memory:` or `sqlite:PATH` (`sqlite:///abs/path` too)."""
    if url == "memory:":
        return MemoryStore()
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:")
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError("sqlite: needs a path, e.g. sqlite:data/solrace.sqlite3")
        return SqliteStore(path)
    raise ValueError(f"unsupported store URL {url!r} (memory:, sqlite:PATH)")
