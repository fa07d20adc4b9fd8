"""The race state machine: open -> countdown -> running -> finished, pure.

It takes `now` (ms) as an argument, never reads a clock, never touches a board: the hub deals
and validates with the engine and reports each board's progress here. Every change returns the
versioned events it caused; the last `history_size` are kept so a reconnecting client can get
what it missed, else a snapshot.
"""

from __future__ import annotations

import hmac
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Progress,
    ProgressEntry,
    RaceEvent,
    RaceFinished,
    RaceInfo,
    RacerInfo,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    ResultEntry,
)
from solrace.server.protocol.ranking import competition_ranks
from solrace.server.protocol.records import (
    DONE_STATES,
    LIVE_STATUSES,
    RaceRecord,
    RacerRecord,
    RacerState,
    RaceStatus,
)

MIN_PLAYERS_RATED = 2
MIN_PLAYERS_CASUAL = 1

#: Enum members read once, for the checks of every move and progress batch: on Python 3.11
#: `RacerState.PLAYING` costs ~0.2 us a read (the enum's class attribute), a global ~0.02 us.
_PLAYING: Final = RacerState.PLAYING
_RUNNING: Final = RaceStatus.RUNNING

#: A progress event's two models are validated from a map of their fields: the models'
#: keyword `__init__` costs ~0.5 us more each, and every progress batch builds both.
_ENTRY_VALIDATOR = ProgressEntry.__pydantic_validator__
_PROGRESS_VALIDATOR = Progress.__pydantic_validator__

#: How a refusal names where a race stands (`wrong_status`).
STATUS_PHRASES: Final[dict[RaceStatus, str]] = {
    RaceStatus.OPEN: "the race has not started yet",
    RaceStatus.COUNTDOWN: "the race is counting down to its start",
    RaceStatus.RUNNING: "the race is under way",
    RaceStatus.FINISHED: "the race is over",
    RaceStatus.CANCELLED: "the race was cancelled",
}


@dataclass
class Racer:
    """A seat's live state (progress is recomputed by replay after a restart).

    The mutable twin of `RacerRecord`, field for field (tests/server/test_racer_fields.py):
    a field added to one must be added to the other.
    """

    player_id: PlayerId
    name: str
    state: RacerState = RacerState.JOINED
    state_at_ms: int | None = None
    on_foundations: int = 0
    total: int = 0
    moves: int = 0
    reached_at_ms: int = 0
    connected: bool = True
    disconnected_at_ms: int | None = None
    holder: str | None = None

    @classmethod
    def from_record(cls, record: RacerRecord) -> Racer:
        return cls(**dict(record))

    def to_record(self) -> RacerRecord:
        return RacerRecord(**vars(self))

    @property
    def is_done(self) -> bool:
        return self.state in DONE_STATES


@dataclass(frozen=True)
class Opening:
    """A deal's figures before any move: every racer's when the race starts (one deal for
    all). Some games deal cards onto the foundations (colorado 8 of its 104)."""

    on_foundations: int
    total: int
    won: bool
    stuck: bool


def rank_racers(racers: list[Racer], started_at_ms: int) -> list[ResultEntry]:
    """Completed boards by completion time, then the rest by cards on foundations (more is
    better), then by the time that count was reached (earlier is better). Exact ties share a
    rank."""

    def key(racer: Racer) -> tuple[int, int, int]:
        if racer.state is RacerState.FINISHED:
            return (0, 0, (racer.state_at_ms or started_at_ms) - started_at_ms)
        return (1, -racer.on_foundations, racer.reached_at_ms)

    ordered = sorted(racers, key=key)
    keys = [key(racer) for racer in ordered]
    return [
        ResultEntry(
            rank=rank,
            player_id=racer.player_id,
            name=racer.name,
            state=racer.state.value,
            on_foundations=racer.on_foundations,
            total=racer.total,
            elapsed_ms=racer_key[2],
        )
        for racer, racer_key, rank in zip(ordered, keys, competition_ranks(keys), strict=True)
    ]


