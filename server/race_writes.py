"""Storing a change to a race: a compare-and-set on its record. A change is a function of the
race (`Race -> events`); it is applied to this node's copy and the new record stored only if
the store still holds the record the copy was loaded from (`save_race_if(new,
expected=old)`). Of two nodes changing a race from the same record one wins; the other takes
the stored record and applies its change again to the fresh copy, where a start, a finish or
a time-out someone else already applied yields no event: each happens once. A store several
nodes share refuses a record that puts a racer out without counting all its stored moves
(another node acknowledged them and holds their progress in a batch): the writer reads the
moves and applies the change again behind their figures, so that a time-out, a forfeit or a
finish ranks on every acknowledged move, whichever node applies it.

`RaceWriter` does this for the race keeper (race_sync.py), which holds the race's lock around
it; after each record stored or taken, this node's sessions get the events they missed
(`forward`), and (several nodes) the other nodes a notice (`RaceRelay.publish`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from solrace.server.lobby import LobbyFeed
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.messages import RaceEvent
from solrace.server.protocol.records import MoveRecord
from solrace.server.race_changes import (
    Change,
    chain,
    is_progress_only,
    new_epoch,
    no_change,
    stored_moves_progress,
)
from solrace.server.race_relay import RaceRelay
from solrace.server.runtime import RaceRuntime
from solrace.server.store import Store, StoreError, UncountedMovesError

CHANGE_ATTEMPTS = 8  # compare-and-set rounds before a change gives up with `unavailable`

log = logging.getLogger("solrace.server.race_writes")


class RaceBusyError(RaceError):
    """The store answered but did not take the change: other nodes kept changing the race
    first (every compare-and-set lost), or it refuses to put a racer out over moves the race
    cannot count. The requester may retry, as for an outage; but it is this race's trouble,
    not an outage of the store."""


class RaceWriter:
    """Applies changes to races and stores them in `store` by compare-and-set; `forward`
    delivers each stored (or taken) record's events to this node's sessions, and `relay`
    (several nodes; None on one) tells the other nodes. One node (no `relay`) does not store
    a change that only moves racers' progress on: a restart recomputes progress by replaying
    the moves."""

    def __init__(
        self,
        store: Store,
        lobby: LobbyFeed,
        relay: RaceRelay | None,
        *,
        forward: Callable[[RaceRuntime], None],
    ) -> None:
        self.store = store
        self.lobby = lobby
        self.relay = relay
        self.forward = forward

    async def apply_and_store(
        self, runtime: RaceRuntime, change: Change, moves: Sequence[MoveRecord]
    ) -> list[RaceEvent]:
        """Apply `change` to the race and store it (several nodes: publishing `moves` with
        it), the race's lock held by the caller; its events. A change the store does not
        take is undone (`roll_back`) and raised: `RaceError` (`unavailable` when the store
        is away, `unknown_race` when it no longer has the race) or `RaceBusyError` when
        other nodes won `CHANGE_ATTEMPTS` rounds in a row, or when the store refuses to put a
        racer out over stored moves that reading them leaves nothing to count for."""
        race = runtime.race
        own_change, own_moves = change, moves
        for _ in range(CHANGE_ATTEMPTS):
            events = change(race)
            if self.relay is None and events and is_progress_only(events):
                self.forward(runtime)
                return events
            record = race.to_record()
            if record == runtime.saved:
                self.forward(runtime)
                return events
            try:
                stored = await self.store.save_race_if(record, runtime.saved)
            except UncountedMovesError as exc:
                # A racer this change puts out has acknowledged moves the race does not count
                # (another node holds their progress in a batch): their figures go in first.
                counted, uncounted = await self._count_stored_moves(runtime)
                if counted is no_change:
                    # The moves read leave nothing to count (the store holds moves it does
                    # not list): reading them again would not either.
                    self.roll_back(runtime)
                    raise RaceBusyError(
                        ErrorCode.UNAVAILABLE,
                        "the store holds moves of a racer it puts out that the race cannot "
                        "count; retry",
                    ) from exc
                change, moves = chain(counted, own_change), [*own_moves, *uncounted]
                continue
            except StoreError as exc:
                if self.relay is not None:
                    # The save may still land (a Redis that froze runs what it was sent
                    # once it runs again), with no notice published: the tick reloads the
                    # race, and the reload tells the other nodes (`RaceLoader.refresh`).
                    runtime.stale = True
                self.roll_back(runtime)
                raise RaceError(ErrorCode.UNAVAILABLE, "the store is unavailable; retry") from exc
            if stored:
                runtime.saved = record
                runtime.after_restart = None
                self.forward(runtime)
                if self.relay is not None:
                    # A change with no event (a hand-over) leaves the version where it was.
                    await self.relay.publish(runtime, moves, reload=not events)
                return events
            # Another node changed the race first: take its record and apply ours again.
            try:
                fresh = await self.store.get_race(runtime.race_id)
            except StoreError as exc:
                self.roll_back(runtime)
                raise RaceError(ErrorCode.UNAVAILABLE, "the store is unavailable; retry") from exc
            if fresh is None:
                self.roll_back(runtime)
                raise RaceError(ErrorCode.UNKNOWN_RACE, f"no race {runtime.race_id!r}")
            race.reset_to(fresh)
            runtime.saved = fresh
            self.forward(runtime)
        raise RaceBusyError(ErrorCode.UNAVAILABLE, "the race is busy; retry")

    async def _count_stored_moves(self, runtime: RaceRuntime) -> tuple[Change, list[MoveRecord]]:
        """The store refused a record putting a racer out without counting all its stored
        moves (`UncountedMovesError`; the record stored is still `runtime.saved`): the race
        goes back to it; the change that brings its racers to the figures of the stored moves
        (`stored_moves_progress`), for the refused change to be applied behind, and the moves
        it counts, to be published with it. Those moves are played on this node's boards too
        (a board whose move is being stored here is left to its move), so that every node's
        final boards show them. A racer whose stored moves do not replay, or that the race
        counts more moves for than are stored, is logged as an error naming the race."""
        race = runtime.race
        saved = runtime.saved
        assert saved is not None  # only a record stored before has racers to put out
        try:
            stored_moves = await self.store.get_moves(runtime.race_id)
        except StoreError as exc:
            self.roll_back(runtime)
            raise RaceError(ErrorCode.UNAVAILABLE, "the store is unavailable; retry") from exc
        race.reset_to(saved)
        counted, uncounted, unplayable, overcounted = stored_moves_progress(race, stored_moves)
        for player_id in unplayable:
            log.error(
                "race %s: a stored move of %s does not replay: counted with the figures the "
                "race has for that racer",
                runtime.race_id,
                player_id,
            )
        for player_id in overcounted:
            log.error(
                "race %s: the race counts more moves of %s than the store holds (moves lost "
                "from the store): its figures are kept as they are",
                runtime.race_id,
                player_id,
            )
        for move in uncounted:
            board = runtime.boards.get(move.player_id)
            if board is None or board.lock.locked():
                continue
            if not runtime.apply_stored_move(move):
                runtime.stale = True  # this board is further behind: the tick reloads it
        return counted, uncounted

    def roll_back(self, runtime: RaceRuntime) -> None:
        """Undo an unstored change: back to the stored record, or to the race as a restart
        left it if nothing was stored since (one node: plus the progress it never stores,
        from the boards, and a new epoch since event numbers were used)."""
        saved = runtime.saved
        if saved is None:
            return  # never stored: the caller drops the race
        race = runtime.race
        version = race.version
        race.reset_to(saved if runtime.after_restart is None else runtime.after_restart)
        self.lobby.changed()  # a list read during the failed save showed the change
        if self.relay is None:
            for player_id in runtime.boards:
                runtime.restore_progress(player_id)
            if race.version < version:
                race.new_epoch(new_epoch())


__all__ = ["CHANGE_ATTEMPTS", "RaceBusyError", "RaceWriter"]
