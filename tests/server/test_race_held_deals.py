"""The deals held for a tournament round (server/race_held_deals.py): a finished race whose
deal is held stays in memory while watched, and its spectators get the final boards once the
deal is released, on this node or (several nodes) on another one."""

from __future__ import annotations

import asyncio

from solrace.server.broker import MemoryBroker
from solrace.server.hub import Hub, wall_clock_ms
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Board, Hello, Resign, Watch
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.protocol.tournament_messages import tournament_race_id
from solrace.server.race_setup import new_race_record
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import RecordingSession, opened, running_hub, start_race_of_two


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
