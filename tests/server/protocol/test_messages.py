"""Client messages' text fields: an invite code must be one a person can type and see."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from solrace.server.protocol.codec import decode_client, encode_raw
from solrace.server.protocol.errors import SchemaError
from solrace.server.protocol.messages import CreateRace, JoinRace

#: Codes nobody can type or see: blanks, characters drawn as nothing (a Hangul filler, the
#: blank Braille pattern), a zero-width space, control characters, a right-to-left override.
UNSEEN_CODES = [
    "",
    "   ",
    "\u200b",
    "\u3164\u3164",
    "\u2800",
    "\x00\x01",
    "\u202eedoc",
    "code\x1b[2J",
    "\u115f\u1160",
]


def create(code: str) -> dict[str, Any]:
    return {
        "type": "create_race",
        "game": "klondike",
        "seats": 2,
        "time_limit_s": 600,
        "invite_code": code,
    }


@pytest.mark.parametrize("code", UNSEEN_CODES)
def test_an_invite_code_nobody_can_type_or_see_is_refused(code: str) -> None:
    with pytest.raises(ValidationError):
        CreateRace.model_validate(create(code))
    with pytest.raises(SchemaError, match=r"^create_race\.invite_code: ") as refused:
        decode_client(encode_raw(create(code)))
    assert refused.value.request_type == "create_race"
    join = {"type": "join_race", "race_id": "r5d2c1a9e07", "invite_code": code}
    with pytest.raises(SchemaError, match=r"^join_race\.invite_code: "):
        decode_client(encode_raw(join))


def test_an_invite_code_with_nothing_to_show_says_so() -> None:
    with pytest.raises(SchemaError, match="an invite code must not be empty or only spaces"):
        decode_client(encode_raw(create("\u3164\u3164")))
    with pytest.raises(SchemaError, match=r"non-printable character U\+200B"):
        decode_client(encode_raw(create("\u200b")))


@pytest.mark.parametrize("code", ["x", "friday-7", " spaced code ", "été", "🂡", "k" * 64])
def test_invite_codes_one_can_type_are_taken(code: str) -> None:
    assert CreateRace.model_validate(create(code)).invite_code == code
    assert JoinRace(race_id="r5d2c1a9e07", invite_code=code).invite_code == code
