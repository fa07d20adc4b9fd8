"""Race setup (server/race_setup.py): a new race's record from the settings, the checks of a
`create_race` and the game number it plays."""

from __future__ import annotations

import random

import pytest

from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import CreateRace
from solrace.server.protocol.records import RaceStatus
from solrace.server.race_setup import check_create_race, game_number_of, new_race_record
from solrace.server.settings import Settings

NOW_MS = 1_700_000_000_000


def test_a_new_race_record_is_open_with_the_server_s_settings_and_a_fresh_commitment() -> None:
    settings = Settings(
        store="memory:",
        countdown_s=2.5,
        grace_s=30.0,
        spectator_delay_casual_s=1.0,
        spectator_delay_rated_s=12.0,
    )
    casual = new_race_record(
        settings,
        RaceId("r1"),
        game="klondike",
        game_number="1002",
        seats=3,
        time_limit_s=600,
        rated=False,
        invite_code=None,
        creator=PlayerId("p1"),
        now_ms=NOW_MS,
    )
    assert casual.status is RaceStatus.OPEN and casual.racers == []
    assert (casual.race_id, casual.game, casual.game_number) == ("r1", "klondike", "1002")
    assert (casual.seats, casual.time_limit_s, casual.creator) == (3, 600, "p1")
    assert casual.created_at_ms == NOW_MS
    assert (casual.countdown_ms, casual.grace_ms, casual.spectator_delay_ms) == (2500, 30000, 1000)
    assert not casual.rated and not casual.deal_held and casual.invite_code is None
    assert is_commitment_valid(casual.commitment, "klondike", "1002", casual.salt)

    held = new_race_record(
        settings,
        RaceId("t1-1"),
        game="klondike",
        game_number="1002",
        seats=2,
        time_limit_s=600,
        rated=True,
        invite_code="seats",
        creator=PlayerId("p1"),
        now_ms=NOW_MS,
        deal_held=True,
    )
    assert held.rated and held.deal_held and held.invite_code == "seats"
    assert held.spectator_delay_ms == 12000
    assert held.salt != casual.salt  # one deal, a different commitment per race
    assert is_commitment_valid(held.commitment, "klondike", "1002", held.salt)


@pytest.mark.parametrize(
    ("asked", "code", "says"),
    [
        ({"game": "chess"}, ErrorCode.UNKNOWN_GAME, "games: "),
        ({"time_limit_s": 1}, ErrorCode.INVALID_SETTINGS, "time limit: "),
        ({"seats": 9}, ErrorCode.INVALID_SETTINGS, "seats: 2..8"),
        ({"rated": True, "game_number": "5"}, ErrorCode.INVALID_SETTINGS, "always secret"),
    ],
)
def test_a_race_the_server_does_not_set_up_is_refused(
    asked: dict[str, object], code: ErrorCode, says: str
) -> None:
    settings = Settings(store="memory:", max_seats=8)
    message = CreateRace.model_validate(
        {"game": "klondike", "seats": 2, "time_limit_s": 60, **asked}
    )
    with pytest.raises(RaceError) as refused:
        check_create_race(settings, message)
    assert refused.value.code is code and says in refused.value.message
    check_create_race(settings, CreateRace(game="klondike", seats=8, time_limit_s=60))


def test_a_race_plays_a_random_number_or_the_one_named_as_one_writes_it() -> None:
    drawn = game_number_of(CreateRace(game="klondike", seats=2, time_limit_s=60), random.Random(1))
    assert 10**16 <= int(drawn) < 10**20
    named = CreateRace(game="klondike", seats=2, time_limit_s=60, game_number=" -5_")
    assert game_number_of(named, random.Random(1)) == "5"
    zero = CreateRace(game="klondike", seats=2, time_limit_s=60, game_number="0")
    with pytest.raises(RaceError) as refused:
        game_number_of(zero, random.Random(1))
    assert refused.value.code is ErrorCode.INVALID_GAME_NUMBER
