"""Progress batches (server/race_progress.py): a batch the store refuses goes in with the next
one, an outage is said once, a stopped node arms no fold, a fold counts only stored moves and
never takes a racer's figures back, one node folds a batch in place unless a change holds
the race, and the node's races wait for their folds in one queue."""

from __future__ import annotations

import asyncio
import logging

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
    Progress,
)
from solrace.server.protocol.records import MoveRecord, RaceRecord
from solrace.server.race_progress import FOLD_RETRY_S
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)
from tests.waiting import eventually


async def test_a_batch_not_stored_goes_out_with_the_next_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = HeldSaves()
    async with (
        opened(store),
        running_hub(store, broker=MemoryBroker(), progress_interval_s=600) as hub,
    ):
        race_id, alice, bob = await start_race_of_two(
            hub, game="klondike", game_number="1002", time_limit_s=600
        )
        runtime = hub.races[race_id]
        assert runtime.boards, "the race did not start"
        for seq in range(3):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
        player = alice.player_id or PlayerId("")

        store.failing = True
        await hub.keeper.progress.fold(runtime)
        await hub.keeper.progress.fold(runtime)  # the outage goes on: said once, not per batch
        assert runtime.race.racers[player].moves == 0
        assert runtime.pending == {player} and len(runtime.pending_moves) == 3
        due = runtime.fold_due
        assert due is not None, "the next fold is due"
        assert due.when() - asyncio.get_running_loop().time() <= FOLD_RETRY_S  # not the interval

        pending, moves = runtime.take_pending()
        await hub.keeper.progress.fold(runtime)  # nothing to fold: no write, so no "works again"
        runtime.put_back(pending, moves)
        await hub.keeper.progress.fold(runtime)  # the same outage still: the third failure of it
        store.failing = False
        await hub.handle(alice, MakeMove(race_id=race_id, seq=3, move="deal"))
        await hub.keeper.progress.fold(runtime)
        assert runtime.race.racers[player].moves == 4 and not runtime.pending
        seen = [m.progress.moves for m in bob.sent if isinstance(m, Progress)]
        assert seen[-1] == 4
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [line.split(":")[0] for line in said] == [
        "storing progress batches failed",
        "storing progress batches works again after 3 failure(s)",
    ], said


async def test_a_stopped_hub_arms_no_fold_even_when_its_last_one_fails() -> None:
    store = HeldSaves()
    async with (
        opened(store),
        running_hub(store, broker=MemoryBroker(), progress_interval_s=600) as hub,
    ):
        race_id, alice, _ = await start_race_of_two(hub, game_number=None)
        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        runtime = hub.races[race_id]
        assert runtime.pending and runtime.fold_due is not None
        store.failing = True
        await hub.stop()  # its last fold fails
        assert runtime.fold_due is None and not hub.keeper.progress._folds


class SlowMoves(MemoryStore):
    """The memory store, with move writes that wait for `go` while it is not set."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()
        self.go.set()
        self.waiting = asyncio.Event()

    async def append_move(self, move: MoveRecord) -> None:
        if not self.go.is_set():
            self.waiting.set()
            await self.go.wait()
        await super().append_move(move)


async def test_a_fold_counts_only_the_moves_already_stored() -> None:
    store = SlowMoves()
    async with opened(store), running_hub(store, progress_interval_s=600) as hub:
        race_id, alice, _ = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        player = alice.player_id or PlayerId("")
        for seq in range(2):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
        store.go.clear()
        third = asyncio.create_task(
            hub.handle(alice, MakeMove(race_id=race_id, seq=2, move="deal"))
        )
        await store.waiting.wait()  # played on the board, not stored (nor acknowledged) yet
        assert runtime.boards[player].game.ply == 3
        await hub.keeper.progress.fold(runtime)
        assert runtime.race.racers[player].moves == 2
        store.go.set()
        await third
        await hub.keeper.progress.fold(runtime)
        assert runtime.race.racers[player].moves == 3


async def test_a_fold_never_takes_a_racer_s_figures_back() -> None:
    """Several nodes: another node folded later moves of the racer first (its notice not
    here yet); this node's batch, behind those, is left out instead of taking the racer's
    moves and cards back."""
    async with running_hub(progress_interval_s=600) as hub:
        race_id, alice, _ = await start_race_of_two(hub)
        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        runtime = hub.races[race_id]
        player = alice.player_id or PlayerId("")
        runtime.race.racers[player].moves = 5  # as the other node stored it
        await hub.keeper.progress.fold(runtime)
        assert runtime.race.racers[player].moves == 5
        assert not runtime.pending


class Contended(MemoryStore):
    """A store where, while `losing` is set, another node always changes a race first."""

    losing = False

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        if self.losing:
            return False
        return await super().save_race_if(race, expected)


async def test_a_race_too_busy_to_store_its_batch_is_not_the_store_s_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every compare-and-set lost (the store answered each time): the race's own trouble,
    said once for it, not the node's store outage, which other races' batches would then
    end and start again."""
    store = Contended()
    async with (
        opened(store),
        running_hub(store, broker=MemoryBroker(), progress_interval_s=600) as hub,
    ):
        race_id, alice, _ = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        store.losing = True
        for seq in range(2):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
            await hub.keeper.progress.fold(runtime)
        store.losing = False
        await hub.keeper.progress.fold(runtime)
        assert not runtime.pending, "stored once the race is free"
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [f"race {race_id}: progress not stored (retried): the race is busy; retry"]


