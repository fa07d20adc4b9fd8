"""Every wire message: typed, strict, frozen pydantic models, discriminated on `type`.

Client -> server messages form `ClientMessage`, server -> client ones `ServerMessage`.
Unknown fields are refused (`extra="forbid"`), types are strict (no "1" for 1), and every
time is integer milliseconds (server wall clock, Unix epoch) so msgpack carries no floats.
`docs/protocol.md` shows each message with an example.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from pydantic import Field, TypeAdapter, model_validator

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.shown_text import InviteCode
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    CreateTournament,
    GetLeaderboard,
    GetProfile,
    JoinTournament,
    Leaderboard,
    LeaveTournament,
    ListTournaments,
    Profile,
    TournamentAdmin,
    TournamentList,
    TournamentRace,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)
from solrace.server.protocol.vocab import RacerStateName, RaceStatusName
from solrace.server.protocol.wire import IdText, Message, ShortText, WireInt

PROTOCOL_VERSION = 1

Name = Annotated[str, Field(min_length=1, max_length=24, pattern=r"^[A-Za-z0-9_.\-]+$")]
#: A race id a client sends: plain text (it comes from outside), which the hub wraps as a
#: `RaceId` when it takes the request. Ids the server sends are `RaceId`s.
RaceIdText = IdText
Seq = Annotated[int, Field(ge=0, lt=2**53)]
Version = Annotated[int, Field(ge=0, lt=2**53)]
#: A ping's nonce, echoed in the pong: any signed 64-bit integer.
Nonce = Annotated[int, Field(ge=-(2**63), lt=2**63)]


# --- shared pieces -------------------------------------------------------------------------


class PileModel(Message):
    """One pile as its viewer may see it: `down` hidden cards under face-up `cards`."""

    name: str
    down: int
    cards: list[str]


class PileFields(TypedDict):
    """`PileModel` as the codec encodes it (a plain map, same keys in the same order), for
    the move ack's frame, which is built without models (`codec.encode_move_ack`)."""

    name: str
    down: int
    cards: list[str]


class BoardModel(Message):
    """A whole board as a player (or a delayed spectator) sees it."""

    game: str
    piles: list[PileModel]
    round: int
    phase: str
    base_rank: str | None
    on_foundations: int
    total: int
    won: bool
    stuck: bool


class RacerInfo(Message):
    """A seat in a race: who, and how their race stands."""

    player_id: PlayerId
    name: str
    state: RacerStateName
    connected: bool


class RaceInfo(Message):
    """What anyone may know about a race (never the game number before the end)."""

    race_id: RaceId
    game: str
    seats: int
    time_limit_s: int
    rated: bool
    private: bool
    status: RaceStatusName
    creator: PlayerId
    racers: list[RacerInfo]
    created_at_ms: int
    start_at_ms: int | None
    ends_at_ms: int | None
    spectator_delay_ms: int
    #: How long a racer may be away before forfeiting (`gone`), or a seat is given up.
    grace_ms: int
    #: The creator named the deal (casual races only): they may know it.
    deal_chosen: bool = False
    #: A tournament round's deal, shared with the round's other matches: no spectator gets a
    #: board (nor anyone the number) until the round ends.
    deal_held: bool = False


class ProgressEntry(Message):
    """One racer's progress: the only thing opponents learn about another board."""

    player_id: PlayerId
    state: RacerStateName
    on_foundations: int
    total: int
    moves: int
    elapsed_ms: int


class ResultEntry(Message):
    """One line of a race's final ranking (equal ranks are ties)."""

    rank: int
    player_id: PlayerId
    name: str
    state: RacerStateName
    on_foundations: int
    total: int
    elapsed_ms: int


class ReplayMove(Message):
    """One accepted move with its ply and server arrival time."""

    ply: int
    move: str
    at_ms: int


class ReplayRacer(Message):
    """One racer's whole game in a replay."""

    player_id: PlayerId
    name: str
    #: A plain string, unlike the live messages' `RacerStateName`: a replay file is checked,
    #: not trusted, and `solrace verify` reports a state it does not know as a problem.
    state: str
    state_at_ms: int | None
    moves: list[ReplayMove]


