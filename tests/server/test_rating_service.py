"""The rating service's leaderboards (server/ratings.py) over a real SQLite store: a game's
board is read from the store at most every `LEADERBOARD_FRESH_S`, the rows each request asks
for cut from it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.protocol.tournament_messages import GetLeaderboard, Leaderboard
from solrace.server.ratings import LEADERBOARD_FRESH_S, RatingService
from solrace.server.store.sqlite import SqliteStore
from tests.server.sessions import RecordingSession
from tests.server.test_store_contract import rated_race, rating


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore(tmp_path / "ratings.sqlite3")
    await store.open()
    for player in ("p1", "p2", "p3"):
        await store.create_player(player, f"name-{player}", 0)
    yield store
    await store.close()


async def board(service: RatingService, game: str = "klondike", limit: int = 20) -> list[str]:
    session = RecordingSession(1)
    await service.get_leaderboard(session, GetLeaderboard(game=game, limit=limit))
    [answer] = session.sent
    assert isinstance(answer, Leaderboard)
    return [entry.player_id for entry in answer.entries]


async def test_a_leaderboard_is_read_again_once_it_is_old(store: SqliteStore) -> None:
    clock = Clock()
    service = RatingService(store, clock=clock)
    await store.apply_rating_update(
        rated_race("r1", [("p1", None, rating("p1", 30, 1)), ("p2", None, rating("p2", 20, 1))])
    )
    assert await board(service) == ["p1", "p2"]
    # Another node rates a race: this one shows it once its board is old enough.
    await store.apply_rating_update(
        rated_race(
            "r2",
            [("p3", None, rating("p3", 40, 1)), ("p2", rating("p2", 20, 1), rating("p2", 19, 2))],
        )
    )
    clock.now += LEADERBOARD_FRESH_S / 2
    assert await board(service) == ["p1", "p2"]
    assert await board(service, limit=1) == ["p1"]  # cut from the kept rows
    clock.now += LEADERBOARD_FRESH_S / 2
    assert await board(service) == ["p3", "p1", "p2"]