def placings_of(record: RaceRecord) -> list[list[PlayerId]]:
    """The finishing order as groups of tied players (equal ranks), best first."""
    groups: dict[int, list[PlayerId]] = {}
    for entry in record.results or []:
        groups.setdefault(entry.rank, []).append(entry.player_id)
    return [groups[rank] for rank in sorted(groups)]


def absent_racers(record: RaceRecord) -> set[PlayerId]:
    """The racers who took no part in the race: without a single move, they were away when
    it ended, i.e. never came or left before playing (`gone` once away past the reconnect
    grace; `timed_out` or `stuck` if the race ended first, as a race shorter than the grace
    does). A racer who resigned, or was there when it timed out or got stuck, took part, even
    without a move."""
    return {
        r.player_id
        for r in record.racers
        if r.moves == 0
        and (r.state is RacerState.GONE or (r.state is not RacerState.RESIGNED and not r.connected))
    }


def _same_code(given: str | None, code: str) -> bool:
    """Whether `given` is the race's invite code, compared in constant time (how long the
    comparison takes tells nothing of how much of a guess was right)."""
    return given is not None and hmac.compare_digest(given.encode(), code.encode())


class Race:
    """One race's lifecycle and its versioned event history."""

    def __init__(self, record: RaceRecord, epoch: str, history_size: int = 50) -> None:
        """The race as `record` stores it; `epoch` numbers its events unless the record
        already carries an epoch (then its version and recent events carry on)."""
        self.history: deque[RaceEvent] = deque(maxlen=history_size)
        #: Counts the changes (events, resets): `next_deadline` is worked out once per change.
        self._changes = 0
        self._deadline_at_change = -1
        self._deadline: int | None = None
        #: A race's id never changes (an attribute: read several times a move).
        self.race_id: RaceId = record.race_id
        self.reset_to(record if record.epoch else record.model_copy(update={"epoch": epoch}))

    def reset_to(self, record: RaceRecord) -> None:
        """Become exactly what `record` holds (a newer copy from the store, or a rollback)."""
        if record.race_id != self.race_id:
            raise ValueError(f"race {self.race_id} cannot become race {record.race_id}")
        self._changes += 1
        self.record = record
        self.epoch = record.epoch
        self.version = record.version
        self.history.clear()
        self.history.extend(record.events)
        self.status = record.status
        self.creator = record.creator
        self.start_at_ms = record.start_at_ms
        self.started_at_ms = record.started_at_ms
        self.ends_at_ms = record.ends_at_ms
        self.finished_at_ms = record.finished_at_ms
        self.results = record.results
        self.racers: dict[PlayerId, Racer] = {
            r.player_id: Racer.from_record(r) for r in record.racers
        }

    def release_deal(self) -> None:
        """A held deal (a tournament round's) may be known now: its round ended. No event:
        the race's players learn the deal from the tournament; a snapshot shows it."""
        self.record = self.record.model_copy(update={"deal_held": False})

    def new_epoch(self, epoch: str) -> None:
        """Number events afresh (clients resync with a snapshot): after a restart of a node
        that did not store every event."""
        self._changes += 1
        self.epoch = epoch
        self.history.clear()

    # --- reading -----------------------------------------------------------------------

    @property
    def game(self) -> str:
        return self.record.game

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    def to_record(self) -> RaceRecord:
        return self.record.model_copy(
            update={
                "status": self.status,
                "creator": self.creator,
                "start_at_ms": self.start_at_ms,
                "started_at_ms": self.started_at_ms,
                "ends_at_ms": self.ends_at_ms,
                "finished_at_ms": self.finished_at_ms,
                "results": self.results,
                "racers": [r.to_record() for r in self.racers.values()],
                "epoch": self.epoch,
                "version": self.version,
                "events": list(self.history),
            }
        )

    def info(self) -> RaceInfo:
        return RaceInfo(
            race_id=self.race_id,
            game=self.game,
            seats=self.record.seats,
            time_limit_s=self.record.time_limit_s,
            rated=self.record.rated,
            private=self.record.invite_code is not None,
            status=self.status.value,
            creator=self.creator,
            racers=[
                RacerInfo(
                    player_id=r.player_id, name=r.name, state=r.state.value, connected=r.connected
                )
                for r in self.racers.values()
            ],
            created_at_ms=self.record.created_at_ms,
            start_at_ms=self.start_at_ms,
            ends_at_ms=self.ends_at_ms,
            spectator_delay_ms=self.record.spectator_delay_ms,
            grace_ms=self.record.grace_ms,
            deal_chosen=self.record.deal_chosen,
            deal_held=self.record.deal_held,
        )

    def progress_of(self, racer: Racer, now_ms: int) -> ProgressEntry:
        started = self.started_at_ms or now_ms
        end = racer.state_at_ms if racer.is_done and racer.state_at_ms else now_ms
        if self.ends_at_ms is not None:
            end = min(end, self.ends_at_ms)  # a racer plays no longer than the time limit
        # Validated on purpose: pydantic-core checks these fields faster (~1.4 us) than
        # `model_construct` skips them in Python (~2.4 us, pydantic 2.13). The state's name
        # is its `str` (a `StrEnum`'s value as a plain string: ~0.1 us, `.value` ~0.3 us).
        entry: ProgressEntry = _ENTRY_VALIDATOR.validate_python(
            {
                "player_id": racer.player_id,
                "state": str(racer.state),
                "on_foundations": racer.on_foundations,
                "total": racer.total,
                "moves": racer.moves,
                "elapsed_ms": max(0, end - started),
            }
        )
        return entry

    @property
    def is_deal_revealed(self) -> bool:
        """May anyone know the game number? Only after the finish, and for a held deal (a
        tournament round's) only once it is released."""
        return self.status is RaceStatus.FINISHED and not self.record.deal_held

    def snapshot(self, now_ms: int) -> RaceSnapshot:
        finished = self.status is RaceStatus.FINISHED
        started = self.started_at_ms is not None
        return RaceSnapshot(
            race_id=self.race_id,
            epoch=self.epoch,
            version=self.version,
            race=self.info(),
            commitment=self.record.commitment if started else None,
            started_at_ms=self.started_at_ms,
            progress=[self.progress_of(r, now_ms) for r in self.racers.values()] if started else [],
            results=self.results if finished else None,
            game_number=self.record.game_number if self.is_deal_revealed else None,
            salt=self.record.salt if self.is_deal_revealed else None,
        )

    def events_since(self, epoch: str | None, version: int | None) -> list[RaceEvent] | None:
        """The events after `version`, or None when only a snapshot can resync the client."""
        if epoch != self.epoch or version is None or version > self.version:
            return None
        if version == self.version:
            return []
        oldest = self.history[0].version if self.history else self.version + 1
        if version + 1 < oldest:
            return None
        history = self.history
        missed = self.version - version
        if missed <= len(history) and history[-missed].version == version + 1:
            # Versions only grow along the history, so these are exactly the events after
            # `version` (usually the last one: no scan of the whole history per move).
            return [history[i] for i in range(len(history) - missed, len(history))]
        return [event for event in history if event.version > version]

    def racer(self, player_id: PlayerId) -> Racer:
        racer = self.racers.get(player_id)
        if racer is None:
            raise RaceError(ErrorCode.NOT_IN_RACE, "you are not a racer in this race")
        return racer

    def check_can_move(self, player_id: PlayerId, now_ms: int) -> Racer:
        """The racer if `player_id` may move now, else a `RaceError` saying why."""
        racer = self.racer(player_id)
        if self.status is not _RUNNING:
            raise RaceError(ErrorCode.WRONG_STATUS, STATUS_PHRASES[self.status])
        if self.ends_at_ms is not None and now_ms >= self.ends_at_ms:
            raise RaceError(ErrorCode.TIME_UP, "the time limit is reached")
        if racer.state is not _PLAYING:
            raise RaceError(ErrorCode.NOT_PLAYING, f"your race is over ({racer.state.value})")
        return racer

    # --- events ------------------------------------------------------------------------

    def _emit(self, build: Callable[[int], RaceEvent]) -> RaceEvent:
        # Every change of the race's state emits an event (or is a reset): the mark that the
        # next deadline may have moved.
        self._changes += 1
        self.version += 1
        event = build(self.version)
        self.history.append(event)
        return event

    def _update(self) -> RaceEvent:
        return self._emit(
            lambda v: RaceUpdate(
                race_id=self.race_id, epoch=self.epoch, version=v, race=self.info()
            )
        )

    def _progress(self, racer: Racer, now_ms: int) -> RaceEvent:
        entry = self.progress_of(racer, now_ms)
        return self._emit(
            lambda v: _PROGRESS_VALIDATOR.validate_python(
                {"race_id": self.race_id, "epoch": self.epoch, "version": v, "progress": entry}
            )
        )

    # --- lobby -------------------------------------------------------------------------

    def join(
        self,
        player_id: PlayerId,
        name: str,
        invite_code: str | None,
        now_ms: int,
        holder: str | None = None,
    ) -> list[RaceEvent]:
        """Seat a player, connected through `holder` (see `set_connected`)."""
        if player_id in self.racers:
            raise RaceError(ErrorCode.ALREADY_JOINED, "you already sit in this race")
        if self.status is not RaceStatus.OPEN:
            raise RaceError(ErrorCode.WRONG_STATUS, STATUS_PHRASES[self.status])
        if self.record.invite_code is not None and not _same_code(
            invite_code, self.record.invite_code
        ):
            given = "no invite code" if invite_code is None else "a wrong invite code"
            raise RaceError(ErrorCode.BAD_INVITE, f"this race needs its invite code ({given})")
        if len(self.racers) >= self.record.seats:
            raise RaceError(ErrorCode.RACE_FULL, "every seat is taken")
        self.racers[player_id] = Racer(player_id, name, state_at_ms=now_ms, holder=holder)
        if len(self.racers) == self.record.seats:
            return [self._begin_countdown(now_ms)]
        return [self._update()]

    def leave(self, player_id: PlayerId, now_ms: int) -> list[RaceEvent]:
        self.racer(player_id)
        if self.status is not RaceStatus.OPEN:
            raise RaceError(ErrorCode.WRONG_STATUS, "only an open race can be left; resign")
        del self.racers[player_id]
        if not self.racers:
            return self.cancel(now_ms)
        if player_id == self.creator:
            self.creator = next(iter(self.racers))
        return [self._update()]

    def cancel(self, now_ms: int) -> list[RaceEvent]:
        """Stop a live race with no result (nobody is left in it, or its tournament match was
        decided meanwhile): one `race_update`. A race that has already ended stays as it is."""
        if not self.is_live:
            return []
        self.status = RaceStatus.CANCELLED
        self.finished_at_ms = now_ms
        return [self._update()]

    def request_start(self, player_id: PlayerId, now_ms: int) -> list[RaceEvent]:
        self.racer(player_id)
        if self.status is not RaceStatus.OPEN:
            raise RaceError(ErrorCode.WRONG_STATUS, STATUS_PHRASES[self.status])
        if player_id != self.creator:
            raise RaceError(ErrorCode.NOT_CREATOR, "only the race's creator can start it")
        needed = MIN_PLAYERS_RATED if self.record.rated else MIN_PLAYERS_CASUAL
        if len(self.racers) < needed:
            raise RaceError(ErrorCode.NOT_ENOUGH_PLAYERS, f"a start needs {needed} racers")
        return [self._begin_countdown(now_ms)]

    def _begin_countdown(self, now_ms: int) -> RaceEvent:
        self.status = RaceStatus.COUNTDOWN
        self.start_at_ms = now_ms + self.record.countdown_ms
        return self._update()

    # --- the clock ---------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest time at which `tick` would change something (None: nothing pending).

        The node's timer asks every race at every tick, and a race's deadline moves only when
        the race changes: it is worked out once per change."""
        if self._deadline_at_change != self._changes:
            self._deadline = self._work_out_deadline()
            self._deadline_at_change = self._changes
        return self._deadline

    def _work_out_deadline(self) -> int | None:
        times: list[int] = []
        if self.status is RaceStatus.COUNTDOWN and self.start_at_ms is not None:
            times.append(self.start_at_ms)
        if self.status is RaceStatus.RUNNING and self.ends_at_ms is not None:
            times.append(self.ends_at_ms)
        if self.status in (RaceStatus.OPEN, RaceStatus.RUNNING):
            times.extend(
                r.disconnected_at_ms + self.record.grace_ms
                for r in self.racers.values()
                if r.disconnected_at_ms is not None and not r.is_done
            )
        return min(times) if times else None

    def tick(self, now_ms: int, *, opening: Callable[[], Opening] | None = None) -> list[RaceEvent]:
        """Apply every transition whose time has come. A start records every racer's figures
        on the fresh deal (`opening`, asked only then) before racers past their grace are
        marked gone or the race times out, so that those racers keep them too; without
        `opening`, the caller reports the boards itself."""
        events: list[RaceEvent] = []
        if self.status is RaceStatus.OPEN:
            for racer in list(self.racers.values()):
                if self._is_past_grace(racer, now_ms):
                    events += self.leave(racer.player_id, now_ms)
        start_at = self.start_at_ms
        if self.status is RaceStatus.COUNTDOWN and start_at is not None and now_ms >= start_at:
            events.append(self._start(start_at))
            if opening is not None:
                deal = opening()
                for player_id in list(self.racers):
                    events += self.record_board(
                        player_id,
                        on_foundations=deal.on_foundations,
                        total=deal.total,
                        moves=0,
                        won=deal.won,
                        stuck=deal.stuck,
                        now_ms=start_at,
                    )
        if self.status is RaceStatus.RUNNING:
            for racer in self.racers.values():
                if racer.state is RacerState.PLAYING and self._is_past_grace(racer, now_ms):
                    events += self._set_state(racer, RacerState.GONE, now_ms)
            ends_at = self.ends_at_ms
            if self.status is RaceStatus.RUNNING and ends_at is not None and now_ms >= ends_at:
                for racer in self.racers.values():
                    if racer.state is RacerState.PLAYING:
                        racer.state = RacerState.TIMED_OUT
                        racer.state_at_ms = ends_at
                        events.append(self._progress(racer, now_ms))
                events += self._finish(ends_at)
        return events

    def _is_past_grace(self, racer: Racer, now_ms: int) -> bool:
        gone_at = racer.disconnected_at_ms
        return gone_at is not None and now_ms >= gone_at + self.record.grace_ms

    def _start(self, at_ms: int) -> RaceEvent:
        self.status = RaceStatus.RUNNING
        self.started_at_ms = at_ms
        self.ends_at_ms = at_ms + self.record.time_limit_s * 1000
        for racer in self.racers.values():
            racer.state = RacerState.PLAYING
            racer.state_at_ms = at_ms
        commitment = self.record.commitment
        return self._emit(
            lambda v: RaceStarted(
                race_id=self.race_id,
                epoch=self.epoch,
                version=v,
                started_at_ms=at_ms,
                ends_at_ms=at_ms + self.record.time_limit_s * 1000,
                commitment=commitment,
            )
        )

    def _finish(self, now_ms: int) -> list[RaceEvent]:
        assert self.started_at_ms is not None
        self.status = RaceStatus.FINISHED
        self.finished_at_ms = now_ms
        self.results = rank_racers(list(self.racers.values()), self.started_at_ms)
        results = self.results
        return [
            self._emit(
                lambda v: RaceFinished(
                    race_id=self.race_id,
                    epoch=self.epoch,
                    version=v,
                    finished_at_ms=now_ms,
                    results=results,
                    game_number=None if self.record.deal_held else self.record.game_number,
                    salt=None if self.record.deal_held else self.record.salt,
                    commitment=self.record.commitment,
                )
            )
        ]

    def _set_state(self, racer: Racer, state: RacerState, now_ms: int) -> list[RaceEvent]:
        racer.state = state
        racer.state_at_ms = now_ms
        events = [self._progress(racer, now_ms)]
        if self.status is RaceStatus.RUNNING and all(r.is_done for r in self.racers.values()):
            events += self._finish(now_ms)
        return events

    # --- racers' boards and choices ----------------------------------------------------

    def record_board(
        self,
        player_id: PlayerId,
        *,
        on_foundations: int,
        total: int,
        moves: int,
        won: bool,
        stuck: bool,
        now_ms: int,
        reached_ms: int | None = None,
    ) -> list[RaceEvent]:
        """A racer's board changed (a move, or the deal): publish its progress. The count on
        the foundations was reached at `reached_ms` (the board's last change of its count, even
        if a batch of moves took the count away and back to what this race last had); without
        it, now if the count changed. A racer out of the race keeps the figures it went out
        with (its results): nothing changes, no event."""
        racer = self.racer(player_id)
        if racer.state is not _PLAYING:
            return []
        started = self.started_at_ms or now_ms
        if reached_ms is not None:
            racer.reached_at_ms = max(0, reached_ms - started)
        elif on_foundations != racer.on_foundations:
            racer.reached_at_ms = max(0, now_ms - started)
        racer.on_foundations = on_foundations
        racer.total = total
        racer.moves = moves
        if won:
            return self._set_state(racer, RacerState.FINISHED, now_ms)
        if stuck:
            return self._set_state(racer, RacerState.STUCK, now_ms)
        return [self._progress(racer, now_ms)]

    def resign(self, player_id: PlayerId, now_ms: int) -> list[RaceEvent]:
        self.check_can_move(player_id, now_ms)
        return self._set_state(self.racers[player_id], RacerState.RESIGNED, now_ms)

    def hand_over(self, player_id: PlayerId, old: str, new: str) -> list[RaceEvent]:
        """The racer's connection `old` was replaced by `new` (on another node): `new` holds
        the racer now, if `old` still did (no event: the racer stays connected)."""
        racer = self.racers.get(player_id)
        if racer is not None and self.is_live and racer.holder == old:
            racer.holder = new
        return []

    def set_connected(
        self, player_id: PlayerId, connected: bool, now_ms: int, holder: str | None = None
    ) -> list[RaceEvent]:
        """A racer's socket came or went; a racer away longer than the grace forfeits.

        `holder` names the connection (node and session): a racer who reconnected elsewhere
        is not marked away when the old connection's node notices it closed."""
        racer = self.racers.get(player_id)
        if racer is None or not self.is_live:
            return []
        if connected:
            racer.holder = holder
        elif holder is not None and racer.holder is not None and racer.holder != holder:
            return []
        if racer.connected == connected:
            return []
        racer.connected = connected
        racer.disconnected_at_ms = None if connected else now_ms
        return [self._update()]

    def restarted(self, now_ms: int) -> list[RaceEvent]:
        """The node holding the race restarted at `now_ms` (one node): nobody is connected,
        and every racer still in it has the grace period from now to come back, one away
        before the restart too (it could not reconnect while the node was down). A
        `race_update` for each racer that was connected."""
        events: list[RaceEvent] = []
        if not self.is_live:
            return events
        for racer in self.racers.values():
            if racer.connected:
                events += self.set_connected(racer.player_id, False, now_ms)
            elif not racer.is_done and (racer.disconnected_at_ms or now_ms) < now_ms:
                racer.disconnected_at_ms = now_ms
                self._changes += 1  # its grace deadline moved
        return events

    def restore_progress(
        self, player_id: PlayerId, on_foundations: int, total: int, moves: int, reached_at_ms: int
    ) -> None:
        """After a restart: progress recomputed by replaying the stored moves (no event)."""
        racer = self.racer(player_id)
        racer.on_foundations = on_foundations
        racer.total = total
        racer.moves = moves
        racer.reached_at_ms = reached_at_ms
