"""What every wire message shares (`messages.py`, `tournament_messages.py`): the base model
and the bounded text types of ids and labels."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

#: The longest race or tournament id a client may send.
MAX_ID_CHARS = 32
#: A race's or a tournament's id.
IdText = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
#: A short label: a game id, a player id, a match id.
ShortText = Annotated[str, Field(max_length=64)]
#: The largest value an integer field a client sends takes, unless the field says less:
#: 2^31 - 1. No count, number or time in seconds means anything past it, and every value
#: stays far inside what the stores keep (signed 64-bit integers) and what a timer takes.
MAX_WIRE_INT = 2**31 - 1
#: An integer a client sends whose own range is checked later (a server setting, the game):
#: at most `MAX_WIRE_INT`.
WireInt = Annotated[int, Field(le=MAX_WIRE_INT)]
#: A count a client sends (of things to skip, a number of something): 0 to `MAX_WIRE_INT`.
Count = Annotated[int, Field(ge=0, le=MAX_WIRE_INT)]


class Message(BaseModel):
    """Base of every message: strict (no coercion), closed (an unknown field is refused),
    immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


__all__ = ["MAX_ID_CHARS", "MAX_WIRE_INT", "Count", "IdText", "Message", "ShortText", "WireInt"]
