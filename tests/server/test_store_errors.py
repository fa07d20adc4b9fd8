"""The `sqlite:` store's failures are store errors (server/store/sqlite.py): a database that
another connection keeps locked is `StoreUnavailableError` from every write, the store works
again once the lock is gone, and the hub answers `unavailable` meanwhile instead of closing
the connection. Real SQLite files on disk; the lock is another connection's, as a backup tool
or a second process would hold it.

The store waits `busy_timeout_s` for a lock before giving up: 50 ms here (5 s by default), so
each refused call costs the test 50 ms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import PROTOCOL_VERSION, CreateRace, Error, Hello, Welcome
from solrace.server.store import SqliteStore, StoreUnavailableError
from tests.server.conftest import Holder
from tests.server.sessions import RecordingSession, running_hub
from tests.server.test_store_contract import move, race

BUSY_TIMEOUT_S = 0.05


def tournament(version: int) -> TournamentRecord:
    return TournamentRecord(
        tournament_id="t1", version=version, phase="open", created_at_ms=1_000, document="{}"
    )


@pytest.fixture
async def store(database: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(database, busy_timeout_s=BUSY_TIMEOUT_S)
    await opened.open()
    yield opened
    await opened.close()


async def test_every_write_to_a_locked_database_is_unavailable_until_the_lock_goes(
    store: SqliteStore, holder: Holder
) -> None:
    opened = race()
    assert await store.save_race_if(opened, None)
    await store.append_move(move(0))

    holder.lock()
    # The worker thread's connection, the moves' own connection and the competition part.
    with pytest.raises(StoreUnavailableError, match="database is locked"):
        await store.create_player(PlayerId("p1"), "Ann", 1_000)
    with pytest.raises(StoreUnavailableError):
        await store.save_race_if(race().model_copy(update={"seats": 3}), opened)
    with pytest.raises(StoreUnavailableError):
        await store.append_move(move(1))
    with pytest.raises(StoreUnavailableError):
        await store.save_tournament(tournament(1), None)
    # Reads are not held up by a writer (WAL): what was stored before is there.
    assert await store.get_race(RaceId("r1")) == opened
    assert await store.get_moves(RaceId("r1")) == [move(0)]
    holder.release()

    # Nothing was half-stored, and the same store object carries on.
    assert await store.get_player(PlayerId("p1")) is None
    assert await store.get_race(RaceId("r1")) == opened
    assert (await store.create_player(PlayerId("p1"), "Ann", 1_000)).name == "Ann"
    assert await store.save_race_if(race().model_copy(update={"seats": 3}), opened)
    await store.append_move(move(1))
    assert await store.get_moves(RaceId("r1")) == [move(0), move(1)]
    assert await store.save_tournament(tournament(1), None)


async def test_opening_a_locked_database_is_unavailable(database: Path, holder: Holder) -> None:
    """A file another connection has locked since before the store opened it (creating the
    schema is a write)."""
    holder.db.execute("PRAGMA journal_mode=WAL")
    holder.lock()
    store = SqliteStore(database, busy_timeout_s=BUSY_TIMEOUT_S)
    with pytest.raises(StoreUnavailableError, match="cannot open the SQLite database"):
        await store.open()
    holder.release()
    await store.open()  # a store that failed to open may be opened again
    try:
        assert (await store.create_player(PlayerId("p1"), "Ann", 1_000)).name == "Ann"
    finally:
        await store.close()


async def test_the_hub_answers_unavailable_while_the_database_is_locked(
    store: SqliteStore, holder: Holder
) -> None:
    """Neither a hello nor a new race closes the connection (1011): both are refused with
    `unavailable`, change nothing, and succeed when sent again after the lock is gone."""
    async with running_hub(store, countdown_s=3.0) as hub:
        ann, bob = RecordingSession(1), RecordingSession(2)
        await hub.handle(ann, Hello(protocol=PROTOCOL_VERSION, name="ann"))
        assert isinstance(ann.sent[-1], Welcome)

        holder.lock()
        await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
        await hub.handle(ann, CreateRace(game="klondike", seats=2, time_limit_s=600))
        holder.release()

        for session in (ann, bob):
            refusal = session.sent[-1]
            assert isinstance(refusal, Error) and refusal.code == ErrorCode.UNAVAILABLE
            assert not session.closed
        assert not bob.said_hello and hub.races == {}
        await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
        assert isinstance(bob.sent[-1], Welcome)
        await hub.handle(ann, CreateRace(game="klondike", seats=2, time_limit_s=600))
        assert len(hub.races) == 1
