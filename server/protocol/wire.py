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


class Message(BaseModel):
    """Base of every message: strict (no coercion), closed (an unknown field is refused),
    immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


__all__ = ["MAX_ID_CHARS", "IdText", "Message", "ShortText"]
