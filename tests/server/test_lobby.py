"""The lobby: the feed's bookkeeping (each follower is sent a list it has not had, once), the
list's size limit, and the open races a player or the server may have."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from solrace.server.hub import Hub
from solrace.server.lobby import LobbyFeed, race_list
from solrace.server.protocol.codec import encode
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Error,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    RaceInfo,
    RaceList,
    Resign,
    StartRace,
)
from solrace.server.protocol.records import RaceStatus
from solrace.server.store import MemoryStore
from tests.server.sessions import HeldSaves, RecordingSession, opened, running_hub


def info(race_id: str, status: str = "open") -> RaceInfo:
    return RaceInfo.model_validate(
        {
            "race_id": race_id,
            "game": "klondike",
            "status": status,
            "seats": 2,
            "time_limit_s": 60,
            "rated": False,
            "private": False,
            "creator": "p1",
            "created_at_ms": 0,
            "racers": [],
            "start_at_ms": None,
            "ends_at_ms": None,
            "spectator_delay_ms": 0,
            "grace_ms": 60_000,
        }
    )


async def test_a_follower_gets_a_change_another_follower_already_has() -> None:
    current = RaceList(races=[])

    async def list_races() -> RaceList:
        return current

    feed = LobbyFeed(list_races, interval_s=600, poll_s=None)
    early, late, gone = RecordingSession(1), RecordingSession(2), RecordingSession(3)
    feed.follow(early, RaceList(races=[]))
    feed.follow(gone, RaceList(races=[]))
    current = RaceList(races=[info("r1")])  # a race opens; before the push, another follows
    feed.changed()
    feed.follow(late, current)
    gone.closed = True
    await feed.push()
    assert early.sent == [current]
    assert late.sent == []  # it was sent this list when it asked
    assert gone not in feed.followers
    await feed.push()  # nothing changed since
    assert len(early.sent) == 1
    feed.unfollow(early)
    current = RaceList(races=[info("r1"), info("r2")])
    feed.changed()
    await feed.push()
    assert len(early.sent) == 1 and late.sent == [current]
    await feed.stop()


async def test_the_list_is_built_again_only_after_a_change() -> None:
    built: list[RaceList] = []

    async def list_races() -> RaceList:
        built.append(RaceList(races=[info(f"r{len(built)}")]))
        return built[-1]

    alone = LobbyFeed(list_races, interval_s=600, poll_s=None)  # one node
    first, frame = await alone.current()
    assert await alone.current() == (first, frame) and len(built) == 1
    assert frame == encode(first)
    alone.changed()
    assert (await alone.current())[0] == built[1] != first
    cluster = LobbyFeed(list_races, interval_s=0.0, poll_s=2.0)  # other nodes change it too
    await cluster.current()
    await cluster.current()  # older than `interval_s` (0 s): read again
    assert len(built) == 4


def test_a_long_list_keeps_the_open_races_and_counts_the_rest() -> None:
    infos = [info("a", "running"), info("b"), info("c", "countdown"), info("d"), info("e")]
    assert race_list(infos, limit=5) == RaceList(races=infos)
    short = race_list(infos, limit=4)
    assert [i.race_id for i in short.races] == ["a", "b", "d", "e"] and short.more == 1
    shorter = race_list(infos, limit=2)
    assert [i.race_id for i in shorter.races] == ["b", "d"] and shorter.more == 3


@contextlib.asynccontextmanager
async def ann_and_bob(
    store: MemoryStore | None = None, **settings: Any
) -> AsyncIterator[tuple[Hub, RecordingSession, RecordingSession]]:
    """A hub on a memory store (opened and closed here) with these settings, and ann and bob
    said hello."""
    async with (
        opened(store or MemoryStore()) as memory,
        running_hub(memory, **{"countdown_s": 3.0, **settings}) as hub,
    ):
        ann, bob = RecordingSession(1), RecordingSession(2)
        for session, name in ((ann, "ann"), (bob, "bob")):
            await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
        yield hub, ann, bob


def create(seats: int = 2) -> CreateRace:
    return CreateRace(game="klondike", seats=seats, time_limit_s=60)


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


async def test_a_list_read_during_a_change_that_fails_is_not_kept() -> None:
    """The list read while a join waits for its save shows bob; the save fails and the join
    is undone: the lists after it do not show him."""
    store = HeldSaves()
    async with ann_and_bob(store) as (hub, ann, bob):
        carol = RecordingSession(3)
        await hub.handle(carol, Hello(protocol=PROTOCOL_VERSION, name="carol"))
        await hub.handle(ann, create(seats=3))
        (race_id,) = hub.races
        store.holding = store.failing = True
        join = asyncio.create_task(hub.handle(bob, JoinRace(race_id=race_id)))
        await store.held.wait()
        await hub.handle(carol, ListRaces())
        store.release.set()
        await join
        refused = bob.sent[-1]
        assert isinstance(refused, Error) and refused.code == "unavailable"
        store.failing = False
        await hub.handle(carol, ListRaces())
        lists = [m for m in carol.sent if isinstance(m, RaceList)]
        assert [r.name for r in lists[0].races[0].racers] == ["ann", "bob"]  # mid-save
        assert [r.name for r in lists[-1].races[0].racers] == ["ann"]
