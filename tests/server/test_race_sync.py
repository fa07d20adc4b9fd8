"""Race changes when the store refuses them (server/race_sync.py, hub_moves.py): a change takes
the waiting progress batch in once, and a stuck or won board whose change fails is stored by
the tick once the store is back. Also following and forgetting races, held deals, and the
finish hooks a finished race goes to. The batches themselves: test_race_progress.py."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

import pytest

from solrace.server.broker import BrokerUnavailableError, MemoryBroker
from solrace.server.hub import Hub, wall_clock_ms
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    Error,
    Hello,
    JoinRace,
    LeaveRace,
    MakeMove,
    MoveAck,
    Progress,
    RaceSnapshot,
    RaceUpdate,
    Resign,
    Watch,
)
from solrace.server.protocol.records import MoveRecord, RaceRecord, RacerState, RaceStatus
from solrace.server.protocol.tournament_messages import tournament_race_id
from solrace.server.race_relay import RaceNotice, race_channel
from solrace.server.race_setup import new_race_record
from solrace.server.store import StoreUnavailableError
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    create,
    opened,
    running_hub,
    start_race_of_two,
)
from tests.waiting import eventually


async def test_a_stuck_board_the_store_refused_is_stored_by_the_tick() -> None:
    store = HeldSaves()
    async with opened(store), running_hub(store) as hub:
        race_id, cat, dan = await start_race_of_two(
            hub, game="vegas-klondike", game_number="10", time_limit_s=600
        )
        runtime = hub.races[race_id]
        player = cat.player_id or PlayerId("")
        for seq in range(22):
            await hub.handle(cat, MakeMove(race_id=race_id, seq=seq, move="deal"))
        store.failing = True
        await hub.handle(cat, MakeMove(race_id=race_id, seq=22, move="deal"))  # stuck now
        ack = cat.sent[-1]
        assert isinstance(ack, MoveAck) and ack.stuck, "acknowledged: the move itself is stored"
        assert runtime.race.racers[player].state is RacerState.PLAYING
        await hub.tick()  # the store is still away: nothing changes, nothing is lost
        assert runtime.race.racers[player].state is RacerState.PLAYING

        store.failing = False
        await hub.tick()
        assert runtime.race.racers[player].state is RacerState.STUCK
        assert runtime.race.racers[player].moves == 23
        # The refused change was rolled back under a new epoch: the opponent gets a snapshot.
        snapshot = dan.sent[-1]
        assert isinstance(snapshot, RaceSnapshot)
        assert {p.player_id: p.state for p in snapshot.progress}[player] == "stuck"


async def test_several_nodes_get_the_move_behind_a_stuck_board_settled_by_the_tick() -> None:
    store, broker = HeldSaves(), MemoryBroker()
    async with opened(store), running_hub(store, broker=broker) as hub:
        race_id, cat, _ = await start_race_of_two(
            hub, game="vegas-klondike", game_number="10", time_limit_s=600
        )
        for seq in range(22):
            await hub.handle(cat, MakeMove(race_id=race_id, seq=seq, move="deal"))
        store.failing = True
        await hub.handle(cat, MakeMove(race_id=race_id, seq=22, move="deal"))  # stuck, not stored
        other_node = await broker.subscribe(race_channel(race_id))  # what another node reads
        store.failing = False
        await hub.tick()
        notices: list[RaceNotice] = []
        while not any(m.ply == 22 for n in notices for m in n.moves):
            item = await asyncio.wait_for(anext(other_node), 5)
            assert item is not None
            notices.append(RaceNotice.model_validate_json(item))
        assert (
            hub.races[race_id].race.racers[cat.player_id or PlayerId("")].state is RacerState.STUCK
        )
        await other_node.close()


@pytest.mark.parametrize("nodes", [1, 2])
async def test_a_refused_request_folds_the_waiting_batch_once(nodes: int) -> None:
    """A change folds in the waiting progress batch first. A refused one (a join to a
    running race) took the batch along: the race kept its progress event in memory, never
    stored nor sent, and the batch, put back, was folded again into a second event with the
    same figures. Now the batch is a change of its own: one event, sent, whatever the
    request's answer."""
    store = MemoryStore()
    broker = MemoryBroker() if nodes == 2 else None
    async with opened(store), running_hub(store, broker=broker, progress_interval_s=600) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        player = alice.player_id or PlayerId("")
        bob.sent.clear()
        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        assert runtime.pending == {player}
        carol = RecordingSession(3)
        await hub.handle(carol, Hello(protocol=PROTOCOL_VERSION, name="carol"))
        await hub.handle(carol, JoinRace(race_id=race_id))
        (refusal,) = [m for m in carol.sent if isinstance(m, Error)]
        assert refusal.code == "wrong_status"
        # The batch went in all the same, at once (several nodes: it went with the refused
        # change, was rolled back, then stored on its own; put back for a later try, a request
        # refused every second held it back for good).
        assert not runtime.pending
        await hub.keeper.progress.fold(runtime)
        told = [m for m in bob.sent if isinstance(m, Progress) and m.progress.player_id == player]
        assert [m.progress.moves for m in told] == [1]
        if nodes == 2:  # every change in memory is stored
            assert runtime.race.to_record() == await store.get_race(race_id)


