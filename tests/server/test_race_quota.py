"""Race quotas (server/race_quota.py): the open and live races a player, or the server, may
have, checked by the hub's `create_race` and `join_race`."""

from __future__ import annotations

import asyncio

from solrace.server.protocol.messages import Error, JoinRace, LeaveRace, Resign, StartRace
from solrace.server.protocol.records import RaceStatus
from tests.server.sessions import HeldSaves, ann_and_bob, create


async def test_open_races_are_limited_per_player_and_per_server() -> None:
    async with ann_and_bob(max_open_races_per_player=2, max_open_races=3) as (hub, ann, bob):
        for _ in range(2):
            await hub.handle(ann, create())
        await hub.handle(ann, create())
        refused = ann.sent[-1]
        assert isinstance(refused, Error) and refused.code == "not_allowed"
        assert "2 open races already" in refused.message and len(hub.races) == 2

        await hub.handle(bob, create())  # the server's third
        await hub.handle(bob, create())
        full = bob.sent[-1]
        assert isinstance(full, Error) and "lobby is full" in full.message
        assert len(hub.races) == 3

        first = next(iter(hub.races))
        await hub.handle(ann, LeaveRace(race_id=first))  # her race is cancelled: room again
        assert first not in hub.races
        await hub.handle(ann, create())
        assert not isinstance(ann.sent[-1], Error) and len(hub.races) == 3


async def test_running_races_are_limited_per_player_and_per_server() -> None:
    """A casual race its creator starts alone leaves the open-race counts: without a limit on
    live races one player kept thousands running (each ~25 KB, looked at every tick)."""
    async with ann_and_bob(max_live_races_per_player=2, max_live_races=3, countdown_s=0.0) as (
        hub,
        ann,
        bob,
    ):
        for _ in range(2):
            known = set(hub.races)
            await hub.handle(ann, create())
            (race_id,) = set(hub.races) - known
            await hub.handle(ann, StartRace(race_id=race_id))  # alone: running, not open
        await hub.tick()
        assert all(rt.race.status is RaceStatus.RUNNING for rt in hub.races.values())
        await hub.handle(ann, create())
        refused = ann.sent[-1]
        assert isinstance(refused, Error) and refused.code == "not_allowed"
        assert "2 live races already" in refused.message and len(hub.races) == 2

        await hub.handle(bob, create())  # the server's third
        await hub.handle(bob, create())
        full = bob.sent[-1]
        assert isinstance(full, Error) and "the server is full" in full.message
        assert len(hub.races) == 3
        # ann may not take a seat in bob's either: she races in two already.
        bobs = next(r for r in hub.races if hub.races[r].race.creator == bob.player_id)
        await hub.handle(ann, JoinRace(race_id=bobs))
        assert isinstance(ann.sent[-1], Error) and "2 live races" in ann.sent[-1].message

        mine = next(r for r in hub.races if hub.races[r].race.creator == ann.player_id)
        await hub.handle(ann, Resign(race_id=mine))  # out of one: room for one more
        await hub.handle(ann, JoinRace(race_id=bobs))
        assert ann.player_id in hub.races[bobs].race.racers


async def test_a_player_counts_the_races_they_created_and_not_the_ones_left_to_them() -> None:
    async with ann_and_bob(max_open_races_per_player=1) as (hub, ann, bob):
        await hub.handle(ann, create(seats=3))
        (first,) = hub.races
        await hub.handle(bob, JoinRace(race_id=first))
        await hub.handle(ann, LeaveRace(race_id=first))  # bob is its creator now
        assert hub.races[first].race.creator == bob.player_id
        await hub.handle(ann, create(seats=3))
        refused = ann.sent[-1]
        assert isinstance(refused, Error) and "1 open races already" in refused.message
        await hub.handle(bob, create(seats=3))
        assert not isinstance(bob.sent[-1], Error), "bob created none"


async def test_open_races_nobody_is_connected_to_leave_room_for_others() -> None:
    async with ann_and_bob(max_open_races=1) as (hub, ann, bob):
        await hub.handle(ann, create())
        await hub.handle(bob, create())
        assert isinstance(bob.sent[-1], Error) and "lobby is full" in bob.sent[-1].message
        await hub.disconnected(ann)  # ann went away: her race waits out the grace, unheld
        await hub.handle(bob, create())
        assert not isinstance(bob.sent[-1], Error)


async def test_races_still_being_stored_count_as_open() -> None:
    store = HeldSaves()
    async with ann_and_bob(store, max_open_races=1) as (hub, ann, bob):
        store.holding = True
        creating = asyncio.create_task(hub.handle(ann, create()))
        await asyncio.wait_for(store.held.wait(), 5)  # ann's create is past the check
        await hub.handle(bob, create())
        assert isinstance(bob.sent[-1], Error) and "lobby is full" in bob.sent[-1].message
        store.release.set()
        await creating
        assert len(hub.races) == 1


async def test_a_create_that_fails_gives_its_slot_back() -> None:
    store = HeldSaves()
    async with ann_and_bob(store, max_open_races=1, max_open_races_per_player=1) as (
        hub,
        ann,
        _bob,
    ):
        store.failing = True
        await hub.handle(ann, create())
        assert isinstance(ann.sent[-1], Error) and ann.sent[-1].code == "unavailable"
        store.failing = False
        await hub.handle(ann, create())
        assert not isinstance(ann.sent[-1], Error) and len(hub.races) == 1
