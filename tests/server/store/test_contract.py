"""One contract, every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.protocol.records import MoveRecord, RaceRecord, RaceStatus
from solrace.server.store import (
    MemoryStore,
    NameTakenError,
    PlyConflictError,
    SqliteStore,
    Store,
    UnknownRaceError,
    open_store,
)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend: Store = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "s.db")
    await backend.open()
    yield backend
    await backend.close()


def race(race_id: str = "r1", status: RaceStatus = RaceStatus.OPEN) -> RaceRecord:
    return RaceRecord(
        race_id=race_id,
        game="klondike",
        seats=2,
        time_limit_s=60,
        rated=False,
        invite_code=None,
        game_number="1",
        salt="s",
        commitment="c",
        creator="p1",
        status=status,
        created_at_ms=0,
        countdown_ms=0,
        grace_ms=0,
        spectator_delay_ms=0,
    )


def move(ply: int, seq: int, player: str = "p1") -> MoveRecord:
    return MoveRecord(race_id="r1", player_id=player, ply=ply, seq=seq, move="deal", at_ms=ply)


async def test_players_and_names(store: Store) -> None:
    created = await store.create_player("p1", "Alice", 5)
    assert await store.get_player("p1") == created
    assert await store.get_player("nobody") is None
    with pytest.raises(NameTakenError):
        await store.create_player("p2", "alice", 6)


async def test_races_saved_and_listed_by_status(store: Store) -> None:
    await store.save_race(race("r1"))
    await store.save_race(race("r2", RaceStatus.FINISHED))
    await store.save_race(race("r1", RaceStatus.RUNNING))
    assert (await store.get_race("r1")) == race("r1", RaceStatus.RUNNING)
    assert [r.race_id for r in await store.list_races([RaceStatus.RUNNING])] == ["r1"]
    assert await store.get_race("r3") is None


async def test_moves_need_the_expected_ply_and_a_new_seq(store: Store) -> None:
    await store.save_race(race())
    await store.append_move(move(0, 10))
    await store.append_move(move(1, 11))
    await store.append_move(move(0, 10, player="p2"))
    with pytest.raises(PlyConflictError):
        await store.append_move(move(1, 12))  # stale ply
    with pytest.raises(PlyConflictError):
        await store.append_move(move(3, 13))  # a gap
    with pytest.raises(PlyConflictError):
        await store.append_move(move(2, 10))  # a reused seq
    with pytest.raises(UnknownRaceError):
        await store.append_move(move(0, 1).model_copy(update={"race_id": "nope"}))
    moves = await store.get_moves("r1")
    assert sorted((m.player_id, m.ply, m.seq) for m in moves) == [
        ("p1", 0, 10),
        ("p1", 1, 11),
        ("p2", 0, 10),
    ]


async def test_sqlite_survives_reopening(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "s.db")
    await first.open()
    await first.save_race(race())
    await first.append_move(move(0, 1))
    await first.close()
    second = open_store(f"sqlite:{tmp_path / 's.db'}")
    await second.open()
    assert [m.seq for m in await second.get_moves("r1")] == [1]
    await second.close()


def test_store_urls() -> None:
    assert isinstance(open_store("memory:"), MemoryStore)
    with pytest.raises(ValueError):
        open_store("redis+nope://x")
