"""The state names the wire carries, as `Literal` types.

A message's `status`, `state`, `phase` or `format` is a plain string on the wire; typing it
with one of these aliases lets a type checker (with `strict_equality`) refuse a comparison with
a name that can never arrive, such as a misspelt state. Each alias lists exactly the values of
the enum the server keeps (named beside it); `tests/server/protocol/test_vocab.py` holds them
equal. This module imports nothing of the protocol, so any protocol module may use it.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "FormatName",
    "MatchStateName",
    "PhaseName",
    "RaceStatusName",
    "RacerStateName",
]

RaceStatusName = Literal["open", "countdown", "running", "finished", "cancelled"]
"""A race's status (`records.RaceStatus`)."""

RacerStateName = Literal["joined", "playing", "finished", "stuck", "resigned", "gone", "timed_out"]
"""A racer's state in a race (`records.RacerState`)."""

PhaseName = Literal["registration", "check_in", "running", "finished"]
"""A tournament's phase (`tournament_state.Phase`)."""

FormatName = Literal["single_elimination", "double_elimination", "swiss", "round_robin", "heats"]
"""A tournament's format (`tournament_model.Format`)."""

MatchStateName = Literal["played", "ready", "waiting", "walkover", "empty"]
"""A bracket match's state (`tournament_bracket.MatchState`)."""
