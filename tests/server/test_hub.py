"""The hub (server/hub.py): a hello while the store is away, two connections of one player,
how long a finished race stays in memory, the lobby's list, replays and plugging services in."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.competition_records import RatingRecord
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Error,
    GetReplay,
    Hello,
    ListRaces,
    RaceList,
    RaceSnapshot,
    Replay,
    Resign,
    Sync,
    Welcome,
)
from solrace.server.protocol.records import MoveRecord, RaceRecord, RaceStatus
from solrace.server.ratings import RatingService
from solrace.server.replays import RecentFrames
from solrace.server.session import Session
from solrace.server.store import MemoryStore, StoreUnavailableError
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)
from tests.waiting import eventually

NOW_MS = 1_700_000_000_000


async def test_a_finished_race_leaves_memory_after_finished_kept_s() -> None:
    clock = [NOW_MS]
    async with running_hub(clock=lambda: clock[0], finished_kept_s=60) as hub:
        race_id, alice, bob = await start_race_of_two(hub, game_number=None)
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
        assert hub.races[race_id].race.status is RaceStatus.FINISHED

        clock[0] += 59_000
        await hub.tick()
        before = len(alice.sent)
        await hub.handle(alice, Sync(race_id=race_id))
        answers = alice.sent[before:]
        assert any(isinstance(m, RaceSnapshot) for m in answers), "kept: answered from memory"
        assert race_id in alice.versions
        clock[0] += 1_000
        await hub.tick()
        assert race_id not in hub.races
        assert all(race_id not in s.versions for s in (alice, bob)), "sessions forget it too"
        await hub.handle(alice, Sync(race_id=race_id))
        assert isinstance(alice.sent[-1], Error) and alice.sent[-1].code == "unknown_race"
        replay = await hub.store.get_race(race_id)
        assert replay is not None and replay.status is RaceStatus.FINISHED


class RatingsAway(MemoryStore):
    """The memory store, with rating reads that fail while `failing` is set."""

    failing = False

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        if self.failing:
            raise StoreUnavailableError("the store is away")
        return await super().get_ratings(player_id)


async def test_a_store_outage_in_hello_neither_loses_the_name_nor_half_identifies() -> None:
    store = RatingsAway()
    async with opened(store), running_hub(store, countdown_s=3.0) as hub:
        hub.plug_in(ratings_of=RatingService(store).display_ratings)
        store.failing = True

        # A new name needs no store read after its creation: the token always reaches it.
        first = RecordingSession(1)
        await hub.handle(first, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        (welcome,) = first.sent
        assert isinstance(welcome, Welcome) and welcome.token is not None

        # A returning player whose ratings cannot be read is told to retry, and nothing
        # changed: the same connection's next hello is answered.
        again = RecordingSession(2)
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        assert again.sent == [
            Error(
                code=ErrorCode.UNAVAILABLE.value,
                message="store unavailable; retry",
                request="hello",
                race_id=None,
            )
        ]
        assert (
            not again.said_hello and hub.players.get(welcome.player_id or PlayerId("")) is not again
        )
        store.failing = False
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        assert isinstance(again.sent[-1], Welcome) and again.sent[-1].player_id == welcome.player_id


class RacesAway(MemoryStore):
    """The memory store, with race reads that fail while `failing` is set."""

    failing = False

    async def get_race(self, race_id: RaceId) -> RaceRecord | None:
        if self.failing:
            raise StoreUnavailableError("the store is away")
        return await super().get_race(race_id)


async def test_a_refusal_and_a_store_outage_name_the_request_and_its_race() -> None:
    store = RacesAway()
    async with opened(store), running_hub(store) as hub:
        alice = RecordingSession(1)
        await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        await hub.handle(alice, Sync(race_id="rgone"))
        store.failing = True
        await hub.handle(alice, Sync(race_id="raway"))
        assert alice.sent[1:] == [
            Error(
                code=ErrorCode.UNKNOWN_RACE.value,
                message="no live race 'rgone'",
                request="sync",
                race_id=RaceId("rgone"),
            ),
            Error(
                code=ErrorCode.UNAVAILABLE.value,
                message="store unavailable",
                request="sync",
                race_id=RaceId("raway"),
            ),
        ]


class ClosingSession(RecordingSession):
    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.close_code: CloseCode | None = None

    def close(self, code: CloseCode, reason: str) -> None:
        self.close_code = code
        super().close(code, reason)


async def test_of_two_hellos_with_one_token_at_once_the_later_replaces_the_earlier() -> None:
    """Two tabs: the first hello is still marking its race (its save held by the store) when
    the second arrives. The first is closed with 4003, the second gets the race's events and
    holds the racer, and when it leaves the racer is marked away (it used to stay connected
    through the first, closed, connection, or both stayed open)."""
    store = HeldSaves()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, _bob = await start_race_of_two(hub)
        token = next(m.token for m in alice.sent if isinstance(m, Welcome))
        await hub.disconnected(alice)
        first, second = ClosingSession(11), ClosingSession(12)
        store.holding = True
        hello = Hello(protocol=PROTOCOL_VERSION, token=token)
        earlier = asyncio.create_task(hub.handle(first, hello))
        await asyncio.wait_for(store.held.wait(), 5)  # the first hello is marking its race
        later = asyncio.create_task(hub.handle(second, hello))
        # The second hello replaces the first before it waits for the race in turn.
        await eventually(lambda: first.close_code is not None, within=5, what="the first's close")
        assert first.close_code is CloseCode.REPLACED
        store.release.set()
        await asyncio.wait_for(asyncio.gather(earlier, later), 5)
        player_id = first.player_id
        assert player_id is not None and hub.players[player_id] is second
        racer = hub.races[race_id].race.racers[player_id]
        assert racer.connected and racer.holder == hub.holder_of(second)
        await hub.disconnected(first)  # the replaced one's goodbye changes nothing
        assert hub.races[race_id].race.racers[player_id].connected
        await hub.disconnected(second)
        assert not hub.races[race_id].race.racers[player_id].connected


async def test_the_lobby_says_which_races_have_a_deal_their_creator_chose() -> None:
    async with running_hub(countdown_s=3.0) as hub:
        ann, ben = RecordingSession(1), RecordingSession(2)
        await hub.handle(ann, Hello(protocol=PROTOCOL_VERSION, name="ann"))
        await hub.handle(ben, Hello(protocol=PROTOCOL_VERSION, name="ben"))
        await hub.handle(
            ann, CreateRace(game="klondike", seats=2, time_limit_s=60, game_number="7")
        )
        await hub.handle(ben, CreateRace(game="klondike", seats=2, time_limit_s=60))
        await hub.handle(ann, ListRaces())
        listed = [m for m in ann.sent if isinstance(m, RaceList)][-1]
        chosen = {info.creator: info.deal_chosen for info in listed.races}
        assert chosen == {ann.player_id: True, ben.player_id: False}


async def test_a_sync_that_waited_for_the_race_records_the_newest_connection() -> None:
    """The first tab's sync waits for the race while a second tab says hello: whichever
    change is applied last, the racer is held by the second tab, so that its close marks
    the racer away (a stale holder kept the racer 'connected' through a closed socket)."""
    async with running_hub() as hub:
        race_id, alice, _bob = await start_race_of_two(hub)
        token = next(m.token for m in alice.sent if isinstance(m, Welcome))
        player_id = alice.player_id
        assert player_id is not None
        runtime = hub.races[race_id]
        second = ClosingSession(12)
        async with runtime.lock:  # the race is busy: both requests wait for it, hello first
            hello = asyncio.create_task(
                hub.handle(second, Hello(protocol=PROTOCOL_VERSION, token=token))
            )
            await eventually(lambda: hub.claimant_of(player_id) is second, within=5, what="claim")
            sync = asyncio.create_task(hub.handle(alice, Sync(race_id=race_id)))  # after it
        await asyncio.wait_for(asyncio.gather(hello, sync), 5)
        assert runtime.race.racers[player_id].holder == hub.holder_of(second)
        await hub.disconnected(alice)
        await hub.disconnected(second)
        assert not runtime.race.racers[player_id].connected


class CountingMoves(MemoryStore):
    """The memory store, counting the move logs read."""

    reads = 0

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        self.reads += 1
        return await super().get_moves(race_id)


async def test_a_replay_is_built_once_and_sent_again_as_it_was() -> None:
    store = CountingMoves()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        await hub.handle(alice, GetReplay(race_id=race_id))
        refused = alice.sent[-1]
        assert isinstance(refused, Error) and refused.code == "not_finished"  # nothing kept
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
        for session in (alice, bob, alice):
            await hub.handle(session, GetReplay(race_id=race_id))
        replays = [m for s in (alice, bob) for m in s.sent if isinstance(m, Replay)]
        assert len(replays) == 3 and replays[0] == replays[1] == replays[2]
        assert replays[0].replay.race_id == race_id and store.reads == 1


def test_recent_frames_keep_the_latest_used_within_their_bytes() -> None:
    frames = RecentFrames(max_bytes=40)
    for key in "abcd":
        frames.keep(key, key.encode() * 10)
    assert frames.get("a") == b"a" * 10  # now the latest used
    frames.keep("e", b"e" * 10)  # past 40 bytes: the least recently used (b) goes
    assert frames.get("b") is None and len(frames) == 4
    frames.keep("big", b"x" * 11)  # over a quarter of the whole: not kept
    assert frames.get("big") is None
    assert [frames.get(k) is not None for k in "acde"] == [True] * 4


async def test_a_named_deal_is_kept_as_one_writes_it() -> None:
    """PySolFC ignores spaces and `# - _ . ,` in a game number: `-5` is deal 5, and the race
    shows (and commits to) `5`, not a number that looks like another deal."""
    async with running_hub() as hub:
        race_id, _, _ = await start_race_of_two(hub, game_number=" -5_")
        record = hub.races[race_id].race.record
        assert record.game_number == "5"
        assert is_commitment_valid(record.commitment, record.game, "5", record.salt)


async def test_a_service_that_answers_a_type_answered_already_is_not_plugged_in_at_all() -> None:
    """Two handlers for one message type: the hub's own used to win silently, and the
    service's never ran. Plugging such a service in fails, and none of it is plugged in."""
    heard: list[str] = []

    async def list_races(session: Session, message: Any) -> None:
        heard.append("list_races")

    async def finished(record: RaceRecord) -> None:
        heard.append(record.race_id)

    async with running_hub() as hub:
        with pytest.raises(ValueError, match="answered already: ListRaces"):
            hub.plug_in(handlers={ListRaces: list_races}, race_finished=finished)
        with pytest.raises(ValueError, match="gives the ratings"):
            hub.plug_in(ratings_of=RatingService(hub.store).display_ratings)
            hub.plug_in(ratings_of=RatingService(hub.store).display_ratings)
        race_id, alice, bob = await start_race_of_two(hub)
        await hub.handle(alice, ListRaces())
        assert isinstance(alice.sent[-1], RaceList)  # the hub's answer
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
        assert hub.races[race_id].race.status is RaceStatus.FINISHED
        assert heard == []
