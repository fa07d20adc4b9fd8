"""The wire's state-name aliases list exactly the values of the enums the server keeps."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, get_args

import pytest

from solrace.server.protocol import vocab
from solrace.server.protocol.records import RacerState, RaceStatus
from solrace.server.protocol.tournament_bracket import MatchState
from solrace.server.protocol.tournament_model import Format
from solrace.server.protocol.tournament_state import Phase


@pytest.mark.parametrize(
    ("alias", "enum"),
    [
        (vocab.RaceStatusName, RaceStatus),
        (vocab.RacerStateName, RacerState),
        (vocab.PhaseName, Phase),
        (vocab.FormatName, Format),
        (vocab.MatchStateName, MatchState),
    ],
)
def test_each_alias_lists_its_enums_values(alias: Any, enum: type[StrEnum]) -> None:
    assert get_args(alias) == tuple(member.value for member in enum)


def test_every_alias_is_checked() -> None:
    assert sorted(vocab.__all__) == sorted(
        ["RaceStatusName", "RacerStateName", "PhaseName", "FormatName", "MatchStateName"]
    )