async def test_a_node_keeps_following_a_race_after_a_notice_it_cannot_read() -> None:
    """A notice that does not parse is a gap (the node reloads from the store), not the end
    of following; a field a newer node adds is ignored."""
    store, broker = MemoryStore(), MemoryBroker()
    async with (
        opened(store),
        running_hub(store, broker=broker, progress_interval_s=600) as node_a,
        running_hub(store, broker=broker, progress_interval_s=600) as node_b,
    ):
        race_id, alice, _ = await start_race_of_two(node_a)
        copy = await node_b.keeper.load_race(race_id)
        assert copy is not None and copy.follower is not None
        channel = race_channel(race_id)
        await broker.publish(channel, b"not a notice")
        race = node_a.races[race_id].race
        newer = {"epoch": race.epoch, "version": race.version, "moves": [], "added_later": 1}
        await broker.publish(channel, json.dumps(newer).encode())

        await node_a.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        # Stored and published: a notice with the move.
        await node_a.keeper.progress.fold(node_a.races[race_id])
        player = alice.player_id or PlayerId("")
        await eventually(
            lambda: copy.race.racers[player].moves == 1, within=5, what="node B following"
        )
        assert copy.follower is not None and not copy.follower.done()
        assert copy.boards[player].game.ply == 1


class SilentBroker(MemoryBroker):
    """A broker whose publishes fail while `away` is set."""

    away = False

    async def publish(self, channel: str, data: bytes) -> None:
        if self.away:
            raise BrokerUnavailableError("the broker is away")
        await super().publish(channel, data)


