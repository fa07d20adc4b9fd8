"""Wire models of tournaments and ratings (part of the `ClientMessage`/`ServerMessage` unions).

Same rules as `messages.py` (one base, `wire.Message`): strict, closed, frozen, discriminated
on `type`, integer milliseconds for times, string keys in maps. A tournament travels as one
`TournamentModel` (what anyone may see: deals only for rounds that ended), pushed whole to its
watchers on every change, so a client never merges deltas.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.shown_text import ShownText, TournamentName
from solrace.server.protocol.vocab import FormatName, MatchStateName, PhaseName
from solrace.server.protocol.wire import Count, IdText, Message, ShortText, WireInt

TournamentIdText = IdText

#: Every tournament's id starts so (a race's id never does).
TOURNAMENT_ID_PREFIX = "t"


def tournament_race_id(tournament_id: str, number: int) -> RaceId:
    """The id of a tournament's race number `number`: `<tournament id>-<number>`."""
    return RaceId(f"{tournament_id}-{number}")


def tournament_of_race(race_id: str) -> str | None:
    """The tournament whose race `race_id` is, by the id's shape (`tournament_race_id`);
    None for any other race."""
    head, _, number = race_id.rpartition("-")
    return head if head.startswith(TOURNAMENT_ID_PREFIX) and number.isdigit() else None


Token = Annotated[str, Field(max_length=200)]
Label = ShortText

#: The most rows one `get_leaderboard` may ask for.
LEADERBOARD_LIMIT = 100
#: The longest `no_show_grace_s` a tournament takes: a day.
MAX_NO_SHOW_GRACE_S = 24 * 3600
AdminAct = Literal["open_check_in", "start", "pause", "resume", "forfeit", "correct_result", "drop"]


# --- shared pieces -------------------------------------------------------------------------


class LeaderboardRow(Message):
    rank: int
    player_id: PlayerId
    name: str
    rating: int
    races: int
    wins: int
    provisional: bool


class GameRating(Message):
    game: str
    rating: int
    mu: float
    sigma: float
    races: int
    wins: int
    provisional: bool


class RecentResultModel(Message):
    race_id: RaceId
    game: str
    rank: int
    racers: int
    rating_before: int
    rating_after: int
    at_ms: int


class PlayerRef(Message):
    player_id: PlayerId
    name: str


class RaceResultModel(Message):
    """A race of a match: groups of tied players (best first), cards on foundations."""

    placings: list[list[PlayerId]]
    cards: dict[PlayerId, int]


class MatchModel(Message):
    """A match of a round, with the server's own result so a client never scores it again:
    once the match has ended, `ranking` lists every player best first as the server ranks
    them (a heat's finishing order, those who forfeited last; a drawn match by seed), empty
    before; `wins` is a head-to-head match's race wins so far, in the order of `players` (a
    race whose best place is shared counts for nobody), empty for a heat. (A list, not a map
    by player id: the whole view goes to every watcher, and its size bounds the field.)"""

    match_id: str
    players: list[PlayerId]
    races: list[RaceResultModel]
    pending_race: int | None
    race_id: RaceId | None
    forfeited: list[PlayerId]
    is_ended: bool
    winner: PlayerId | None
    ranking: list[PlayerId] = Field(default_factory=list)
    wins: list[int] = Field(default_factory=list)


class RoundModel(Message):
    number: int
    byes: list[PlayerId]
    matches: list[MatchModel]
    is_ended: bool
    game_numbers: dict[str, str]
    """Race number -> game number, once the round has ended (secret before)."""


class StandingModel(Message):
    rank: int
    player_id: PlayerId
    points: float
    tiebreak: float
    cards: int
    wins: int
    draws: int
    losses: int
    is_eliminated: bool
    is_dropped: bool


class BracketMatchModel(Message):
    match_id: str
    step: int
    state: MatchStateName
    players: list[PlayerId | None]
    winner: PlayerId | None
    loser: PlayerId | None


class LiveMatchModel(Message):
    """A match being played now: `race_id` can be watched like any race."""

    match_id: str
    round: int
    race_number: int
    race_id: RaceId
    players: list[PlayerId]


class AuditModel(Message):
    at_ms: int
    actor: PlayerId
    act: str
    detail: str


class TournamentModel(Message):
    tournament_id: str
    version: int
    name: str
    game: str
    format: FormatName
    best_of: int
    rated: bool
    time_limit_s: int
    check_in_required: bool
    phase: PhaseName
    paused: bool
    admin: PlayerId
    players: list[PlayerRef]
    checked_in: list[PlayerId]
    seeds: list[PlayerId]
    dropped: list[PlayerId]
    rounds: list[RoundModel]
    standings: list[StandingModel]
    bracket: list[BracketMatchModel]
    live: list[LiveMatchModel]
    champion: PlayerId | None
    audit: list[AuditModel]
    #: A Swiss's `swiss_rounds` as created (None: automatic, or not a Swiss); the rounds it
    #: plays are `swiss.swiss_round_count` of its field, never more than a rematch-free
    #: schedule.
    swiss_rounds: int | None = None


