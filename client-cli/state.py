"""What the client knows, built only from server messages: a pure reducer, no I/O.

`ClientState.apply(message)` folds every server message into the lobby (race list), each race
the client follows (lobby info, clock, racers' progress, commitment and its check at the end)
and the boards it may see (its own, or every racer's when spectating). The Textual app, the
plain mode and the bots all read this one object.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final, Literal

from solrace.engine import BoardView, EngineError, Move
from solrace.server.protocol import records
from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    Pong,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceInfo,
    RaceList,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    Replay,
    ReplayModel,
    ResultEntry,
    ServerMessage,
    Welcome,
)
from solrace.server.protocol.tournament_messages import (
    CompetitionServerMessage,
    TournamentModel,
    TournamentRace,
    TournamentView,
    tournament_of_race,
)
from solrace.server.protocol.vocab import RacerStateName, RaceStatusName

from .boards import UnusableBoardError, apply_ack, board_from_model
from .wire_text import one_line

log = logging.getLogger(__name__)

LIVE_STATUSES: frozenset[RaceStatusName] = frozenset(s.value for s in records.LIVE_STATUSES)
DONE_STATES: frozenset[RacerStateName] = frozenset(s.value for s in records.DONE_STATES)

#: The client's own word for a race's status (or a bot's state) it has had no word of: no
#: lobby info and no results yet. Never a status or state on the wire.
UNKNOWN: Final = "unknown"
RaceStatusSeen = RaceStatusName | Literal["unknown"]
"""A race's status as the client knows it: the wire's, or `UNKNOWN`."""
#: `ClientState.out_of` for a race whose known racers leave this player out (its seat was
#: given up). Never a state on the wire.
NOT_SEATED: Final = "not seated"


def is_lost(message: object) -> bool:
    """Whether `message` is the server's word that it lost a race (an `unknown_race` error
    naming the race, answering no request)."""
    return (
        isinstance(message, Error)
        and message.code == ErrorCode.UNKNOWN_RACE
        and message.race_id is not None
        and message.request is None
    )


def is_gone(message: object) -> bool:
    """Whether `message` answers a race's `sync` with `unknown_race`: the server no longer has
    the race (lost, or finished and forgotten while this client's link was down)."""
    return (
        isinstance(message, Error)
        and message.code == ErrorCode.UNKNOWN_RACE
        and message.race_id is not None
        and message.request == "sync"
    )


@dataclass(slots=True)
class RacerStatus:
    """One seat as the client sees it: the lobby's facts plus the latest progress."""

    player_id: PlayerId
    name: str
    state: RacerStateName = "joined"
    connected: bool = True
    on_foundations: int = 0
    total: int = 0
    moves: int = 0
    elapsed_ms: int = 0

    @property
    def is_done(self) -> bool:
        return self.state in DONE_STATES

    @property
    def fraction(self) -> float:
        return self.on_foundations / self.total if self.total else 0.0


@dataclass(slots=True)
class RaceState:
    """One race the client plays or watches."""

    race_id: RaceId
    epoch: str | None = None
    version: int = 0
    info: RaceInfo | None = None
    commitment: str | None = None
    started_at_ms: int | None = None
    ends_at_ms: int | None = None
    finished_at_ms: int | None = None
    racers: dict[PlayerId, RacerStatus] = field(default_factory=dict)
    results: list[ResultEntry] | None = None
    game_number: str | None = None
    #: The race ended but its deal stays secret until its tournament round ends.
    deal_held: bool = False
    salt: str | None = None
    #: None until the reveal; then whether sha256(game, number, salt) equals the commitment.
    commitment_ok: bool | None = None
    boards: dict[PlayerId, BoardView] = field(default_factory=dict)
    plies: dict[PlayerId, int] = field(default_factory=dict)
    delays: dict[PlayerId, int] = field(default_factory=dict)
    last_rejection: MoveRejected | None = None
    last_error: Error | None = None
    #: What the server said when it told of this race, live until then, that it lost it (an
    #: `unknown_race` error naming it that answers no request, `is_lost`: a store restarted
    #: without its data): the race cannot go on, and it will have no result.
    lost: str | None = None
    #: What the server answered this race's `sync` with, live until then, when it no longer
    #: had the race (`unknown_race`, `is_gone`: after a reconnect, a race lost unnoticed or
    #: finished and forgotten while the link was down): no longer live, its end unknown here.
    gone: str | None = None
    #: Why the last board (or move ack) the server sent for this race was no board of its
    #: game (`boards.UnusableBoardError`): it was dropped and the board kept as it was; None
    #: again with the next board or ack.
    unusable: str | None = None

    @property
    def game(self) -> str | None:
        return self.info.game if self.info else None

    @property
    def deal_chosen(self) -> bool:
        """The creator named the deal (a casual race's `--game-number`): they may know it."""
        return self.info is not None and self.info.deal_chosen

    @property
    def status(self) -> RaceStatusSeen:
        if self.results is not None:
            return "finished"
        return self.info.status if self.info else UNKNOWN

    @property
    def is_live(self) -> bool:
        """Open, in its countdown or running, as far as the server's news says, and neither
        lost by the server (`lost`) nor gone from it (`gone`)."""
        return self.lost is None and self.gone is None and self.status in LIVE_STATUSES

    @property
    def is_off_server(self) -> bool:
        """The server lost this race (`lost`) or no longer has it (`gone`): no more of its
        news will come."""
        return self.lost is not None or self.gone is not None

    @property
    def is_finished(self) -> bool:
        return self.status in ("finished", "cancelled")

    def remaining_ms(self, server_now_ms: int) -> int | None:
        """Time left on the race clock, or until the start during the countdown."""
        if self.is_finished:
            return 0
        if self.started_at_ms is None and self.info and self.info.start_at_ms is not None:
            return max(0, self.info.start_at_ms - server_now_ms)
        if self.ends_at_ms is None:
            return None
        return max(0, self.ends_at_ms - server_now_ms)

    def elapsed_ms(self, server_now_ms: int) -> int:
        if self.started_at_ms is None:
            return 0
        end = self.finished_at_ms if self.finished_at_ms is not None else server_now_ms
        return max(0, end - self.started_at_ms)

    # --- the reducer ---------------------------------------------------------------------

    def _accepts_version(self, epoch: str, version: int) -> bool:
        """Versioned events apply once, in order; a new epoch (server restart) starts over."""
        if self.epoch != epoch:
            self.epoch = epoch
            self.version = version
            return True
        if version <= self.version:
            return False
        self.version = version
        return True

    def _set_info(self, info: RaceInfo) -> None:
        self.info = info
        if info.start_at_ms is not None and info.status == "running":
            self.started_at_ms = self.started_at_ms or info.start_at_ms
        if info.ends_at_ms is not None:
            self.ends_at_ms = info.ends_at_ms
        seen = set()
        for racer in info.racers:
            seen.add(racer.player_id)
            status = self.racers.get(racer.player_id)
            if status is None:
                status = RacerStatus(racer.player_id, racer.name)
                self.racers[racer.player_id] = status
            status.name = racer.name
            status.state = racer.state
            status.connected = racer.connected
        for player_id in list(self.racers):
            if player_id not in seen:
                del self.racers[player_id]

    def _set_progress(self, entry: ProgressEntry) -> None:
        status = self.racers.get(entry.player_id)
        if status is None:
            status = RacerStatus(entry.player_id, entry.player_id)
            self.racers[entry.player_id] = status
        status.state = entry.state
        status.on_foundations = entry.on_foundations
        status.total = entry.total
        status.moves = entry.moves
        status.elapsed_ms = entry.elapsed_ms

    def _reveal(
        self,
        results: list[ResultEntry],
        game_number: str | None,
        salt: str | None,
        commitment: str,
    ) -> None:
        self.results = results
        if self.commitment is None:
            self.commitment = commitment
        game = self.game
        if game_number is None or salt is None:
            # A tournament round's deal: released when the round ends (`release_deal`); a
            # later message that still holds it does not undo a release already checked.
            self.deal_held = self.commitment_ok is None
            return
        self.game_number = game_number
        self.salt = salt
        # The commitment checked is the one received at the start, not the one at the end.
        self.commitment_ok = (
            game is not None
            and commitment == self.commitment
            and is_commitment_valid(self.commitment, game, game_number, salt)
        )
        for entry in results:
            status = self.racers.get(entry.player_id)
            if status is not None:
                status.state = entry.state
                status.on_foundations = entry.on_foundations
                status.total = entry.total
                status.elapsed_ms = entry.elapsed_ms

    def release_deal(self, replay: ReplayModel) -> None:
        """A held deal released (its tournament round ended): the replay's number and salt,
        checked against the commitment received at the start, not the replay's (which the
        server also wrote)."""
        self.deal_held = False
        self.game_number, self.salt = replay.game_number, replay.salt
        self.commitment_ok = (
            self.commitment is not None
            and replay.commitment == self.commitment
            and (self.game is None or self.game == replay.game)
            and is_commitment_valid(self.commitment, replay.game, replay.game_number, replay.salt)
        )

    def apply(self, message: ServerMessage) -> None:
        """Fold one message about this race into the state."""
        if isinstance(message, RaceUpdate):
            if self._accepts_version(message.epoch, message.version):
                self._set_info(message.race)
        elif isinstance(message, RaceStarted):
            if self._accepts_version(message.epoch, message.version):
                self.commitment = message.commitment
                self.started_at_ms = message.started_at_ms
                self.ends_at_ms = message.ends_at_ms
                for status in self.racers.values():
                    if status.state == "joined":
                        status.state = "playing"
                if self.info is not None:
                    self.info = self.info.model_copy(update={"status": "running"})
        elif isinstance(message, Progress):
            if self._accepts_version(message.epoch, message.version):
                self._set_progress(message.progress)
        elif isinstance(message, RaceFinished):
            if self._accepts_version(message.epoch, message.version):
                self.finished_at_ms = message.finished_at_ms
                if self.info is not None:
                    self.info = self.info.model_copy(update={"status": "finished"})
                self._reveal(message.results, message.game_number, message.salt, message.commitment)
        elif isinstance(message, RaceSnapshot):
            self.epoch = message.epoch
            self.version = message.version
            self.last_error = None  # the server has the race (again)
            self.gone = None
            self._set_info(message.race)
            if message.commitment is not None and self.commitment is None:
                self.commitment = message.commitment
            self.started_at_ms = message.started_at_ms
            for entry in message.progress:
                self._set_progress(entry)
            if message.results is not None:
                self._reveal(
                    message.results,
                    message.game_number,
                    message.salt,
                    message.commitment or self.commitment or "",
                )
        elif isinstance(message, Board):
            try:
                board = board_from_model(message.board)
            except UnusableBoardError as exc:
                racer = self.racers.get(message.player_id)
                self._unusable(f"a board of {racer.name if racer else message.player_id}", exc)
                return
            self.unusable = None  # (a board that can be used makes the one dropped old news)
            self.boards[message.player_id] = board
            self.plies[message.player_id] = message.ply
            self.delays[message.player_id] = message.delayed_ms
        elif isinstance(message, MoveRejected):
            self.last_rejection = message
        elif isinstance(message, Error):
            self.last_error = message
            if is_lost(message) and self.is_live:
                self.lost = message.message
            elif is_gone(message) and self.is_live:
                self.gone = message.message

    def _unusable(self, what: str, exc: UnusableBoardError) -> None:
        """Note (and log) a board from the server that was dropped, unusable."""
        self.unusable = one_line(f"ignored {what} from the server: {exc}")
        log.warning("race %s: %s", self.race_id, self.unusable)

    def apply_ack(self, player_id: PlayerId, ack: MoveAck) -> bool:
        """Apply an ack to `player_id`'s board; False if the board already has that move (or
        its piles make no board of the game: `unusable` says so)."""
        self.unusable = None
        board = self.boards.get(player_id)
        ply = self.plies.get(player_id, 0)
        if board is None or ack.ply < ply:
            return False
        try:
            move = Move.parse(ack.move)
        except EngineError:
            return False
        try:
            self.boards[player_id] = apply_ack(
                board,
                move,
                ack.piles,
                on_foundations=ack.on_foundations,
                total=ack.total,
                won=ack.won,
                stuck=ack.stuck,
            )
        except UnusableBoardError as exc:
            self._unusable(f"the ack of {ack.move}", exc)
            return False
        self.plies[player_id] = ack.ply + 1
        self.last_rejection = None
        # The ack is this racer's own progress (the server's progress batches skip the mover).
        status = self.racers.get(player_id)
        if status is not None:
            status.on_foundations, status.total = ack.on_foundations, ack.total
            status.moves = max(status.moves, ack.ply + 1)
        return True


@dataclass(slots=True)
class ClientState:
    """Everything the client knows: identity, lobby and the races it follows."""

    player_id: PlayerId | None = None
    name: str | None = None
    token: str | None = None
    ratings: dict[str, float] = field(default_factory=dict)
    active_races: list[RaceId] = field(default_factory=list)
    lobby: dict[RaceId, RaceInfo] = field(default_factory=dict)
    #: Live races the server's last list left out (it holds at most 200, the open ones first).
    lobby_more: int = 0
    races: dict[RaceId, RaceState] = field(default_factory=dict)
    replays: dict[RaceId, ReplayModel] = field(default_factory=dict)
    #: The latest view of each tournament watched (the server pushes it whole on every change).
    tournaments: dict[str, TournamentModel] = field(default_factory=dict)
    #: Race id -> the `tournament_race` notice that seated this player in it.
    tournament_races: dict[RaceId, TournamentRace] = field(default_factory=dict)
    #: Race id -> this player's race as a tournament view listed it live, in the shape of a
    #: notice: what a client that connected after the race's `tournament_race` notice (a race
    #: resumed from `welcome.active_races`) knows of its round (`tournament_race`).
    tournament_races_seen: dict[RaceId, TournamentRace] = field(default_factory=dict)
    last_error: Error | None = None

    def race(self, race_id: RaceId) -> RaceState:
        state = self.races.get(race_id)
        if state is None:
            state = RaceState(race_id)
            self.races[race_id] = state
        return state

    def my_board(self, race_id: RaceId) -> BoardView | None:
        race = self.races.get(race_id)
        if race is None or self.player_id is None:
            return None
        return race.boards.get(self.player_id)

    def apply(self, message: ServerMessage) -> RaceId | None:
        """Fold one server message in; returns the race id it concerned, if any. (The
        server's clock is the connection's: `Connection.server_now_ms`.)"""
        if isinstance(message, Welcome):
            self.player_id = message.player_id
            self.name = message.name
            if message.token is not None:
                self.token = message.token
            self.ratings = dict(message.ratings)
            self.active_races = list(message.active_races)
            return None
        if isinstance(message, Pong):
            return None
        if isinstance(message, RaceList):
            self.lobby = {info.race_id: info for info in message.races}
            self.lobby_more = message.more
            return None
        if isinstance(message, Replay):
            replay = message.replay
            self.replays[replay.race_id] = replay
            race = self.races.get(replay.race_id)
            if race is not None and race.deal_held:  # a tournament round's deal, released
                race.release_deal(replay)
            return replay.race_id
        if isinstance(message, Error):
            self.last_error = message
            if message.race_id is None:
                return None
            self.race(message.race_id).apply(message)
            return message.race_id
        if isinstance(message, TournamentView):
            view = message.tournament
            known = self.tournaments.get(view.tournament_id)
            if known is None or view.version >= known.version:
                self.tournaments[view.tournament_id] = view
            self._seen_live(view)
            return None
        if isinstance(message, TournamentRace):
            self.tournament_races[message.race_id] = message
            return message.race_id
        if isinstance(message, CompetitionServerMessage):
            return None  # ratings and lists: not race state
        if isinstance(message, MoveAck):
            if self.player_id is not None:
                self.race(message.race_id).apply_ack(self.player_id, message)
            return message.race_id
        race = self.race(message.race_id)
        race.apply(message)
        info = race.info
        if info is not None:
            if info.status in LIVE_STATUSES:
                self.lobby[info.race_id] = info
            else:
                self.lobby.pop(info.race_id, None)
        return message.race_id

    def _seen_live(self, view: TournamentModel) -> None:
        """Remember this player's live races of a view (the view stops listing them once
        they end, and their round is what a held deal's check waits for)."""
        me = self.player_id
        for live in view.live:
            if me is None or me not in live.players or live.race_id in self.tournament_races:
                continue
            self.tournament_races_seen.setdefault(
                live.race_id,
                TournamentRace(
                    tournament_id=view.tournament_id,
                    match_id=live.match_id,
                    round=live.round,
                    race_number=live.race_number,
                    race_id=live.race_id,
                    players=list(live.players),
                ),
            )

    def tournament_race(self, race_id: RaceId) -> TournamentRace | None:
        """The tournament race this player is seated in: its `tournament_race` notice, else
        what a view's live matches said of it (a race resumed from `welcome.active_races`)."""
        return self.tournament_races.get(race_id) or self.tournament_races_seen.get(race_id)

    def my_tournament_races(self) -> dict[RaceId, TournamentRace]:
        """Every race `tournament_race` knows, by race id."""
        return {**self.tournament_races_seen, **self.tournament_races}

    def tournament_of(self, race_id: RaceId) -> str | None:
        """The tournament a race belongs to: from its notice, else from its id (the server
        names a tournament's races `<tournament id>-<n>`), else None."""
        notice = self.tournament_races.get(race_id)
        if notice is not None:
            return notice.tournament_id
        return tournament_of_race(race_id)

    def out_of(self, race_id: RaceId) -> str | None:
        """Why this player has nothing left to play in `race_id`, as far as the client knows:
        its own state once out (`gone`, `resigned`, `finished`, `stuck`, `timed_out`), or
        `not seated` when the race's racers, once known, leave it out; else None.

        Only the race's own news (a snapshot, a progress, an update) can tell: a race that
        `welcome.active_races` names has no news yet, so this says None for it until a
        `sync` has brought its snapshot. Resuming a race means syncing it, then asking."""
        race = self.races.get(race_id)
        me = self.player_id
        if race is None or me is None:
            return None
        racer = race.racers.get(me)
        if racer is None:
            return None if race.info is None else NOT_SEATED
        return racer.state if racer.is_done else None

    def races_to_play(self, tournament_id: str | None = None) -> list[RaceId]:
        """Live races this player is seated in and not out of (from `welcome.active_races`,
        the `tournament_race` notices and the races it joined here), optionally only those of
        one tournament, oldest first.

        A race only named so far (by the welcome or a notice: no snapshot yet) counts until
        its news says otherwise (`out_of`): whoever resumes one syncs it, then asks again."""
        found: list[RaceId] = []
        me = self.player_id
        joined = [
            race_id for race_id, race in self.races.items() if me is not None and me in race.racers
        ]
        for race_id in [*self.active_races, *self.tournament_races, *joined]:
            if race_id in found:
                continue
            if tournament_id is not None and self.tournament_of(race_id) != tournament_id:
                continue
            race = self.races.get(race_id)
            if race is not None and race.status != UNKNOWN and not race.is_live:
                continue
            if self.out_of(race_id) is not None:  # nothing to play there
                continue
            found.append(race_id)
        return found