async def test_one_node_folds_a_batch_in_place_unless_a_change_holds_the_race() -> None:
    """One node folds a batch of racers still playing at once (no task); while a change
    holds the race (its events not stored yet) the batch waits for it, so nothing the
    change did reaches anyone before the store has it."""
    async with running_hub(progress_interval_s=0.01) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        keeper = hub.keeper

        def progress_seen() -> list[int]:
            return [
                m.progress.moves for m in bob.sent if isinstance(m, Progress) and m.progress.moves
            ]

        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        await eventually(lambda: progress_seen() == [1], what="the first batch")
        assert not keeper.progress._folds, "folded by a task"

        async with runtime.lock:  # a change under way
            await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
            await eventually(lambda: bool(keeper.progress._folds), what="the batch's fold, waiting")
            assert progress_seen() == [1]
            assert runtime.race.racers[alice.player_id or PlayerId("")].moves == 1
        await eventually(lambda: progress_seen() == [1, 2], what="the batch, once free")


async def test_the_node_s_races_wait_for_their_folds_in_one_queue() -> None:
    """Each race's batch is folded `progress_interval_s` after its first move, from one queue
    under one timer of the loop; a race the node forgets meanwhile is passed over."""
    # Long enough that no batch is due before the four moves are in, however busy the machine.
    async with running_hub(progress_interval_s=0.5) as hub:
        races: list[tuple[RaceId, RecordingSession, RecordingSession]] = []
        for n in range(3):
            alice, bob = RecordingSession(2 * n + 1), RecordingSession(2 * n + 2)
            await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name=f"alice{n}"))
            await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name=f"bob{n}"))
            await hub.handle(
                alice, CreateRace(game="klondike", seats=2, time_limit_s=600, game_number="1002")
            )
            (race_id,) = set(hub.races) - {r for r, _, _ in races}
            await hub.handle(bob, JoinRace(race_id=race_id))
            races.append((race_id, alice, bob))
        await hub.tick()
        runtimes = [hub.races[race_id] for race_id, _, _ in races]
        progress = hub.keeper.progress
        for race_id, alice, _ in races:
            await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        await hub.handle(races[0][1], MakeMove(race_id=races[0][0], seq=1, move="deal"))
        queued = [q.runtime for q in progress._queue]
        assert queued == runtimes, "one entry per race, in the order of their first moves"
        assert progress._queue_timer is not None
        dues = [r.fold_due.when() for r in runtimes if r.fold_due is not None]
        assert dues == sorted(dues) and len(dues) == 3
        progress.disarm(runtimes[1])  # forgotten: its entry stays, passed over

        def seen(bob: RecordingSession) -> list[int]:
            return [
                m.progress.moves for m in bob.sent if isinstance(m, Progress) and m.progress.moves
            ]

        await eventually(
            lambda: seen(races[0][2]) == [2] and seen(races[2][2]) == [1],
            what="the first and third races' batches",
        )
        await eventually(lambda: not progress._queue, what="the queue emptied")
        assert progress._queue_timer is None
        assert seen(races[1][2]) == [] and runtimes[1].pending, "the forgotten race folded"