class TournamentSummary(Message):
    tournament_id: str
    name: str
    game: str
    format: FormatName
    phase: PhaseName
    players: int
    round: int
    champion: PlayerId | None


# --- client -> server ----------------------------------------------------------------------


class GetLeaderboard(Message):
    type: Literal["get_leaderboard"] = "get_leaderboard"
    game: Label
    limit: Annotated[int, Field(ge=1, le=LEADERBOARD_LIMIT)] = 20
    include_provisional: bool = True


class GetProfile(Message):
    """A player's profile, named by `player_id` or by `name` (names compare case-blind); with
    neither, the sender's own."""

    type: Literal["get_profile"] = "get_profile"
    player_id: Label | None = None
    name: Label | None = None

    @model_validator(mode="after")
    def _names_one_player(self) -> GetProfile:
        if self.player_id is not None and self.name is not None:
            raise ValueError("name a player by player_id or by name, not both")
        return self


class CreateTournament(Message):
    type: Literal["create_tournament"] = "create_tournament"
    admin_token: Token
    name: TournamentName
    game: Label
    format: FormatName
    best_of: Annotated[int, Field(ge=1, le=9)] = 1
    #: The server's range of race time limits is checked when the tournament is made.
    time_limit_s: WireInt = 600
    min_players: Annotated[int, Field(ge=2, le=1024)] = 2
    max_players: Annotated[int, Field(ge=2, le=1024)] | None = None
    check_in_required: bool = True
    no_show_grace_s: Annotated[int, Field(ge=0, le=MAX_NO_SHOW_GRACE_S)] | None = 120
    rated: bool = True
    swiss_rounds: Annotated[int, Field(ge=1, le=64)] | None = None
    heat_size: Annotated[int, Field(ge=2, le=16)] = 4
    advance_per_heat: Annotated[int, Field(ge=1, le=15)] = 2
    third_place_match: bool = False
    bracket_reset: bool = True


class ListTournaments(Message):
    """The tournaments (`tournament_list`). With `skip_finished` N, a later page: only finished
    tournaments, older than the N latest (those the pages before showed)."""

    type: Literal["list_tournaments"] = "list_tournaments"
    skip_finished: Count = 0


class WatchTournament(Message):
    """Get the tournament now and again after every change, until `unwatch_tournament`."""

    type: Literal["watch_tournament"] = "watch_tournament"
    tournament_id: TournamentIdText


class UnwatchTournament(Message):
    type: Literal["unwatch_tournament"] = "unwatch_tournament"
    tournament_id: TournamentIdText


class JoinTournament(Message):
    type: Literal["join_tournament"] = "join_tournament"
    tournament_id: TournamentIdText


class CheckIn(Message):
    type: Literal["check_in"] = "check_in"
    tournament_id: TournamentIdText


class LeaveTournament(Message):
    """Unregister before the start; drop out (forfeiting the live match) after it."""

    type: Literal["leave_tournament"] = "leave_tournament"
    tournament_id: TournamentIdText


class TournamentAdmin(Message):
    """An admin act (kept in the audit log). `forfeit` and `drop` name `player_id` (and
    `forfeit` a `match_id`); `correct_result` names `match_id`, `race_number`, `placings`."""

    type: Literal["tournament_admin"] = "tournament_admin"
    tournament_id: TournamentIdText
    admin_token: Token
    act: AdminAct
    match_id: Label | None = None
    player_id: Label | None = None
    race_number: Annotated[Count, Field(ge=1)] | None = None
    placings: list[list[Label]] | None = None
    #: Each count's range (0 to the game's cards) is checked against the race.
    cards: dict[str, WireInt] | None = None
    reason: ShownText = ""


# --- server -> client ----------------------------------------------------------------------


class Leaderboard(Message):
    type: Literal["leaderboard"] = "leaderboard"
    game: str
    entries: list[LeaderboardRow]


class Profile(Message):
    type: Literal["profile"] = "profile"
    player_id: PlayerId
    name: str
    ratings: list[GameRating]
    recent: list[RecentResultModel]


class TournamentView(Message):
    type: Literal["tournament_view"] = "tournament_view"
    tournament: TournamentModel


#: The most tournaments one `tournament_list` holds (each summary is ~150 bytes).
TOURNAMENT_LIST_LIMIT = 500


class TournamentList(Message):
    """The tournaments: every one not finished, then the latest finished ones (each part
    oldest first), up to `TOURNAMENT_LIST_LIMIT`; `more` counts those left out (older
    finished ones: a list with `skip_finished` set to the number of finished ones seen so
    far shows them)."""

    type: Literal["tournament_list"] = "tournament_list"
    tournaments: list[TournamentSummary]
    more: int = 0


class TournamentRace(Message):
    """Sent to each seated player: a race of your match is open (its countdown runs)."""

    type: Literal["tournament_race"] = "tournament_race"
    tournament_id: str
    match_id: str
    round: int
    race_number: int
    race_id: RaceId
    players: list[PlayerId]


CompetitionServerMessage = Leaderboard | Profile | TournamentView | TournamentList | TournamentRace
"""The server messages about no race: a race-keyed client state skips them."""