async def test_notices_the_broker_refuses_are_said_once_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A line per refused notice (one per race change while Redis was away) became one when
    publishing starts failing and one when it works again."""
    broker = SilentBroker()
    async with opened(MemoryStore()) as store, running_hub(store, broker=broker) as hub:
        race_id, alice, _ = await start_race_of_two(
            hub, game="klondike", game_number="1002", time_limit_s=600
        )
        runtime = hub.races[race_id]
        broker.away = True
        for seq in range(3):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
            await hub.keeper.progress.fold(runtime)  # a race change: its notice is refused
        broker.away = False
        await hub.handle(alice, MakeMove(race_id=race_id, seq=3, move="deal"))
        await hub.keeper.progress.fold(runtime)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [line.split(":")[0] for line in said] == [
        "publishing race notices failed",
        "publishing race notices works again after 3 failure(s)",
    ], said


async def test_progress_left_behind_the_moves_is_stored_by_the_tick_if_refused_at_first() -> None:
    """Several nodes: a node died after storing a move and before folding its progress in; a
    node that takes the race over stores the progress (`catch_up_progress`). A store that
    refused it then left the record behind until the racer moved again: now the tick stores
    it once the store is back."""
    store, broker = HeldSaves(), MemoryBroker()
    async with opened(store), running_hub(store, broker=broker, progress_interval_s=600) as hub:
        race_id, cat, _ = await start_race_of_two(hub, game_number="10")
        player = cat.player_id or PlayerId("")
        runtime = hub.races[race_id]
        # The dead node's move: stored, never folded into the race.
        await store.append_move(
            MoveRecord(race_id=race_id, player_id=player, ply=0, seq=0, move="deal", at_ms=1)
        )
        await hub.keeper.refresh(runtime, reload_boards=True)
        assert runtime.boards[player].game.ply == 1
        store.failing = True
        await hub.keeper.catch_up_progress(runtime)  # refused: not raised
        stored = await store.get_race(race_id)
        assert stored is not None
        assert {r.player_id: r.moves for r in stored.racers}[player] == 0
        store.failing = False
        await hub.tick()
        stored = await store.get_race(race_id)
        assert stored is not None
        assert {r.player_id: r.moves for r in stored.racers}[player] == 1


async def test_timers_the_store_refuses_are_said_once_per_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A race's time-out while the store is away waits (nothing changes), said once however
    many ticks try it, then once more when the time-out is stored."""
    now = [1_700_000_000_000]
    store = HeldSaves()
    async with opened(store), running_hub(store, clock=lambda: now[0]) as hub:
        race_id, _, _ = await start_race_of_two(hub, time_limit_s=60)
        caplog.clear()
        now[0] += 61_000
        store.failing = True
        for _ in range(3):
            await hub.tick()
        assert hub.races[race_id].race.is_live
        store.failing = False
        await hub.tick()
        assert not hub.races[race_id].race.is_live
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [line.split(":")[0] for line in said] == [
        "applying race timers (starts, time-outs, forfeits) failed",
        "applying race timers (starts, time-outs, forfeits) works again after 3 failure(s)",
    ], said


async def test_a_cancelled_race_leaves_nothing_behind_in_the_sessions() -> None:
    """A cancelled race was only taken out of the node's races: its spectators' and racers'
    sessions kept its version and their watching of it (for as long as they were open)."""
    async with running_hub(countdown_s=3.0) as hub:
        alice, bob = RecordingSession(1), RecordingSession(2)
        await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
        await hub.handle(alice, create())
        (race_id,) = hub.races
        await hub.handle(bob, Watch(race_id=race_id))
        assert race_id in bob.watching and race_id in alice.versions
        await hub.handle(alice, LeaveRace(race_id=race_id))  # the creator alone: cancelled
        assert any(isinstance(m, RaceUpdate) and m.race.status == "cancelled" for m in bob.sent)
        assert race_id not in hub.races
        for session in (alice, bob):
            assert race_id not in session.versions and race_id not in session.watching


class MovesAway(MemoryStore):
    """A memory store whose moves cannot be read while `away` is set."""

    away = False

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        if self.away:
            raise StoreUnavailableError("the moves are away")
        return await super().get_moves(race_id)


async def test_a_race_that_cannot_be_recovered_leaves_no_subscription() -> None:
    """Several nodes: recovering a race subscribes to its notices, then reads its moves; a
    read that failed left the subscription open for good."""
    store, broker = MovesAway(), MemoryBroker()
    async with opened(store), running_hub(store, broker=broker, progress_interval_s=600) as first:
        race_id, _, _ = await start_race_of_two(first)
        channel = race_channel(race_id)
        following = len(broker.subscriptions[channel])  # the first node's
        async with running_hub(store, broker=broker, progress_interval_s=600) as second:
            store.away = True
            with pytest.raises(StoreUnavailableError):
                await second.keeper.recover()
            assert len(broker.subscriptions[channel]) == following
            store.away = False
            await second.keeper.recover()
            assert race_id in second.races
            assert len(broker.subscriptions[channel]) == following + 1


class CountedSaves(MemoryStore):
    """A memory store that counts the race saves (compare-and-set) made on it."""

    saves = 0

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        self.saves += 1
        return await super().save_race_if(race, expected)


