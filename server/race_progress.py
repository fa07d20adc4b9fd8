"""Racers' progress in batches. A move that only moves its racer on (not won, not stuck) is
not a change of the race each: the figures of the moves of the next `progress_interval_s`
are folded into the race together, one progress event per racer, or at once ahead of any
other change of the race (`RaceApplier.apply_to_race` takes the batch first, so that a finish,
a resign or a time-out ranks on current figures). Each move is answered at once by its ack,
which carries the racer's own figures.

One node never stores a batch of racers still playing (a restart recomputes progress by
replaying the moves): it is folded in place, without a task or the race's lock. Several
nodes store each batch with one compare-and-set (through the keeper) instead of one per
move. A batch the store refuses is folded again after a pause (`FOLD_RETRY_S`).

Every move goes through `note_progress`, so it only notes the move and queues the race's
batch. Every batch waits the same `progress_interval_s`, so the batches wait in one queue in
the order they are due, under one timer of the event loop for the node (not one per race: at a
thousand players the loop's heap would hold ~500 timers, each push and pop comparing them in
Python).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from solrace.server.outage import Outage
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import RaceEvent
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import MoveRecord, RacerState
from solrace.server.race_changes import Change, no_change
from solrace.server.race_writes import RaceBusyError
from solrace.server.runtime import RaceRuntime
from solrace.server.settings import Settings
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.race_progress")

#: Read once: on Python 3.11 an enum member costs ~0.2 us a read (every batch reads it).
_PLAYING: Final = RacerState.PLAYING

#: Seconds before a progress batch the store refused is folded again.
FOLD_RETRY_S = 1.0

#: Apply a change to a race under its lock, taking its pending batch first, store it and
#: deliver its events (`RaceKeeper.apply_to_race`).
ApplyChange = Callable[[RaceRuntime, Change], Awaitable[list[RaceEvent]]]


class QueuedFold:
    """A race's batch waiting in the node's queue for its fold (`RaceRuntime.fold_due`)."""

    __slots__ = ("cancelled", "due_s", "runtime")

    def __init__(self, runtime: RaceRuntime, due_s: float) -> None:
        self.runtime = runtime
        #: When it is due, in the event loop's time.
        self.due_s = due_s
        self.cancelled = False

    def when(self) -> float:
        """When the fold is due, in the event loop's time."""
        return self.due_s

    def cancel(self) -> None:
        """The fold is not due any more: the queue passes it over."""
        self.cancelled = True


