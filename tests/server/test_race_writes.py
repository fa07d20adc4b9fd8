"""Storing a change to a race (server/race_writes.py) on a real Redis shared with other nodes:
a change that puts racers out is applied behind the figures of every move stored for them,
even moves another node stores while the change is being stored; stored moves that cannot be
counted (a list that lost its tail, a move that does not replay) do not keep the race from
ending, and a change the store keeps refusing is given up, said once naming the race."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import NamedTuple

import pytest

from solrace.server.broker import RedisBroker
from solrace.server.hub import Hub
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import MakeMove, Progress, RaceFinished
from solrace.server.protocol.records import MoveRecord, RaceRecord, RacerState, RaceStatus
from solrace.server.race_writes import CHANGE_ATTEMPTS
from solrace.server.store.redis import RedisStore
from tests.server.sessions import RecordingSession, opened, running_hub, start_race_of_two

pytestmark = pytest.mark.redis

GAME_NUMBER = "1002"


class MovesStoredMeanwhile(RedisStore):
    """Redis, where `meanwhile` (another node's move) is stored right after this node's next
    read of a race's moves, before the change that read them is stored; while `every_read`
    makes one, another node's move is stored after each read. It counts the reads of a
    race's moves and the race saves."""

    meanwhile: MoveRecord | None = None
    every_read: Callable[[], MoveRecord] | None = None
    reads = 0
    saves = 0

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        self.reads += 1
        moves = await super().get_moves(race_id)
        move, self.meanwhile = self.meanwhile, None
        if move is None and self.every_read is not None:
            move = self.every_read()
        if move is not None:
            await self.append_move(move)
        return moves

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        self.saves += 1
        return await super().save_race_if(race, expected)


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


class RaceOfTwo(NamedTuple):
    store: MovesStoredMeanwhile
    hub: Hub
    clock: Clock
    race_id: RaceId
    alice: RecordingSession
    bob: RecordingSession


@contextlib.asynccontextmanager
async def race_of_two_on_redis(redis_url: str) -> AsyncIterator[RaceOfTwo]:
    """A 5 s race of alice and bob on deal `GAME_NUMBER`, started on a hub over Redis with a
    broker (a node of several), its progress batches held 600 s and its clock the test's."""
    clock = Clock()
    async with (
        opened(MovesStoredMeanwhile(redis_url)) as store,
        open_broker(redis_url) as broker,
        running_hub(
            store, broker=broker, clock=clock, progress_interval_s=600, min_time_limit_s=1
        ) as hub,
    ):
        race_id, alice, bob = await start_race_of_two(hub, game_number=GAME_NUMBER, time_limit_s=5)
        yield RaceOfTwo(store, hub, clock, race_id, alice, bob)


async def test_a_time_out_counts_the_moves_another_node_stores_until_it_is_stored(
    redis_url: str,
) -> None:
    async with race_of_two_on_redis(redis_url) as (store, hub, clock, race_id, _, bob):
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


async def bob_moves_twice_counted(
    hub: Hub, race_id: RaceId, bob: RecordingSession, store: MovesStoredMeanwhile
) -> RaceRecord:
    """Bob makes two moves on this node and their batch is folded into the stored race:
    the record it holds then."""
    for seq in range(2):
        await hub.handle(bob, MakeMove(race_id=race_id, seq=seq, move="deal"))
    await hub.keeper.progress.fold(hub.races[race_id])
    record = await store.get_race(race_id)
    assert record is not None
    assert {r.player_id: r.moves for r in record.racers}[PlayerId(bob.player_id or "")] == 2
    return record


@pytest.mark.parametrize("recounted", [False, True])
async def test_a_time_out_goes_in_when_a_racer_counts_more_moves_than_are_stored(
    redis_url: str, caplog: pytest.LogCaptureFixture, recounted: bool
) -> None:
    """Bob's list of moves lost its tail (a key evicted, an older backup restored): the
    race counts two moves, the list holds one. The time-out is stored all the same, at
    once, with Bob's figures as the race has them. `recounted`: a move of Alice's another
    node stored makes this node read the moves, and the race counting more of Bob's than
    are stored is logged as an error naming the race and Bob."""
    async with race_of_two_on_redis(redis_url) as (store, hub, clock, race_id, alice, bob):
        alice_id, bob_id = PlayerId(alice.player_id or ""), PlayerId(bob.player_id or "")
        counted = await bob_moves_twice_counted(hub, race_id, bob, store)
        await store.redis.ltrim(store._key("moves", race_id, bob_id), 0, 0)
        if recounted:
            await store.append_move(
                MoveRecord(
                    race_id=race_id,
                    player_id=alice_id,
                    ply=0,
                    seq=1,
                    move="deal",
                    at_ms=clock.now,
                )
            )
        store.reads = store.saves = 0
        caplog.clear()

        clock.now += 6_000
        for _ in range(3):
            await hub.tick()
        record = await store.get_race(race_id)
    assert record is not None and record.status is RaceStatus.FINISHED
    before = {r.player_id: r for r in counted.racers}[bob_id]
    bobs = {r.player_id: r for r in record.racers}[bob_id]
    assert (bobs.state, bobs.moves, bobs.on_foundations, bobs.total) == (
        RacerState.TIMED_OUT,
        2,
        before.on_foundations,
        before.total,
    )
    assert {r.player_id: r.moves for r in record.racers}[alice_id] == int(recounted)
    assert (store.reads, store.saves) == (int(recounted), 1 + int(recounted))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    if recounted:
        assert len(errors) == 1 and race_id in errors[0] and bob_id in errors[0], errors
    else:
        assert errors == []


async def test_a_time_out_goes_in_when_a_racer_s_stored_move_does_not_replay(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored move of Bob's this node's engine refuses (one an older engine took during a
    rolling upgrade, or corrupt data): the time-out counts Bob to his stored moves with the
    figures the race had for him, logs an error naming the race and Bob, and is stored."""
    async with race_of_two_on_redis(redis_url) as (store, hub, clock, race_id, _, bob):
        bob_id = PlayerId(bob.player_id or "")
        counted = await bob_moves_twice_counted(hub, race_id, bob, store)
        refused = MoveRecord(
            race_id=race_id, player_id=bob_id, ply=2, seq=3, move="f9", at_ms=clock.now
        )
        await store.append_move(refused)
        store.reads = store.saves = 0
        caplog.clear()

        clock.now += 6_000
        for _ in range(3):
            await hub.tick()
        record = await store.get_race(race_id)
        runtime = hub.races[race_id]
        assert runtime.boards[bob_id].game.ply == 2 and not runtime.stale
    assert record is not None and record.status is RaceStatus.FINISHED
    before = {r.player_id: r for r in counted.racers}[bob_id]
    bobs = {r.player_id: r for r in record.racers}[bob_id]
    assert (bobs.state, bobs.moves, bobs.on_foundations, bobs.total) == (
        RacerState.TIMED_OUT,
        3,
        before.on_foundations,
        before.total,
    )
    assert (store.reads, store.saves) == (1, 2)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and race_id in errors[0] and bob_id in errors[0], errors


async def test_a_change_the_store_keeps_refusing_is_given_up_and_said_once_naming_the_race(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another node stores a move of Bob's each time this node has read the moves: every
    save of the time-out is refused. The tick gives it up after `CHANGE_ATTEMPTS` rounds (no
    read and save for ever), says so once naming the race (not as an outage of the store),
    and stores it once the moves stop coming."""
    async with race_of_two_on_redis(redis_url) as (store, hub, clock, race_id, _, bob):
        bob_id = PlayerId(bob.player_id or "")
        stored = [0]

        def bobs_next() -> MoveRecord:
            stored[0] += 1
            return MoveRecord(
                race_id=race_id,
                player_id=bob_id,
                ply=stored[0] - 1,
                seq=stored[0],
                move="deal",
                at_ms=clock.now,
            )

        await store.append_move(bobs_next())
        store.every_read = bobs_next
        store.reads = store.saves = 0
        caplog.clear()

        clock.now += 6_000
        await hub.tick()
        assert (store.reads, store.saves) == (CHANGE_ATTEMPTS, CHANGE_ATTEMPTS)
        await hub.tick()
        assert hub.races[race_id].race.is_live
        store.every_read = None
        await hub.tick()
        record = await store.get_race(race_id)
    assert record is not None and record.status is RaceStatus.FINISHED
    assert {r.player_id: r.moves for r in record.racers}[bob_id] == stored[0]
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and said[0].startswith(f"race {race_id}: "), said


async def test_a_time_out_counts_the_moves_of_a_racer_the_set_of_movers_lost(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bob's moves are stored but the race's set of movers is lost (a key evicted): the
    store refuses the time-out that does not count them, and reading the moves finds them
    through the race's racers. The race ends, Bob's move counted; it ran on for good (the
    read found none to count, and the change was given up at every tick)."""
    async with race_of_two_on_redis(redis_url) as (store, hub, clock, race_id, _, bob):
        bob_id = PlayerId(bob.player_id or "")
        await store.append_move(
            MoveRecord(race_id=race_id, player_id=bob_id, ply=0, seq=1, move="deal", at_ms=0)
        )
        await store.redis.delete(store._key("racers", race_id))
        caplog.clear()

        clock.now += 6_000
        await hub.tick()
        record = await store.get_race(race_id)
    assert record is not None and record.status is RaceStatus.FINISHED
    assert {r.player_id: r.moves for r in record.racers}[bob_id] == 1
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not said, said