class ReplayModel(Message):
    """Everything needed to check a finished race offline (`solrace verify`)."""

    format: Literal["solrace-replay/1"] = "solrace-replay/1"
    race_id: RaceId
    game: str
    game_number: str
    salt: str
    commitment: str
    rated: bool
    time_limit_s: int
    started_at_ms: int
    ends_at_ms: int
    finished_at_ms: int
    racers: list[ReplayRacer]
    results: list[ResultEntry]


# --- client -> server ----------------------------------------------------------------------


class Hello(Message):
    """First message of a connection: a name (new player), a token (returning) or neither
    (an anonymous spectator). A new player may add a `key` it made up and kept: the same name
    and key again get the same player back, should the welcome with its token be lost."""

    type: Literal["hello"] = "hello"
    protocol: WireInt
    name: Name | None = None
    token: Annotated[str, Field(max_length=200)] | None = None
    key: Annotated[str, Field(min_length=16, max_length=100)] | None = None

    @model_validator(mode="after")
    def _key_registers_a_name(self) -> Hello:
        if self.key is not None and (self.name is None or self.token is not None):
            raise ValueError("a key goes with a name and no token (it registers that name)")
        return self


class Ping(Message):
    type: Literal["ping"] = "ping"
    nonce: Nonce = 0


class ListRaces(Message):
    """The live races; with `follow`, the list again whenever it changes (until `follow` is
    false in a later `list_races`, or the connection closes)."""

    type: Literal["list_races"] = "list_races"
    follow: bool = False


class CreateRace(Message):
    type: Literal["create_race"] = "create_race"
    game: ShortText
    #: The server's range (2..`max_seats`) is checked when the race is made.
    seats: WireInt
    #: The server's range (`min_time_limit_s`..`max_time_limit_s`) is checked likewise.
    time_limit_s: WireInt
    rated: bool = False
    invite_code: InviteCode | None = None
    game_number: ShortText | None = None


class JoinRace(Message):
    type: Literal["join_race"] = "join_race"
    race_id: RaceIdText
    invite_code: InviteCode | None = None


class LeaveRace(Message):
    type: Literal["leave_race"] = "leave_race"
    race_id: RaceIdText


class StartRace(Message):
    type: Literal["start_race"] = "start_race"
    race_id: RaceIdText


class MakeMove(Message):
    """A move on the sender's own board; `seq` makes a resend idempotent."""

    type: Literal["move"] = "move"
    race_id: RaceIdText
    seq: Seq
    move: Annotated[str, Field(min_length=1, max_length=32)]


class Resign(Message):
    type: Literal["resign"] = "resign"
    race_id: RaceIdText


class Sync(Message):
    """Resume a race after a reconnect: events after `since_version` of `epoch`, or a
    snapshot. A racer also gets its whole board; anyone else becomes a spectator."""

    type: Literal["sync"] = "sync"
    race_id: RaceIdText
    epoch: ShortText | None = None
    since_version: Version | None = None


class Watch(Message):
    type: Literal["watch"] = "watch"
    race_id: RaceIdText


class Unwatch(Message):
    type: Literal["unwatch"] = "unwatch"
    race_id: RaceIdText


class GetReplay(Message):
    type: Literal["get_replay"] = "get_replay"
    race_id: RaceIdText


ClientMessage = Annotated[
    Hello
    | Ping
    | ListRaces
    | CreateRace
    | JoinRace
    | LeaveRace
    | StartRace
    | MakeMove
    | Resign
    | Sync
    | Watch
    | Unwatch
    | GetReplay
    | GetLeaderboard
    | GetProfile
    | CreateTournament
    | ListTournaments
    | WatchTournament
    | UnwatchTournament
    | JoinTournament
    | CheckIn
    | LeaveTournament
    | TournamentAdmin,
    Field(discriminator="type"),
]


# --- server -> client ----------------------------------------------------------------------


class RateBudgetInfo(Message):
    """A connection's rate budget: `capacity` messages at once, refilled at `refill_per_s`
    (one credit per frame the client sends but a close: a message, each fragment of one, a
    ping, a pong; one more than it holds closes with 1008)."""

    capacity: float
    refill_per_s: float


