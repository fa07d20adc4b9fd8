"""The race keeper (server/race_sync.py, hub_moves.py) when the store refuses a change: a stuck
or won board whose change fails is stored by the tick once the store is back, and timers the
store refuses are said once. Also following races through other nodes' notices and forgetting
races. Applying a change with its batch: test_race_apply.py; loading races:
test_race_loading.py; held deals: test_race_held_deals.py; finish hooks:
test_race_finish_hooks.py; the batches themselves: test_race_progress.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import pytest

from solrace.server.broker import BrokerUnavailableError, MemoryBroker
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    LeaveRace,
    MakeMove,
    MoveAck,
    RaceSnapshot,
    RaceUpdate,
    Resign,
    Watch,
)
from solrace.server.protocol.records import MoveRecord, RacerState
from solrace.server.race_relay import RaceNotice, race_channel
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


async def test_a_racer_gone_in_the_tick_that_starts_the_race_keeps_the_deal_s_figures() -> None:
    """colorado deals 8 of its 104 cards onto the foundations: a racer who left before the
    start and whose grace has run out by the tick that starts the race is gone with those
    figures, and ranks with them once the race is over (tied with a racer who made no move)."""
    now = [1_700_000_000_000]
    store = MemoryStore()
    async with opened(store), running_hub(store, clock=lambda: now[0], grace_s=5) as hub:
        alice, bob = RecordingSession(1), RecordingSession(2)
        await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
        await hub.handle(alice, CreateRace(game="colorado", seats=2, time_limit_s=60))
        (race_id,) = hub.races
        await hub.handle(bob, JoinRace(race_id=race_id))
        await hub.disconnected(bob)
        now[0] += 6_000  # the start and the end of Bob's grace are both due
        await hub.tick()
        await hub.handle(alice, Resign(race_id=race_id))
        record = await store.get_race(race_id)
    assert record is not None and record.results is not None
    assert [(r.state, r.on_foundations, r.total) for r in record.racers] == [
        (RacerState.RESIGNED, 8, 104),
        (RacerState.GONE, 8, 104),
    ]
    assert [(r.name, r.rank, r.on_foundations) for r in record.results] == [
        ("alice", 1, 8),
        ("bob", 1, 8),
    ]


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


async def test_a_race_whose_change_hangs_holds_up_no_other_race_s_start() -> None:
    """Found by `bench/fuzz.py --nodes 2` (seed 12, 30 clients): under load each due race's
    change took seconds (Redis round trips), the tick went through them one at a time (16 to
    25 s a tick), and an honest race, due to start at once, stayed in its countdown for over
    15 s. Here a race's change is held (its lock taken, as a slow store would keep it) while
    another race falls due to start: that start must not wait for it."""
    now = [1_700_000_000_000]
    async with running_hub(MemoryStore(), clock=lambda: now[0]) as hub:
        slow_id, _, _ = await start_race_of_two(hub, time_limit_s=60)
        carol, dave = RecordingSession(3), RecordingSession(4)
        await hub.handle(carol, Hello(protocol=PROTOCOL_VERSION, name="carol"))
        await hub.handle(dave, Hello(protocol=PROTOCOL_VERSION, name="dave"))
        await hub.handle(carol, CreateRace(game="klondike", seats=2, time_limit_s=600))
        (race_id,) = set(hub.races) - {slow_id}
        await hub.handle(dave, JoinRace(race_id=race_id))
        now[0] += 61_000  # the slow race's end and the new race's start are both due
        async with hub.races[slow_id].lock:
            ticking = asyncio.create_task(hub.tick())
            try:
                await eventually(lambda: bool(hub.races[race_id].boards), within=2.0)
            finally:
                ticking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticking
