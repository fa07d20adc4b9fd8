"""Storing a change to a race (server/race_writes.py) on a real Redis shared with other nodes:
a change that puts racers out is applied behind the figures of every move stored for them,
even moves another node stores while the change is being stored."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from solrace.server.broker import RedisBroker
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Progress, RaceFinished
from solrace.server.protocol.records import MoveRecord, RaceStatus
from solrace.server.store.redis import RedisStore
from tests.server.sessions import opened, running_hub, start_race_of_two

pytestmark = pytest.mark.redis

GAME_NUMBER = "1002"


class MovesStoredMeanwhile(RedisStore):
    """Redis, where `meanwhile` (another node's move) is stored right after this node's next
    read of a race's moves, before the change that read them is stored."""

    meanwhile: MoveRecord | None = None

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        moves = await super().get_moves(race_id)
        move, self.meanwhile = self.meanwhile, None
        if move is not None:
            await self.append_move(move)
        return moves


@contextlib.asynccontextmanager
async def open_broker(url: str) -> AsyncIterator[RedisBroker]:
    broker = RedisBroker(url)
    await broker.open()
    try:
        yield broker
    finally:
        await broker.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


async def test_a_time_out_counts_the_moves_another_node_stores_until_it_is_stored(
    redis_url: str,
) -> None:
    clock = Clock()
    async with (
        opened(MovesStoredMeanwhile(redis_url)) as store,
        open_broker(redis_url) as broker,
        running_hub(
            store, broker=broker, clock=clock, progress_interval_s=600, min_time_limit_s=1
        ) as hub,
    ):
        race_id, _, bob = await start_race_of_two(hub, game_number=GAME_NUMBER, time_limit_s=5)
        bob_id = PlayerId(bob.player_id or "")

        def bobs(ply: int) -> MoveRecord:  # a move of Bob's, taken by another node
            return MoveRecord(
                race_id=race_id,
                player_id=bob_id,
                ply=ply,
                seq=ply + 1,
                move="deal",
                at_ms=clock.now,
            )

        for ply in range(2):
            await store.append_move(bobs(ply))
        store.meanwhile = bobs(2)  # lands between this node's read of the moves and its save

        clock.now += 6_000
        await hub.tick()
        record = await store.get_race(race_id)
        assert record is not None and record.status is RaceStatus.FINISHED
        assert {r.player_id: r.moves for r in record.racers}[bob_id] == 3
        assert [m.ply for m in await store.get_moves(race_id) if m.player_id == bob_id] == [
            0,
            1,
            2,
        ]
        # Bob's figures come before the finish, and only once; this node's board has his moves.
        events = record.events
        finish = next(i for i, e in enumerate(events) if isinstance(e, RaceFinished))
        counted = [
            e.progress.moves
            for e in events
            if isinstance(e, Progress)
            and e.progress.player_id == bob_id
            and e.progress.state == "playing"
            and e.progress.moves
        ]
        assert counted == [3]
        assert not any(isinstance(e, Progress) for e in events[finish + 1 :])
        assert hub.races[race_id].boards[bob_id].game.ply == 3
