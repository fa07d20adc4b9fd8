"""Wire models of tournaments: free text other clients are shown must be printable (and a
tournament's name not blank); a tournament race's id names its tournament."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from pydantic import ValidationError

from solrace.server.protocol.codec import decode_client
from solrace.server.protocol.errors import SchemaError
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    TournamentAdmin,
    tournament_of_race,
    tournament_race_id,
)

UNPRINTABLE = [
    "\x1b[2J\x1b[31mcup",  # terminal escape sequences: clear the screen, red
    "friday\ncup",
    "cup\r",
    "nul\x00",
    "tab\there",
    "del\x7f",
    "\x9bcsi",  # a C1 control
    "evil\u202ename",  # right-to-left override
    "zero\u200bwidth",
    "line\u2028separator",
    # Joiners where they join nothing: at an end, doubled, beside a space.
    "joiner\u200d",
    "\u200cnon-joiner",
    "a\u200d\u200db",
    "a \u200cb",
    "a\u200d b",
]


def create(name: str) -> dict[str, Any]:
    return {
        "type": "create_tournament",
        "admin_token": "t",
        "name": name,
        "game": "klondike",
        "format": "swiss",
    }


@pytest.mark.parametrize("name", UNPRINTABLE)
def test_a_tournament_name_with_a_non_printable_character_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match=r"non-printable character U\+"):
        CreateTournament.model_validate(create(name))
    with pytest.raises(SchemaError, match=r"name: .*non-printable") as refused:
        decode_client(msgpack.packb(create(name)))
    assert refused.value.request_type == "create_tournament"


@pytest.mark.parametrize(
    "name", ["friday cup", "Coupe d'été 2026", "🂡 aces", "x" * 64, " x ", "e\u0301te", "…"]
)
def test_printable_names_are_accepted(name: str) -> None:
    assert CreateTournament.model_validate(create(name)).name == name


@pytest.mark.parametrize(
    "name",
    [
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian, with a non-joiner
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 cup",  # an emoji family
        "\u2764\ufe0f\u200d\U0001f525",  # a variation selector before the joiner
    ],
)
def test_joiners_between_what_they_join_are_accepted(name: str) -> None:
    """Persian words and emoji sequences need the (zero-width) joiner and non-joiner."""
    assert CreateTournament.model_validate(create(name)).name == name
    assert decode_client(msgpack.packb(create(name))) == CreateTournament.model_validate(
        create(name)
    )


@pytest.mark.parametrize(
    "name",
    # Spaces; then letters and symbols drawn as nothing (Braille blank, Hangul fillers), and
    # combining marks with nothing to combine with.
    [
        *("", " ", "    ", "\u2800", "\u3164\u3164", "\uffa0", "\u115f\u1160", "\U0001d159"),
        *("\u0301", "\u034f"),
    ],
)
def test_a_tournament_name_with_nothing_to_show_is_refused(name: str) -> None:
    """A list would show it blank (the CLI refuses it too; a raw client must not get it in)."""
    with pytest.raises(ValidationError, match="must not be empty or only spaces"):
        CreateTournament.model_validate(create(name))
    with pytest.raises(SchemaError, match=r"name: .*must not be empty or only spaces"):
        decode_client(msgpack.packb(create(name)))


def test_a_correction_s_reason_may_be_empty() -> None:
    fields = {"tournament_id": "t1", "admin_token": "t", "act": "correct_result"}
    assert TournamentAdmin.model_validate({**fields, "reason": ""}).reason == ""


def test_a_correction_s_reason_must_be_printable_too() -> None:
    fields = {"tournament_id": "t1", "admin_token": "t", "act": "correct_result"}
    assert TournamentAdmin.model_validate({**fields, "reason": "scorer error"}).reason
    with pytest.raises(ValidationError, match="non-printable"):
        TournamentAdmin.model_validate({**fields, "reason": "ok\x1b]0;pwned\x07"})


def test_a_tournament_race_id_names_its_tournament_and_no_other_race_does() -> None:
    race_id = tournament_race_id("t1a2b3c", 12)
    assert race_id == "t1a2b3c-12"
    assert tournament_of_race(race_id) == "t1a2b3c"
    for other in ("r1a2b3c4d5e", "t1a2b3c", "t1a2b3c-", "t1a2b3c-x1", "x1a2b3c-3"):
        assert tournament_of_race(other) is None, other
