"""The rating service's leaderboards (server/ratings.py) over a real SQLite store: a game's
board is read from the store at most every `LEADERBOARD_FRESH_S`, the rows each request asks
for cut from it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
    Resign,
)
from solrace.server.protocol.ratings import Rating
from solrace.server.protocol.tournament_messages import GetLeaderboard, Leaderboard
from solrace.server.ratings import LEADERBOARD_FRESH_S, RatingService
from solrace.server.store.sqlite import SqliteStore
from tests.integration.solver import scoring_line
from tests.server.sessions import RecordingSession, running_hub
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
        await store.create_player(PlayerId(player), f"name-{player}", 0)
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


async def test_a_board_read_while_this_node_rates_a_race_is_not_kept(
    store: SqliteStore,
) -> None:
    """The board read before a race of its game is rated here, and answered after, may
    miss it: it is not kept, so the next request reads the race's ratings."""
    async with running_hub(store) as hub:
        hub.rng = random.Random(0)  # a known deal, which has a line scoring a card
        service = RatingService(store, clock=Clock())
        hub.plug_in(race_finished=service.race_finished)
        ann, bob = RecordingSession(11), RecordingSession(12)
        for session, name in ((ann, "ann"), (bob, "bob")):
            await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
        await hub.handle(ann, CreateRace(game="klondike", seats=2, time_limit_s=600, rated=True))
        (race_id,) = hub.races
        await hub.handle(bob, JoinRace(race_id=race_id))
        await hub.tick()
        # Ann puts a card out (a race every racer tied is not rated).
        number = hub.races[race_id].race.record.game_number
        for seq, move in enumerate(scoring_line("klondike", number)):
            await hub.handle(ann, MakeMove(race_id=race_id, seq=seq, move=move))
        read, answer = asyncio.Event(), asyncio.Event()
        ratings_of = service.game_ratings

        async def read_then_wait(game: str) -> dict[PlayerId, Rating]:
            table = await ratings_of(game)
            read.set()
            await answer.wait()  # answered once the race below is rated
            return table

        service.game_ratings = read_then_wait  # type: ignore[method-assign]
        asking = asyncio.create_task(board(service))
        await read.wait()
        for session in (ann, bob):  # both resign: the race is rated, here
            await hub.handle(session, Resign(race_id=race_id))
        answer.set()
        assert await asking == []  # read before the race was rated
        service.game_ratings = ratings_of  # type: ignore[method-assign]
        assert sorted(await board(service)) == sorted(s.player_id or "" for s in (ann, bob))
