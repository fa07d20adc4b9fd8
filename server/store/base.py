"""The store interface every backend implements, and its errors.

Moves are appended **before** they are acknowledged, guarded by the expected ply: a duplicate
or stale write fails cleanly with `PlyConflictError` and stores nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from solrace.server.protocol.records import MoveRecord, PlayerRecord, RaceRecord, RaceStatus


class StoreError(Exception):
    """Base of the store's errors."""


class NameTakenError(StoreError):
    """Another player already owns this name."""


class PlyConflictError(StoreError):
    """The move's ply or seq is already stored: a duplicate or a stale write."""


class UnknownRaceError(StoreError):
    """No such race."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached (e.g. Redis restarting): retry later. A write that raised
    this may or may not have been stored, so read before writing it again."""


class Store(Protocol):
    """Durable state: players, races, move logs (with server times), results, replays."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def create_player(self, player_id: str, name: str, now_ms: int) -> PlayerRecord:
        """A new player; `NameTakenError` if the name is owned (names compare case-blind)."""
        ...

    async def get_player(self, player_id: str) -> PlayerRecord | None: ...

    async def save_race(self, race: RaceRecord) -> None:
        """Insert or replace a race's record (settings, status, racers, results)."""
        ...

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        """Save `race` only if the stored record still equals `expected` (None: no record yet);
        False stores nothing. The compare-and-set behind transitions that must happen once
        across nodes: of two nodes moving a race on from the same record, one gets True."""
        ...

    async def get_race(self, race_id: str) -> RaceRecord | None: ...

    async def list_races(self, statuses: Sequence[RaceStatus]) -> list[RaceRecord]: ...

    async def append_move(self, move: MoveRecord) -> None:
        """Store a move whose `ply` must be the player's next one in the race and whose `seq`
        must be new, else `PlyConflictError` (nothing stored)."""
        ...

    async def get_moves(self, race_id: str) -> list[MoveRecord]:
        """Every stored move of a race, per player in ply order."""
        ...
