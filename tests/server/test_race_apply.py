"""Applying a change to a race (server/race_apply.py): the race's waiting progress batch
goes in with a change, once, whatever the change's answer; several nodes store both in one
compare-and-set."""

from __future__ import annotations

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    JoinRace,
    MakeMove,
    Progress,
    Resign,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import RecordingSession, opened, running_hub, start_race_of_two


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
