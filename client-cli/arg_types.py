"""Argparse types of the client's numeric options, race ids, invite codes and game numbers: a
value out of range, or one the protocol or the engine does not take, is refused by the command
line (exit status 2, the
option named), before anything connects."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Final

from pydantic import TypeAdapter, ValidationError

from solrace.engine import InvalidGameNumberError, parse_game_number
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import RaceIdText
from solrace.server.protocol.shown_text import InviteCode

_RACE_ID: Final = TypeAdapter(RaceIdText)
_INVITE_CODE: Final = TypeAdapter(InviteCode)


def positive(text: str) -> int:
    """An option's whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an option's whole number from `low` to `high` (a request field's
    range, so that the server is not asked what it refuses)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value}: must be {low} or more")
        if value > high:
            raise argparse.ArgumentTypeError(f"{value}: at most {high}")
        return value

    return parse


def seconds(text: str) -> float:
    """An option's length of time in seconds: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be a number of seconds, 0 or more")
    return value


def _words(exc: ValidationError) -> str:
    """What the protocol says of a value it does not take (`at most 32 characters`)."""
    error = exc.errors()[0]
    context = error.get("ctx") or {}
    if error["type"] == "string_too_long":
        return f"at most {context['max_length']} characters"
    if error["type"] == "string_too_short":
        return f"at least {context['min_length']} character"
    if error["type"] == "value_error":  # an invite code's own check says what is wrong
        return str(context["error"])
    return str(error["msg"])


def race_id(text: str) -> RaceId:
    """A race id as the protocol takes one (1-32 characters)."""
    try:
        return RaceId(_RACE_ID.validate_python(text))
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is no race id: {_words(exc)}") from None


def invite_code(text: str) -> str:
    """An invite code as the protocol takes one (1-64 characters, printable, with something
    to show)."""
    try:
        return _INVITE_CODE.validate_python(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is no invite code: {_words(exc)}") from None


def game_number(text: str) -> str:
    """A game number the engine deals, kept as typed (the server says it as one writes it):
    the rule and the words of the server's `invalid_game_number` (`race_setup.game_number_of`),
    `invalid game number '0': game numbers start at 1`."""
    try:
        parse_game_number(text)
    except InvalidGameNumberError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


__all__ = ["game_number", "invite_code", "positive", "race_id", "seconds", "whole_number"]
