"""The lobby's requests about races (server/race_requests.py): the list says which deals their
creator chose, a chosen deal is kept as its creator wrote it, and a request naming a race
finished long ago says so (not "no live race")."""

from __future__ import annotations

from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Error,
    Hello,
    JoinRace,
    ListRaces,
    RaceList,
    Resign,
    Watch,
)
from solrace.server.store.memory import MemoryStore
from tests.server.protocol.test_race import running
from tests.server.sessions import RecordingSession, running_hub, start_race_of_two


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


async def test_a_named_deal_is_kept_as_one_writes_it() -> None:
    """PySolFC ignores spaces and `# - _ . ,` in a game number: `-5` is deal 5, and the race
    shows (and commits to) `5`, not a number that looks like another deal."""
    async with running_hub() as hub:
        race_id, _, _ = await start_race_of_two(hub, game_number=" -5_")
        record = hub.races[race_id].race.record
        assert record.game_number == "5"
        assert is_commitment_valid(record.commitment, record.game, "5", record.salt)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


async def test_a_race_finished_long_ago_is_named_finished_not_unknown() -> None:
    """Once a finished race is out of memory (`finished_kept_s`), a request naming it says it
    has finished and where its replay is; an id the store does not know is no live race."""
    clock = Clock()
    async with running_hub(clock=clock, finished_kept_s=1.0) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        for racer in (alice, bob):
            await hub.handle(racer, Resign(race_id=race_id))
        clock.now += 10_000
        await hub.keeper.tick()  # the finished race is forgotten
        assert race_id not in hub.races
        watcher = RecordingSession(9)
        await hub.handle(watcher, Hello(protocol=PROTOCOL_VERSION, name="carol"))
        watcher.sent.clear()
        await hub.handle(watcher, Watch(race_id=race_id))
        await hub.handle(watcher, JoinRace(race_id=race_id))
        await hub.handle(watcher, Watch(race_id="rnone"))
        said = f"race {race_id!r} has finished: its replay is there to fetch (get_replay)"
        assert watcher.sent == [
            Error(code=ErrorCode.UNKNOWN_RACE.value, message=said, request=kind, race_id=race_id)
            for kind in ("watch", "join_race")
        ] + [
            Error(
                code=ErrorCode.UNKNOWN_RACE.value,
                message="no live race 'rnone'",
                request="watch",
                race_id=RaceId("rnone"),
            )
        ]


async def test_a_held_deal_race_finished_long_ago_says_when_its_replay_comes() -> None:
    """A tournament race whose deal is still held has no replay until its round ends
    (`get_replay` answers `not_finished`): the refusal does not send the client there."""
    race = running(2)
    race.tick(61_000)  # finished at its time limit
    record = race.to_record().model_copy(update={"deal_held": True, "race_id": RaceId("r1")})
    store = MemoryStore()
    await store.open()
    try:
        assert await store.save_race_if(record, None)
        async with running_hub(store, clock=lambda: 10_000_000) as hub:  # long after
            watcher = RecordingSession(5)
            await hub.handle(watcher, Hello(protocol=PROTOCOL_VERSION))
            watcher.sent.clear()
            await hub.handle(watcher, Watch(race_id="r1"))
            assert watcher.sent == [
                Error(
                    code=ErrorCode.UNKNOWN_RACE.value,
                    message="race 'r1' has finished: its replay comes when its round ends",
                    request="watch",
                    race_id=RaceId("r1"),
                )
            ]
    finally:
        await store.close()
