"""The lobby's requests about races (server/race_requests.py): the list says which deals their
creator chose, and a chosen deal is kept as its creator wrote it."""

from __future__ import annotations

from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    ListRaces,
    RaceList,
)
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
