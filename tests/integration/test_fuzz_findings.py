"""What the protocol fuzzer (`bench/fuzz.py`) found, each kept as a test of its own: real
servers on loopback and real clients, the order of events made certain by holding the server
at the await where the fuzzer's timing caught it."""

from __future__ import annotations

import asyncio
import logging

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Hello,
    JoinRace,
    LeaveRace,
    RaceSnapshot,
    RaceUpdate,
    Sync,
    Welcome,
)
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import create_race
from tests.integration.wsclient import WAIT_S


async def test_a_hello_is_welcomed_when_its_player_left_a_race_while_it_was_answered(
    server: App, client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A hello reads the player's live races, then its ratings (an await on the store); a race
    the player leaves meanwhile, on its other connection, no longer has it as a racer. The
    hello is welcomed all the same, without that race, and nothing is logged as failing."""
    bob, alice = await client("bob"), await client("alice")
    race_id = await create_race(bob, seats=3)  # open after alice joins
    await alice.send(JoinRace(race_id=race_id))
    await alice.expect(RaceUpdate, lambda m: len(m.race.racers) == 2)

    hello = server.hub.hello
    reading, release = asyncio.Event(), asyncio.Event()
    ratings_of = hello.ratings_of
    assert ratings_of is not None

    async def held(player_id: PlayerId) -> dict[str, float]:
        reading.set()
        await release.wait()
        return await ratings_of(player_id)

    hello.ratings_of = held
    again = await client()
    assert alice.welcome is not None
    await again.send(Hello(protocol=PROTOCOL_VERSION, token=alice.welcome.token))
    async with asyncio.timeout(WAIT_S):
        await reading.wait()
    await alice.send(LeaveRace(race_id=race_id))
    await alice.expect(RaceUpdate, lambda m: len(m.race.racers) == 1)
    hello.ratings_of = ratings_of
    release.set()

    welcome = await again.expect(Welcome)
    assert welcome.player_id == alice.player_id
    assert welcome.active_races == []
    assert await alice.closed() == CloseCode.REPLACED
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert again.reader.done() is False


async def test_a_racer_who_left_an_open_race_is_never_sent_its_events_again(
    client: ClientFactory,
) -> None:
    """A connection gets each race's events in rising versions, never one it had: after
    leaving a race that goes on, a `sync` from an earlier version than the ones it had (a
    client's mistake, or a stale mark) is answered with a snapshot, not the events again."""
    bob, alice = await client("bob"), await client("alice")
    race_id = await create_race(bob, seats=3)
    await alice.send(JoinRace(race_id=race_id))
    await alice.expect(RaceUpdate, lambda m: len(m.race.racers) == 2)
    await alice.send(LeaveRace(race_id=race_id))
    left = await alice.expect(RaceUpdate, lambda m: len(m.race.racers) == 1)
    alice.drop(RaceUpdate)

    await alice.send(Sync(race_id=race_id, epoch=left.epoch, since_version=0))
    answer = await alice.expect(RaceSnapshot | RaceUpdate)  # type: ignore[arg-type]
    assert isinstance(answer, RaceSnapshot)
    assert answer.version == left.version
    updates = [m.version for m in alice.received if isinstance(m, RaceUpdate)]
    assert updates == sorted(set(updates)), f"versions went back: {updates}"


async def test_a_racer_that_leaves_on_a_new_connection_is_never_sent_the_earlier_events(
    client: ClientFactory,
) -> None:
    """A racer's new connection has had none of its open race's events (nothing happened in
    the race since its hello). Leaving there sends it the leave's event at once; a `sync` from
    version 0 then gets a snapshot, not the race's events from version 1 after the one it had."""
    bob, alice = await client("bob"), await client("alice")
    race_id = await create_race(bob, seats=3)
    await alice.send(JoinRace(race_id=race_id))
    await alice.expect(RaceUpdate, lambda m: len(m.race.racers) == 2)
    again = await client()
    assert alice.welcome is not None
    await again.send(Hello(protocol=PROTOCOL_VERSION, token=alice.welcome.token))
    await again.expect(Welcome)
    assert await alice.closed() == CloseCode.REPLACED

    await again.send(LeaveRace(race_id=race_id))
    left = await again.expect(RaceUpdate, lambda m: len(m.race.racers) == 1)
    await again.send(Sync(race_id=race_id, epoch=left.epoch, since_version=0))
    answer = await again.expect(RaceSnapshot | RaceUpdate)  # type: ignore[arg-type]
    assert isinstance(answer, RaceSnapshot)
    assert answer.version == left.version
    versions = [m.version for m in again.received if isinstance(m, RaceUpdate)]
    assert versions == sorted(set(versions)), f"versions went back: {versions}"
