"""The ids of races and players, as distinct types.

Both are plain strings on the wire and in the store; as `NewType`s an id of one kind passed
where the other is expected is a type error. An id is wrapped once, where it is minted (the
hub) or where it comes in untyped (a store row, a Redis key); a wire message or a store record
carries it already typed, since pydantic reads a `NewType` field as its base type.
"""

from __future__ import annotations

import re
from typing import Final, NewType

RaceId = NewType("RaceId", str)
"""A race's id: ``r`` and 10 hex digits, minted by the hub."""

PlayerId = NewType("PlayerId", str)
"""A player's stable id (``p`` and 16 hex digits), the same in races, ratings and
tournaments."""

#: The shape of every player id the server mints (random, or derived from a registration key).
PLAYER_ID_SHAPE: Final = re.compile(r"p[0-9a-f]{16}")


def looks_like_player_id(text: str) -> bool:
    """True if `text` has the shape of a player id. A new name of that shape (in any case) is
    refused (`identities.Identities`); a stored name may still have it, since a registered
    name is never taken away."""
    return PLAYER_ID_SHAPE.fullmatch(text) is not None


__all__ = ["PLAYER_ID_SHAPE", "PlayerId", "RaceId", "looks_like_player_id"]
