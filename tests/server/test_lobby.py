"""The lobby: the feed's bookkeeping (each follower is sent a list it has not had, once), the
list's size limit, and a list read during a change that fails."""

from __future__ import annotations

import asyncio

from solrace.server.lobby import LobbyFeed, race_list
from solrace.server.protocol.codec import encode
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    JoinRace,
    ListRaces,
    RaceInfo,
    RaceList,
)
from tests.server.sessions import HeldSaves, RecordingSession, ann_and_bob, create


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


async def test_requests_that_find_the_list_stale_share_the_next_build() -> None:
    """A client that changes a race and lists, from many connections at once, had the node
    build the list for every request (a fuzzing audit: 60 connections pinned the node's CPU
    at 900 races). Requests within `REBUILD_EVERY_S` of a build wait for the next one, built
    once for all of them, with every change made before each request."""
    built: list[RaceList] = []
    changes = [0]

    async def list_races() -> RaceList:
        built.append(RaceList(races=[info(f"r{changes[0]}")]))
        return built[-1]

    feed = LobbyFeed(list_races, interval_s=600, poll_s=None)
    await feed.current()

    async def change_and_list() -> RaceList:
        changes[0] += 1
        feed.changed()
        return (await feed.current())[0]

    answers = await asyncio.gather(*(change_and_list() for _ in range(20)))
    assert len(built) == 2  # the first, then one for the twenty
    assert all(answer.races[0].race_id == "r20" for answer in answers)


def test_a_long_list_keeps_the_open_races_and_counts_the_rest() -> None:
    infos = [info("a", "running"), info("b"), info("c", "countdown"), info("d"), info("e")]
    assert race_list(infos, limit=5) == RaceList(races=infos)
    short = race_list(infos, limit=4)
    assert [i.race_id for i in short.races] == ["a", "b", "d", "e"] and short.more == 1
    shorter = race_list(infos, limit=2)
    assert [i.race_id for i in shorter.races] == ["b", "d"] and shorter.more == 3


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
