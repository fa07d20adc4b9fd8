"""What a tournament state machine reports after each call: typed, frozen events.

The server acts on them in order: create races for `RaceRequested`, stop the race of a
`RaceCancelled`, push `MatchEnded`/`RoundEnded`/standings to spectators, and store the
tournament (`Tournament.to_dict()`) before acting, so a restart never repeats or loses one.

`RaceRequested.game_number` is the round's secret deal: give it to the race layer only (which
commits to it and reveals it when the race ends); `RoundEnded.game_numbers` is the reveal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .tournament_errors import MatchId, PlayerId
from .tournament_model import Pairing, RaceResult, Standing

__all__ = [
    "CheckInOpened",
    "GameNumberNeeded",
    "MatchEnded",
    "MatchReopened",
    "PlayerCheckedIn",
    "PlayerDropped",
    "PlayerForfeited",
    "PlayerRegistered",
    "PlayerUnregistered",
    "RaceCancelled",
    "RaceRecorded",
    "RaceRequested",
    "ResultCorrected",
    "RoundEnded",
    "RoundStarted",
    "TournamentEvent",
    "TournamentFinished",
    "TournamentPaused",
    "TournamentResumed",
    "TournamentStarted",
]


@dataclass(frozen=True)
class PlayerRegistered:
    player: PlayerId


@dataclass(frozen=True)
class PlayerUnregistered:
    player: PlayerId


@dataclass(frozen=True)
class CheckInOpened:
    pass


@dataclass(frozen=True)
class PlayerCheckedIn:
    player: PlayerId


@dataclass(frozen=True)
class TournamentStarted:
    """Seeds in order (seed 1 first); `removed` registered but did not check in."""

    seeds: tuple[PlayerId, ...]
    removed: tuple[PlayerId, ...]


@dataclass(frozen=True)
class RoundStarted:
    """Create these matches; `byes` score a bye this round without playing."""

    round_number: int
    matches: tuple[Pairing, ...]
    byes: tuple[PlayerId, ...]


@dataclass(frozen=True)
class GameNumberNeeded:
    """No deal source was given: call `Tournament.provide_game_number` for this race."""

    round_number: int
    race_number: int


@dataclass(frozen=True)
class RaceRequested:
    """Start race `race_number` of a match on `game_number` (secret until the round ends)."""

    match_id: MatchId
    round_number: int
    race_number: int
    players: tuple[PlayerId, ...]
    game_number: str


@dataclass(frozen=True)
class RaceRecorded:
    match_id: MatchId
    race_number: int
    result: RaceResult


@dataclass(frozen=True)
class RaceCancelled:
    """A requested race no longer counts (its match was decided by a forfeit or correction)."""

    match_id: MatchId
    race_number: int


@dataclass(frozen=True)
class PlayerForfeited:
    """`reason` is ``no_show``, ``dropped`` or ``admin``."""

    match_id: MatchId
    player: PlayerId
    reason: str


@dataclass(frozen=True)
class MatchEnded:
    match_id: MatchId
    round_number: int
    ranking: tuple[PlayerId, ...]
    winner: PlayerId | None
    is_draw: bool
    forfeited: tuple[PlayerId, ...]


@dataclass(frozen=True)
class MatchReopened:
    """A correction undecided a match: it needs another race."""

    match_id: MatchId


@dataclass(frozen=True)
class RoundEnded:
    """Every match of the round ended; the round's deals are no longer secret."""

    round_number: int
    game_numbers: Mapping[int, str]


@dataclass(frozen=True)
class TournamentPaused:
    pass


@dataclass(frozen=True)
class TournamentResumed:
    pass


@dataclass(frozen=True)
class PlayerDropped:
    player: PlayerId


@dataclass(frozen=True)
class ResultCorrected:
    """An admin replaced a race result; races after the new decision are `voided`."""

    match_id: MatchId
    race_number: int
    result: RaceResult
    voided: tuple[int, ...]


@dataclass(frozen=True)
class TournamentFinished:
    """`champion` is None only if the deciding match ended with every player forfeiting."""

    champion: PlayerId | None
    standings: tuple[Standing, ...]


TournamentEvent = (
    PlayerRegistered
    | PlayerUnregistered
    | CheckInOpened
    | PlayerCheckedIn
    | TournamentStarted
    | RoundStarted
    | GameNumberNeeded
    | RaceRequested
    | RaceRecorded
    | RaceCancelled
    | PlayerForfeited
    | MatchEnded
    | MatchReopened
    | RoundEnded
    | TournamentPaused
    | TournamentResumed
    | PlayerDropped
    | ResultCorrected
    | TournamentFinished
)
