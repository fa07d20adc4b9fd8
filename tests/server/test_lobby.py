"""The lobby feed's bookkeeping: each follower is sent a list it has not had, once."""

from __future__ import annotations

from solrace.server.lobby import LobbyFeed
from solrace.server.protocol.messages import RaceInfo, RaceList
from tests.server.sessions import RecordingSession


def info(race_id: str) -> RaceInfo:
    return RaceInfo.model_validate(
        {
            "race_id": race_id,
            "game": "klondike",
            "status": "open",
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
        }
    )


async def test_a_follower_gets_a_change_another_follower_already_has() -> None:
    current: list[RaceInfo] = []

    async def list_races() -> list[RaceInfo]:
        return current

    feed = LobbyFeed(list_races, interval_s=600, poll_s=None)
    early, late, gone = RecordingSession(1), RecordingSession(2), RecordingSession(3)
    feed.follow(early, True, [])
    feed.follow(gone, True, [])
    current = [info("r1")]  # a race opens; before the push, another session follows
    feed.follow(late, True, current)
    gone.closed = True
    await feed.push()
    assert early.sent == [RaceList(races=current)]
    assert late.sent == []  # it was sent this list when it asked
    assert gone not in feed.followers
    await feed.push()  # nothing changed since
    assert len(early.sent) == 1
    feed.follow(early, False, [])
    current = [info("r1"), info("r2")]
    await feed.push()
    assert len(early.sent) == 1 and late.sent == [RaceList(races=current)]
