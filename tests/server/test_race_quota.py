"""Race quotas (server/race_quota.py): the open and live races a player, or the server, may
have, checked by the hub's `create_race` and `join_race`."""

from __future__ import annotations

import asyncio
from typing import Literal

from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    JoinRace,
    LeaveRace,
    Resign,
    StartRace,
    Welcome,
)
from solrace.server.protocol.records import RaceStatus
from tests.server.sessions import HeldSaves, RecordingSession, ann_and_bob, create


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


class NotedLock(asyncio.Lock):
    """A lock that says (`asked`) when someone asks for it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    async def acquire(self) -> Literal[True]:
        self.asked.set()
        return await super().acquire()


async def test_joins_of_one_player_at_the_same_time_cannot_pass_the_live_quota() -> None:
    """A join's check and its seat are one step: a join of the player's on its new connection
    is refused while the last join of the connection it replaced, past its check, waits for
    its race's lock; it was let through, one race past the quota."""
    async with ann_and_bob(max_live_races_per_player=1) as (hub, ann, bob):
        cara = RecordingSession(3)
        await hub.handle(cara, Hello(protocol=PROTOCOL_VERSION, name="cara"))
        await hub.handle(bob, create())
        await hub.handle(cara, create())
        bobs, caras = (
            next(r for r in hub.races if hub.races[r].race.creator == p)
            for p in (bob.player_id, cara.player_id)
        )
        welcome = next(m for m in ann.sent if isinstance(m, Welcome))
        again = RecordingSession(4)  # ann again, on a new connection: the first is replaced
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        lock = hub.races[bobs].lock = NotedLock()
        await lock.acquire()  # another change of bob's race, under way
        first = asyncio.create_task(hub.handle(ann, JoinRace(race_id=bobs)))
        await asyncio.wait_for(lock.asked.wait(), 5)  # past its check, waiting for the lock
        await asyncio.wait_for(hub.handle(again, JoinRace(race_id=caras)), 5)
        lock.release()
        await asyncio.wait_for(first, 5)
        seats = [r for r in (bobs, caras) if ann.player_id in hub.races[r].race.racers]
        assert seats == [bobs], f"ann has seats in {seats}"
        (refused,) = (m for m in again.sent if isinstance(m, Error))
        assert "1 live races already" in refused.message
