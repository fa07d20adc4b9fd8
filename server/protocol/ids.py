"""The ids of races and players, as distinct types.

Both are plain strings on the wire and in the store; as `NewType`s an id of one kind passed
where the other is expected is a type error. An id is wrapped once, where it is minted (the
hub) or where it comes in untyped (a store row, a Redis key); a wire message or a store record
carries it already typed, since pydantic reads a `NewType` field as its base type.
"""

from __future__ import annotations

from typing import NewType

RaceId = NewType("RaceId", str)
"""A race's id: ``r`` and 10 hex digits, minted by the hub."""

PlayerId = NewType("PlayerId", str)
"""A player's stable id (``p`` and 16 hex digits), the same in races, ratings and
tournaments."""

__all__ = ["PlayerId", "RaceId"]
