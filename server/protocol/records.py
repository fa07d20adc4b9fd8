"""What the store keeps about a race and its players: plain JSON-able models.

A race is its settings, its game number and salt, its racers' states and (in the store's move
log) every accepted move with its server time; boards are rebuilt from those by replay.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Progress,
    RaceFinished,
    RaceStarted,
    RaceUpdate,
    ResultEntry,
)


class RaceStatus(StrEnum):
    """A race's status; on the wire as `vocab.RaceStatusName` (a test keeps the values equal)."""

    OPEN = "open"
    COUNTDOWN = "countdown"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class RacerState(StrEnum):
    """A racer's state; on the wire as `vocab.RacerStateName` (a test keeps the values equal)."""

    JOINED = "joined"
    PLAYING = "playing"
    FINISHED = "finished"
    STUCK = "stuck"
    RESIGNED = "resigned"
    GONE = "gone"
    TIMED_OUT = "timed_out"


LIVE_STATUSES = (RaceStatus.OPEN, RaceStatus.COUNTDOWN, RaceStatus.RUNNING)
#: A racer in one of these states is out of the race: it moves no more.
DONE_STATES = frozenset(set(RacerState) - {RacerState.JOINED, RacerState.PLAYING})


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


StoredEvent = Annotated[
    RaceUpdate | RaceStarted | Progress | RaceFinished, Field(discriminator="type")
]
"""A race event as kept in the record's recent history (any node can serve a resync)."""


class RacerRecord(Record):
    """A seat. Progress and connection fields are the live state several nodes share; one
    node on SQLite stores them only with race-level changes (a restart replays the moves)."""

    player_id: PlayerId
    name: str
    state: RacerState
    state_at_ms: int | None = None
    on_foundations: int = 0
    total: int = 0
    moves: int = 0
    reached_at_ms: int = 0
    connected: bool = True
    disconnected_at_ms: int | None = None
    #: Which connection (node:session) holds the racer: only that one may mark it gone.
    holder: str | None = None


class RaceRecord(Record):
    race_id: RaceId
    game: str
    seats: int
    time_limit_s: int
    rated: bool
    invite_code: str | None
    game_number: str
    salt: str
    commitment: str
    creator: PlayerId
    status: RaceStatus
    created_at_ms: int
    countdown_ms: int
    grace_ms: int
    spectator_delay_ms: int
    start_at_ms: int | None = None
    started_at_ms: int | None = None
    ends_at_ms: int | None = None
    finished_at_ms: int | None = None
    racers: list[RacerRecord] = []
    results: list[ResultEntry] | None = None
    #: The game number and salt stay secret after the finish until released: a tournament
    #: round's deal, raced by other matches still running (see `Race.is_deal_revealed`).
    deal_held: bool = False
    #: The creator of this casual race named its deal (a game number they may know).
    deal_chosen: bool = False
    #: Event numbering, fixed per race on several nodes (one node starts a new epoch when
    #: it restarts, since it did not store every progress event), and the recent events.
    epoch: str = ""
    version: int = 0
    events: list[StoredEvent] = []


class PlayerRecord(Record):
    player_id: PlayerId
    name: str
    created_at_ms: int


class MoveRecord(Record):
    """One accepted move: `ply` is its index in the player's move list (0-based)."""

    race_id: RaceId
    player_id: PlayerId
    ply: int
    seq: int
    move: str
    at_ms: int