async def test_several_nodes_store_a_change_with_the_batch_before_it_in_one_save() -> None:
    """The batch waiting when a change comes goes with it in one compare-and-set (and one
    notice): storing it first, on its own, doubled the store's and broker's work of every
    finish, resign, join or connection change."""
    store = CountedSaves()
    async with (
        opened(store),
        running_hub(store, broker=MemoryBroker(), progress_interval_s=600) as hub,
    ):
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move="deal"))
        assert runtime.pending
        before = store.saves
        await hub.handle(bob, Resign(race_id=race_id))
        assert store.saves - before == 1
        stored = await store.get_race(race_id)
        assert stored is not None
        player = alice.player_id or PlayerId("")
        assert [r.moves for r in stored.racers if r.player_id == player] == [1]


async def test_a_finished_race_whose_deal_is_held_stays_until_it_is_released() -> None:
    """Its spectators get the final boards when its round ends: a match that ended more than
    `finished_kept_s` before its round's last one was dropped first, boards never shown."""
    async with running_hub(progress_interval_s=600) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        runtime.race.record = runtime.race.record.model_copy(update={"deal_held": True})
        fan = RecordingSession(3)
        await hub.handle(fan, Hello(protocol=PROTOCOL_VERSION))
        await hub.handle(fan, Watch(race_id=race_id))
        for racer in (alice, bob):
            await hub.handle(racer, Resign(race_id=race_id))
        assert not runtime.race.is_live
        much_later = wall_clock_ms() + 10 * int(hub.settings.finished_kept_s * 1000)
        hub.keeper._forget_finished(much_later)
        assert race_id in hub.races  # watched: kept for the final boards
        hub.keeper.release_deal(race_id)
        assert any(isinstance(m, Board) and m.race_id == race_id for m in fan.sent)
        hub.keeper._forget_finished(much_later)
        assert race_id not in hub.races


async def test_spectators_get_the_final_boards_when_another_node_released_the_deal() -> None:
    """Several nodes: the node that ends a tournament round releases the deals in the store
    and its own copies; this node hears that a tournament changed (`take_releases`) and its
    spectators get the final boards then (they got them only by watching again)."""
    store = MemoryStore()
    async with opened(store), running_hub(store, broker=MemoryBroker()) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        held = runtime.race.record.model_copy(update={"deal_held": True})
        runtime.race.record = held
        assert await store.save_race_if(held, runtime.saved)
        runtime.saved = held
        fan = RecordingSession(3)
        await hub.handle(fan, Hello(protocol=PROTOCOL_VERSION))
        await hub.handle(fan, Watch(race_id=race_id))
        for racer in (alice, bob):
            await hub.handle(racer, Resign(race_id=race_id))
        assert not runtime.race.is_live

        def boards() -> list[Board]:
            return [m for m in fan.sent if isinstance(m, Board) and m.race_id == race_id]

        await hub.keeper.take_releases()
        assert boards() == []  # still held in the store
        stored = await store.get_race(race_id)
        assert stored is not None
        assert await store.save_race_if(stored.model_copy(update={"deal_held": False}), stored)
        await hub.keeper.take_releases()
        assert {b.player_id for b in boards()} == {alice.player_id, bob.player_id}
        assert not runtime.race.record.deal_held


class ReadsTogether(MemoryStore):
    """The memory store whose reads of the races in `together` each wait until every one of
    them is being read: reads made one after another never get past the first. `reads`
    lists the races read."""

    def __init__(self) -> None:
        super().__init__()
        self.together: set[RaceId] = set()
        self.reading: set[RaceId] = set()
        self.all_reading = asyncio.Event()
        self.reads: list[RaceId] = []

    async def get_race(self, race_id: RaceId) -> RaceRecord | None:
        self.reads.append(race_id)
        if race_id in self.together:
            self.reading.add(race_id)
            if self.reading == self.together:
                self.all_reading.set()
            await self.all_reading.wait()
        return await super().get_race(race_id)


