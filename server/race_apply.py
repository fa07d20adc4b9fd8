"""Applying a change to a race this node holds: the one path every change of a race takes.

A change is a function of the race (`Race -> events`, race_changes.py). `RaceApplier` applies
it under the race's lock, with the race's waiting progress batch ahead of it (so that a
finish, a resign or a time-out ranks on current figures: one node folds the batch in on its
own first, several nodes store it with the change in one compare-and-set), stores it through
the `writer` (race_writes.py), which delivers its events, and hands a race this node finished
to the finish hooks (race_finish_hooks.py). A refused change leaves the batch to be folded on
its own (`race_progress.py`).

A change of a racer's connection that nobody waits on (`apply_or_log`) is logged when
refused, not raised; one the store could not take waits in the race's runtime and the
keeper's tick applies it once the store takes changes again (`store_connections`).

The race keeper (race_sync.py) owns the applier and offers `apply_to_race` and `apply_or_log`
to the node's other parts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import RaceEvent, RaceFinished
from solrace.server.protocol.records import MoveRecord
from solrace.server.race_changes import Change, chain, no_change
from solrace.server.race_finish_hooks import FinishHooks
from solrace.server.race_progress import FOLD_RETRY_S, ProgressBatches
from solrace.server.race_writes import RaceWriter
from solrace.server.runtime import RaceRuntime, UnstoredConnection

log = logging.getLogger("solrace.server.race_apply")


class RaceApplier:
    """Applies changes to the races of a node: each under the race's lock, with the race's
    batch from `progress` ahead of it, stored by `writer` (which delivers the events); a race
    this node finished goes to `finish_hooks`. `is_cluster`: several nodes may serve the
    races (a broker links them)."""

    def __init__(
        self,
        writer: RaceWriter,
        progress: ProgressBatches,
        finish_hooks: FinishHooks,
        *,
        is_cluster: bool,
    ) -> None:
        self.writer = writer
        self.progress = progress
        self.finish_hooks = finish_hooks
        self.is_cluster = is_cluster

    async def apply_to_race(
        self, runtime: RaceRuntime, change: Change, *, moves: Sequence[MoveRecord] = ()
    ) -> list[RaceEvent]:
        """Apply `change` to the race, store it (compare-and-set), deliver its events.

        `RaceError(UNAVAILABLE)` if the store cannot be reached (nothing changed here; the
        request may be sent again) or the race keeps changing under us."""
        async with runtime.lock:
            pending, folded_moves = runtime.take_pending()
            fold = self.progress.folding(runtime, pending)
            events: list[RaceEvent] = []
            try:
                if fold is not no_change and not self.is_cluster:
                    # One node: the batch (progress only, never stored) first, on its own,
                    # so that a refused change leaves it be.
                    events = await self.writer.apply_and_store(runtime, fold, folded_moves)
                    fold, folded_moves = no_change, []
                # Rankings use current figures and events keep their order: the batch goes
                # first. Several nodes: with the change, in one compare-and-set.
                if fold is not no_change or change is not no_change or moves:
                    both = change if fold is no_change else chain(fold, change)
                    events += await self.writer.apply_and_store(
                        runtime, both, [*folded_moves, *moves]
                    )
            except RaceError as exc:
                if fold is not no_change:
                    self.writer.roll_back(runtime)  # a refused change took the batch along
                    # The change's own refusal: the batch goes in on its own at once (one put
                    # back at every refusal, a request refused every second, held it back for
                    # good). The store away: it is tried again, after a pause.
                    if exc.code is ErrorCode.UNAVAILABLE or not await self._fold_alone(
                        runtime, fold, folded_moves
                    ):
                        runtime.put_back(pending, folded_moves)
                        self.progress.arm_fold(runtime, FOLD_RETRY_S)
                raise
        if events:
            await self._changed(runtime, events)
        return events

    async def _fold_alone(
        self, runtime: RaceRuntime, fold: Change, moves: Sequence[MoveRecord]
    ) -> bool:
        """Store and deliver a progress batch on its own (the race's lock held): False if
        the store refused it."""
        try:
            await self.writer.apply_and_store(runtime, fold, moves)
        except RaceError:
            return False
        return True

    async def apply_or_log(
        self,
        runtime: RaceRuntime,
        change: Change,
        player_id: PlayerId,
        what: str,
        *,
        away: bool,
        through: str | None = None,
    ) -> None:
        """`apply_to_race` for a change of `player_id`'s connection that nobody waits on (a
        racer marked back, away, handed over; `away`: it marks the racer away, `through` the
        connection it marks away, if known): a refusal is
        logged ("race R: P not <what>"), not raised. One the store could not take
        (`unavailable`) is applied again by the tick once it takes changes again, before the
        race's due transitions (a racer back during an outage is not put out as `gone`, one
        who left is), with the racer's other changes waiting that can still matter
        (`RaceRuntime.keep_unstored`); one the race refused (it ended meanwhile) is dropped."""
        try:
            await self.apply_to_race(runtime, change)
        except RaceError as exc:
            log.warning("race %s: %s not %s: %s", runtime.race_id, player_id, what, exc)
            if exc.code is ErrorCode.UNAVAILABLE:
                runtime.keep_unstored(UnstoredConnection(change, player_id, what, away, through))

    async def store_connections(self, runtime: RaceRuntime) -> None:
        """Apply the connection changes the store could not take (`apply_or_log`), in the
        order they came; `RaceError(UNAVAILABLE)` while it still cannot take them (the rest
        wait). Each looks at the racer's connection as it is now: a racer marked back through
        a connection closed since, or away through one replaced since, is left as it is. A
        change of the racer refused meanwhile may drop the one being applied (`keep_unstored`):
        the newer one comes after it."""
        while runtime.unstored_connections:
            unstored = runtime.unstored_connections[0]
            player_id, what = unstored.player_id, unstored.what
            try:
                await self.apply_to_race(runtime, unstored.change)
            except RaceError as exc:
                if exc.code is ErrorCode.UNAVAILABLE:
                    raise
                log.warning("race %s: %s not %s: %s", runtime.race_id, player_id, what, exc)
            else:
                log.debug("race %s: %s %s, once stored", runtime.race_id, player_id, what)
            runtime.forget_unstored(unstored)

    async def _changed(self, runtime: RaceRuntime, events: list[RaceEvent]) -> None:
        """After this node stored `events` (once across nodes): a race it finished goes to
        the finish hooks (ratings, tournaments)."""
        if any(isinstance(event, RaceFinished) for event in events):
            await self.finish_hooks.run(runtime)


__all__ = [
    "RaceApplier",
]
