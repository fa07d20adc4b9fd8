"""What every wire message shares (`messages.py`, `tournament_messages.py`): the base model
and the bounded text types of ids and labels."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

#: A race's or a tournament's id.
IdText = Annotated[str, Field(min_length=1, max_length=32)]
#: A short label: a game id, a player id, a match id.
ShortText = Annotated[str, Field(max_length=64)]


class Message(BaseModel):
    """Base of every message: strict (no coercion), closed (an unknown field is refused),
    immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


__all__ = ["IdText", "Message", "ShortText"]