async def finish_held_race(hub: Hub, race_id: RaceId, racers: list[RecordingSession]) -> None:
    """A tournament race whose deal is held, `racers` seated (said hello), started and
    resigned: finished."""
    seated = [(s.player_id or PlayerId(""), f"p{s.session_id}") for s in racers]
    record = new_race_record(
        hub.settings,
        race_id,
        game="klondike",
        game_number="1002",
        seats=len(racers),
        time_limit_s=600,
        rated=False,
        invite_code=f"code-{race_id}",
        creator=seated[0][0],
        now_ms=hub.clock(),
        deal_held=True,
    )
    await hub.open_seated_race(record, seated)
    await hub.tick()  # no countdown: it starts
    for racer in racers:
        await hub.handle(racer, Resign(race_id=race_id))
    assert hub.races[race_id].race.status is RaceStatus.FINISHED


async def test_a_tournament_change_reads_that_tournament_s_held_races_together() -> None:
    """Another node changed a tournament (`take_releases(tid)`): the held races of that
    tournament watched here are read from the store at once, not one after another (a round
    of a big tournament has many), and no other tournament's; their spectators get the final
    boards. A gap (None: changes may have been missed) reads every one."""
    store = ReadsTogether()
    async with opened(store), running_hub(store, broker=MemoryBroker()) as hub:
        alice, bob, fan = RecordingSession(1), RecordingSession(2), RecordingSession(3)
        for session, name in ((alice, "alice"), (bob, "bob"), (fan, None)):
            await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
        ours = [tournament_race_id("tabc123", n) for n in (1, 2)]
        other = tournament_race_id("tdef456", 1)
        for race_id in (*ours, other):
            await finish_held_race(hub, race_id, [alice, bob])
            await hub.handle(fan, Watch(race_id=race_id))
            held = await store.get_race(race_id)
            assert held is not None and held.deal_held
            released = held.model_copy(update={"deal_held": False})
            assert await store.save_race_if(released, held)  # as the node ending the round
        assert not [m for m in fan.sent if isinstance(m, Board)]

        def boarded() -> set[RaceId]:
            return {m.race_id for m in fan.sent if isinstance(m, Board)}

        store.reads.clear()
        store.together = set(ours)
        await asyncio.wait_for(hub.keeper.take_releases("tabc123"), 5.0)
        assert sorted(store.reads) == sorted(ours)
        assert boarded() == set(ours)
        assert hub.races[other].race.record.deal_held

        store.reads.clear()
        await asyncio.wait_for(hub.keeper.take_releases(None), 5.0)
        assert store.reads == [other]
        assert boarded() == {*ours, other}


async def test_a_finished_race_whose_deal_is_held_and_nobody_watches_goes_as_any_other() -> None:
    """Kept for good otherwise, on a node that never hears of the release (several nodes)
    or with a round that never ends."""
    async with running_hub(progress_interval_s=600) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        runtime.race.record = runtime.race.record.model_copy(update={"deal_held": True})
        for racer in (alice, bob):
            await hub.handle(racer, Resign(race_id=race_id))
        hub.keeper._forget_finished(wall_clock_ms() + 10 * int(hub.settings.finished_kept_s * 1000))
        assert race_id not in hub.races


async def test_finish_hooks_run_in_order_and_a_removed_one_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A race this node finishes goes to the hooks in the order they were added, a failing
    one logged and the next still called; a hook removed is not called, and removing one
    that is not there is refused."""
    calls: list[tuple[str, RaceId]] = []

    def hook(name: str, *, fails: bool = False) -> Callable[[RaceRecord], Awaitable[None]]:
        async def finished(record: RaceRecord) -> None:
            calls.append((name, record.race_id))
            if fails:
                raise RuntimeError(f"{name} failed")

        return finished

    removed = hook("removed")
    async with running_hub() as hub:
        for each in (hook("first"), hook("failing", fails=True), removed, hook("last")):
            hub.keeper.add_finish_hook(each)
        hub.keeper.remove_finish_hook(removed)
        with pytest.raises(ValueError):
            hub.keeper.remove_finish_hook(removed)
        race_id, alice, bob = await start_race_of_two(hub)
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
    assert calls == [("first", race_id), ("failing", race_id), ("last", race_id)]
    assert f"race {race_id}: a finish hook failed" in caplog.text
