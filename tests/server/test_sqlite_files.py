"""The `sqlite:` store's lock file (server/store/sqlite_files.py): named after its database,
and held by one exclusive store at a time, the next one opening once the holder closes. Real
files on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.protocol.ids import RaceId
from solrace.server.store import SqliteStore
from solrace.server.store.sqlite_files import StoreLockedError, lock_path_for


def test_the_lock_file_is_the_database_s_name_plus_lock() -> None:
    assert lock_path_for(Path("data/solrace.sqlite3")) == Path("data/solrace.sqlite3.lock")
    assert lock_path_for(Path("data/a.db")) != lock_path_for(Path("data/a.sqlite3"))
    assert lock_path_for(Path("data/races.lock")) == Path("data/races.lock.lock")


async def test_a_store_refused_its_lock_opens_once_the_holder_closes(tmp_path: Path) -> None:
    holder = SqliteStore(tmp_path / "x.sqlite3")
    waiting = SqliteStore(tmp_path / "x.sqlite3")
    await holder.open()
    with pytest.raises(StoreLockedError):
        await waiting.open()
    await holder.close()
    await waiting.open()  # the same object, after a failed open
    assert await waiting.get_race(RaceId("nothing")) is None
    await waiting.close()


async def test_a_store_through_a_link_to_the_file_is_refused_too(tmp_path: Path) -> None:
    """The lock is the file's, not the path's: a link to the database, or to its folder,
    opens the same file and must find the same lock."""
    (tmp_path / "real").mkdir()
    (tmp_path / "folder").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "link.sqlite3").symlink_to(tmp_path / "real" / "x.sqlite3")
    holder = SqliteStore(tmp_path / "real" / "x.sqlite3")
    await holder.open()
    try:
        for path in (tmp_path / "folder" / "x.sqlite3", tmp_path / "real" / "link.sqlite3"):
            with pytest.raises(StoreLockedError) as refused:
                await SqliteStore(path).open()
            assert refused.value.lock_path == tmp_path / "real" / "x.sqlite3.lock"
    finally:
        await holder.close()