class ProgressBatches:
    """The progress batches of a node's races: each race's pending moves (`RaceRuntime.pending`)
    folded in when it is due (`RaceRuntime.fold_due`), through `apply` (a task; one
    node: in place, delivered by `forward`, when the batch is progress only)."""

    def __init__(
        self,
        settings: Settings,
        *,
        is_cluster: bool,
        clock: Callable[[], int],
        apply: ApplyChange,
        forward: Callable[[RaceRuntime], None],
    ) -> None:
        self.settings = settings
        self.is_cluster = is_cluster
        self.clock = clock
        self.apply = apply
        self.forward = forward
        #: Progress batches the store refused (each tried again after a pause).
        self.storing_progress = Outage(log, "storing progress batches")
        #: Progress batches being folded in by a task (see `_fold_soon`).
        self._folds: set[asyncio.Task[None]] = set()
        #: The node has stopped: no fold is armed any more.
        self._stopped = False
        #: Batches due after `progress_interval_s`, in the order they are due.
        self._queue: deque[QueuedFold] = deque()
        #: The loop's timer for the queue's first batch (None: the queue is empty).
        self._queue_timer: asyncio.TimerHandle | None = None

    def note_progress(self, runtime: RaceRuntime, move: MoveRecord) -> None:
        """`move`, stored and acknowledged, only moves its racer on (not won, not stuck): it
        goes into the race's batch, folded in `progress_interval_s` after the batch's first
        move, or at once ahead of any other change of the race."""
        runtime.note_move(move)
        self.arm_fold(runtime)

    def arm_fold(self, runtime: RaceRuntime, delay_s: float | None = None) -> None:
        """Fold the pending batch in `delay_s` (default: the progress interval); not once
        the node has stopped."""
        if runtime.fold_due is not None or self._stopped:
            return
        loop = asyncio.get_running_loop()
        if delay_s is not None:  # a batch tried again: its own timer
            runtime.fold_due = loop.call_later(delay_s, self._fold_soon, runtime)
            return
        queued = QueuedFold(runtime, loop.time() + self.settings.progress_interval_s)
        runtime.fold_due = queued
        self._queue.append(queued)
        if self._queue_timer is None:
            self._queue_timer = loop.call_at(queued.due_s, self._fold_due_batches)

    def _fold_due_batches(self) -> None:
        """The queue's timer fired: fold the batches due by now (the first one is), then
        time the next one."""
        self._queue_timer = None
        queue = self._queue
        if not queue:
            return
        loop = asyncio.get_running_loop()
        # The loop runs a timer up to its clock's resolution early: the first batch is due.
        now = max(loop.time(), queue[0].due_s)
        while queue:
            queued = queue[0]
            if queued.due_s > now and not queued.cancelled:
                self._queue_timer = loop.call_at(queued.due_s, self._fold_due_batches)
                return
            queue.popleft()
            if queued.cancelled:
                continue
            try:
                self._fold_soon(queued.runtime)
            except Exception:  # as the loop does with a callback's: said, the others go on
                log.exception("race %s: progress batch not folded", queued.runtime.race_id)

    def _fold_soon(self, runtime: RaceRuntime) -> None:
        runtime.fold_due = None
        if self._fold_in_place(runtime):
            return
        task = asyncio.create_task(self.fold(runtime), name=f"solrace-fold-{runtime.race_id}")
        self._folds.add(task)
        task.add_done_callback(self._folds.discard)

    async def fold(self, runtime: RaceRuntime) -> None:
        """Fold the pending progress batch into the race now (and store it); if the store
        refuses it, it is tried again after a pause."""
        # The moves are stored and acknowledged; their progress is tried again.
        try:
            events = await self.apply(runtime, no_change)  # the pending figures
        except RaceError as exc:
            if exc.code is ErrorCode.UNAVAILABLE and not isinstance(exc, RaceBusyError):
                # The store is away: the node's outage.
                self.storing_progress.failed(f"race {runtime.race_id}: {exc} (retried)")
            elif not runtime.fold_refused:  # this race's own trouble: once until it passes
                runtime.fold_refused = True
                log.warning("race %s: progress not stored (retried): %s", runtime.race_id, exc)
        else:
            runtime.fold_refused = False
            if events:  # a batch went in (several nodes: through the store), not a no-op
                self.storing_progress.worked()

    def _fold_in_place(self, runtime: RaceRuntime) -> bool:
        """One node, where a batch of racers still playing is progress only and never stored:
        fold it now, without a task or the race's lock (True), unless a change holds the lock
        (its events are not stored yet, and a fold's delivery would send them): then, and on
        several nodes, `fold` runs as a task (False). At a thousand racers a batch is often a
        single move, and its task and lock were ~4% of the node's CPU (py-spy, `bench/`)."""
        if self.is_cluster or runtime.lock.locked():
            return False
        racers = runtime.race.racers
        for player_id in runtime.pending:
            racer = racers.get(player_id)
            if racer is None or racer.state is not _PLAYING:
                return False  # a state to store (a racer out meanwhile): the usual change
        pending, _ = runtime.take_pending()
        if self.folding(runtime, pending)(runtime.race):
            self.forward(runtime)
            self.storing_progress.worked()  # an outage of the stored kind is over too
        return True

    def folding(self, runtime: RaceRuntime, pending: set[PlayerId]) -> Change:
        """The change that folds in the `pending` racers' figures: their boards' stored moves
        (`RacerBoard.record_stored`; a move being stored meanwhile is not counted), read once, the
        same however often a compare-and-set makes the change run again. A racer out of the
        race by then (another node timed the race out, say) keeps the figures it went out with
        (`Race.record_board`), which count every stored move: the batch changes nothing."""
        figures = [
            (p, b.on_foundations, b.game.total_cards, len(b.move_times), b.count_changed_at_ms)
            for p in sorted(pending)
            if (b := runtime.boards.get(p)) is not None
        ]
        if not figures:
            return no_change
        now = self.clock()

        def folded(race: Race) -> list[RaceEvent]:
            events: list[RaceEvent] = []
            for player_id, on, total, moves, changed_at in figures:
                racer = race.racers.get(player_id)
                # Figures behind the race's (another node folded later moves of the racer
                # first, its notice not here yet) would take the racer back: left out.
                if racer is not None and racer.moves <= moves:
                    events += race.record_board(
                        player_id,
                        on_foundations=on,
                        total=total,
                        moves=moves,
                        won=False,
                        stuck=False,
                        now_ms=now,
                        reached_ms=changed_at,
                    )
            return events

        return folded

    def _drop_queue(self) -> None:
        """No batch waits in the queue any more (the node has stopped)."""
        if self._queue_timer is not None:
            self._queue_timer.cancel()
            self._queue_timer = None
        self._queue.clear()

    def disarm(self, runtime: RaceRuntime) -> None:
        """Fold no more of a race the node forgets (its pending moves are left)."""
        if runtime.fold_due is not None:
            runtime.fold_due.cancel()
            runtime.fold_due = None

    async def stop(self, runtimes: Iterable[RaceRuntime]) -> None:
        """The node stops: fold the last batch of each race in (and store it), and wait for
        the folds under way; a fold that fails now is not tried again."""
        self._stopped = True
        self._drop_queue()
        for runtime in runtimes:
            self.disarm(runtime)
            if runtime.pending:  # the last progress batch goes into the race (and the store)
                await self.fold(runtime)
        if self._folds:
            await asyncio.wait(list(self._folds))

    async def give_up(self, runtimes: Iterable[RaceRuntime]) -> None:
        """The node's stop was cut short (its deadline; `stop` may not have run, or not to
        its end): no timer folds a batch any more, and the folds under way are cancelled and
        waited for. Their batches are left (a node starting on the store recomputes them
        from the stored moves)."""
        self._stopped = True
        self._drop_queue()
        for runtime in runtimes:
            self.disarm(runtime)
        await cancel_and_wait(list(self._folds))


__all__ = ["FOLD_RETRY_S", "ApplyChange", "ProgressBatches", "QueuedFold"]
