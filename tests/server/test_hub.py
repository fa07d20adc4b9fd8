"""The hub (server/hub.py): how long a finished race stays in memory, the errors a refused
request and a store outage get, replays kept encoded, and plugging services in."""

from __future__ import annotations

from typing import Any

import pytest

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    ListRaces,
    RaceList,
    RaceSnapshot,
    Resign,
    Sync,
)
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.ratings import RatingService
from solrace.server.replays import RecentFrames
from solrace.server.session import Session
from solrace.server.store import MemoryStore, StoreUnavailableError
from tests.server.sessions import (
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)

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