class Welcome(Message):
    type: Literal["welcome"] = "welcome"
    protocol: int
    player_id: PlayerId | None
    name: str | None
    token: str | None
    ratings: dict[str, float]
    active_races: list[RaceId]
    server_time_ms: int
    #: This connection's rate budget, so that clients (bots) can keep inside it.
    rate: RateBudgetInfo | None = None


class Pong(Message):
    type: Literal["pong"] = "pong"
    nonce: int
    server_time_ms: int


class Error(Message):
    type: Literal["error"] = "error"
    code: str
    message: str
    request: str | None = None
    race_id: RaceId | None = None


class RaceList(Message):
    """The live races (at most the server's list limit, open races first) and how many
    more were left out."""

    type: Literal["race_list"] = "race_list"
    races: list[RaceInfo]
    more: int = 0


class RaceUpdate(Message):
    """Versioned: the race's lobby, status or timing changed."""

    type: Literal["race_update"] = "race_update"
    race_id: RaceId
    epoch: str
    version: int
    race: RaceInfo


class RaceStarted(Message):
    """Versioned: the race runs; the commitment pins the deal without revealing it."""

    type: Literal["race_started"] = "race_started"
    race_id: RaceId
    epoch: str
    version: int
    started_at_ms: int
    ends_at_ms: int
    commitment: str


class Progress(Message):
    """Versioned: one racer's progress changed (cards on foundations, moves, state)."""

    type: Literal["progress"] = "progress"
    race_id: RaceId
    epoch: str
    version: int
    progress: ProgressEntry


class RaceFinished(Message):
    """Versioned: final ranking, and the game number and salt behind the commitment (null
    while the deal is held: a tournament race, whose round's other matches race on)."""

    type: Literal["race_finished"] = "race_finished"
    race_id: RaceId
    epoch: str
    version: int
    finished_at_ms: int
    results: list[ResultEntry]
    game_number: str | None
    salt: str | None
    commitment: str


class RaceSnapshot(Message):
    """The whole public state of a race, sent when missed events are no longer kept."""

    type: Literal["race_snapshot"] = "race_snapshot"
    race_id: RaceId
    epoch: str
    version: int
    race: RaceInfo
    commitment: str | None
    started_at_ms: int | None
    progress: list[ProgressEntry]
    results: list[ResultEntry] | None
    game_number: str | None
    salt: str | None


class Board(Message):
    """A whole board: the receiver's own (live) or, for spectators, a racer's (delayed)."""

    type: Literal["board"] = "board"
    race_id: RaceId
    player_id: PlayerId
    ply: int
    delayed_ms: int
    board: BoardModel


class MoveAck(Message):
    """The move is stored; `piles` are the changed piles as the mover may now see them."""

    type: Literal["move_ack"] = "move_ack"
    race_id: RaceId
    seq: int
    ply: int
    move: str
    at_ms: int
    piles: list[PileModel]
    on_foundations: int
    total: int
    won: bool
    stuck: bool
    duplicate: bool = False


class MoveRejected(Message):
    """The move was refused and changed nothing; `code` and `reason` say why."""

    type: Literal["move_rejected"] = "move_rejected"
    race_id: RaceId
    seq: int
    move: str
    code: str
    reason: str


class Replay(Message):
    type: Literal["replay"] = "replay"
    replay: ReplayModel


ServerMessage = Annotated[
    Welcome
    | Pong
    | Error
    | RaceList
    | RaceUpdate
    | RaceStarted
    | Progress
    | RaceFinished
    | RaceSnapshot
    | Board
    | MoveAck
    | MoveRejected
    | Replay
    | Leaderboard
    | Profile
    | TournamentView
    | TournamentList
    | TournamentRace,
    Field(discriminator="type"),
]

RaceEvent = RaceUpdate | RaceStarted | Progress | RaceFinished
"""The versioned messages: kept in a short per-race history for resync."""

CLIENT_ADAPTER: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)
SERVER_ADAPTER: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)
