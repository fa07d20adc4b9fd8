"""Putting races in the node's memory and keeping the copies there up with the store.

`RaceLoader` fills the race keeper's `races` (race_sync.py, which owns it): the live races at
start (`recover`; boards rebuilt by replaying the moves), a new race stored with its first
change (`store_new_race`), a race a request names loaded from the store
(`load_race`: one node holds every live race and loads a recently finished one memory lost to
a restart; several nodes load any race, its boards rebuilt from the stored moves, and follow
its channel through the relay), and a player's live races (`load_live_races_of`). It reloads
a copy that fell behind (`refresh`: the relay asks for it on a newer notice or a gap, the tick
for a copy left stale) and forwards what this node's sessions missed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from solrace.server.broker import Subscription
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    MoveRecord,
    RaceRecord,
    RacerState,
    RaceStatus,
)
from solrace.server.race_changes import Change, new_epoch
from solrace.server.race_delivery import RaceDelivery
from solrace.server.race_finish_hooks import FinishHooks
from solrace.server.race_held_deals import HeldDeals
from solrace.server.race_progress import ApplyChange
from solrace.server.race_relay import RaceRelay
from solrace.server.runtime import RaceRuntime
from solrace.server.settings import Settings
from solrace.server.store import Store, StoreError

log = logging.getLogger("solrace.server.race_loading")


class RaceLoader:
    """Loads races into `races` (the keeper's) from `store` and reloads the copies there:
    the live races at start (`recover`; several nodes: their progress caught up with their
    moves by `catch_up_progress`), new races through `apply_to_race` (their first change).
    Several nodes follow each race loaded through `relay` (None on one node). A finished race
    whose deal this copy holds asks `deals` whether it was released; a reload forwards
    through `delivery`, a race the store no longer has goes to `lost`, and one found finished
    after a save whose answer was lost goes to `finish_hooks`. `is_cluster`: several nodes
    may serve the races."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        races: dict[RaceId, RaceRuntime],
        *,
        relay: RaceRelay | None,
        deals: HeldDeals,
        delivery: RaceDelivery,
        finish_hooks: FinishHooks,
        apply_to_race: ApplyChange,
        lost: Callable[[RaceRuntime], None],
        catch_up_progress: Callable[[RaceRuntime], Awaitable[None]],
        clock: Callable[[], int],
        is_cluster: bool,
    ) -> None:
        self.store = store
        self.settings = settings
        self.races = races
        self.relay = relay
        self.deals = deals
        self.delivery = delivery
        self.finish_hooks = finish_hooks
        self.apply_to_race = apply_to_race
        self.lost = lost
        self.catch_up_progress = catch_up_progress
        self.clock = clock
        #: Several nodes may serve this node's races (a broker links them).
        self.is_cluster = is_cluster

    # --- recovery at start ------------------------------------------------------------------

    async def recover(self) -> None:
        """Reload every live race from the store; boards are rebuilt by replaying moves.

        One node: nobody is connected after a restart, so every racer's grace period starts
        now (until stored with the race's next change, a change the store refuses rolls back
        to that, not to the stored record), and events are numbered in a new epoch (progress
        events were not stored).
        Several nodes: racers may be connected elsewhere; this node follows and ticks the
        races (compare-and-set keeps each transition once)."""
        now = self.clock()
        for record in await self.store.list_races(LIVE_STATUSES):
            if record.race_id in self.races:
                continue
            if self.is_cluster:
                runtime = await self.load_followed(record.race_id, record)
                if runtime is None:
                    continue
                race = runtime.race
                await self.catch_up_progress(runtime)
            else:
                moves = await self.store.get_moves(record.race_id) if record.started_at_ms else []
                runtime = self.install_loaded(record, moves)
                race = runtime.race
                race.new_epoch(new_epoch())
                race.restarted(now)
                runtime.sent_epoch, runtime.sent_version = race.epoch, race.version
                self._unsettle_finished_boards(runtime)
                runtime.after_restart = race.to_record()
            log.info("recovered race %s (%s, %s)", race.race_id, race.game, race.status.value)

    @staticmethod
    def _unsettle_finished_boards(runtime: RaceRuntime) -> None:
        """One node: a move that won or got its racer stuck is acknowledged before the board
        is stored, so a crash in between leaves the racer playing in the record. The replayed
        board tells: the keeper's tick stores it (`RaceKeeper._settle_boards`), as after a
        refused store."""
        for player_id, board in runtime.boards.items():
            racer = runtime.race.racers.get(player_id)
            if racer is None or racer.state is not RacerState.PLAYING or not board.move_times:
                continue
            if board.is_over:
                runtime.settle_later(player_id)

    # --- new races -------------------------------------------------------------------------

    async def store_new_race(
        self, record: RaceRecord, first: Change, created_by: PlayerId | None = None
    ) -> None:
        """Store a new race with its first change (the creator's join, a tournament's seats)
        and hold it here. Several nodes: it is followed before it is stored, so a join on
        another node right after is not missed."""
        runtime = RaceRuntime(Race(record, new_epoch(), self.settings.history_size))
        runtime.created_by = created_by
        relay = self.relay
        subscription = None if relay is None else await relay.subscribe(record.race_id)
        try:
            await self.apply_to_race(runtime, first)
        except BaseException:
            if subscription is not None:
                await subscription.close()
            raise
        await self._install_created(runtime, subscription)

    async def _install_created(
        self, runtime: RaceRuntime, subscription: Subscription | None
    ) -> None:
        """Hold a race this node just stored. Several nodes: a request on this node may
        have loaded it from the store while it was being published (a join answering the
        creator's first event); that copy stays the only one, or every event of the race
        would reload a second copy here and be delivered twice to this node's sessions."""
        if self.races.setdefault(runtime.race_id, runtime) is not runtime:
            if subscription is not None:
                await subscription.close()
            return
        if subscription is not None:
            assert self.relay is not None  # it subscribed
            self.relay.follow(runtime, subscription)

    # --- loading and following races ---------------------------------------------------------

    async def load_race(self, race_id: RaceId) -> RaceRuntime | None:
        """This node's copy of a race: the one in memory, else (several nodes) loaded from the
        store, its boards rebuilt from the stored moves, and followed. None if there is none
        (or it was cancelled).

        One node holds every live race; a race that finished within `finished_kept_s` is
        loaded from the store if memory lost it to a restart, so that a late resend or sync
        is answered as it would have been without the restart."""
        runtime = self.races.get(race_id)
        if runtime is not None:
            if (
                self.is_cluster
                and runtime.race.record.deal_held
                and runtime.race.status is RaceStatus.FINISHED
            ):
                await self.deals.take_release(runtime)
            return runtime
        if not self.is_cluster:
            return await self._load_recently_finished(race_id)
        return await self.load_followed(race_id)

    async def load_followed(
        self, race_id: RaceId, record: RaceRecord | None = None
    ) -> RaceRuntime | None:
        """Several nodes: follow the race's notices, then read it from the store (its record,
        unless given, and its moves) and hold it here. None if the store has none (or it was
        cancelled); the copy another request loaded meanwhile, if there is one. Subscribed
        first, so that no change stored meanwhile is missed; unsubscribed again if anything
        fails."""
        assert self.relay is not None  # several nodes only
        subscription = await self.relay.subscribe(race_id)
        try:
            if record is None:
                record = await self.store.get_race(race_id)
            if record is None or record.status is RaceStatus.CANCELLED:
                await subscription.close()
                return None
            moves = await self.store.get_moves(race_id) if record.started_at_ms else []
        except BaseException:
            await subscription.close()
            raise
        runtime = self.races.get(race_id)  # loaded meanwhile by another request
        if runtime is not None:
            await subscription.close()
            return runtime
        runtime = self.install_loaded(record, moves)
        self.relay.follow(runtime, subscription)
        return runtime

    async def _load_recently_finished(self, race_id: RaceId) -> RaceRuntime | None:
        record = await self.store.get_race(race_id)
        kept_from = self.clock() - int(self.settings.finished_kept_s * 1000)
        if (
            record is None
            or record.status is not RaceStatus.FINISHED
            or record.finished_at_ms is None
            or record.finished_at_ms <= kept_from
        ):
            return None
        moves = await self.store.get_moves(race_id)
        runtime = self.races.get(race_id)  # loaded meanwhile by another request
        return runtime if runtime is not None else self.install_loaded(record, moves)

    def install_loaded(self, record: RaceRecord, moves: list[MoveRecord]) -> RaceRuntime:
        race = Race(record, new_epoch(), self.settings.history_size)
        runtime = RaceRuntime(race, saved=record)
        runtime.finished = not race.is_live
        if race.started_at_ms is not None:
            runtime.restore_boards(moves, progress=not self.is_cluster)
        self.races[record.race_id] = runtime
        return runtime

    async def refresh(self, runtime: RaceRuntime, *, reload_boards: bool = False) -> None:
        """Take the stored record (and, if asked, every board from the stored moves) and
        forward what this node's sessions missed (the `relay` asks for it on a notice or a
        gap). A store outage leaves the copy as it is (`stale`): the next notice, gap or tick
        tries again. A copy left stale by a save whose answer was lost (`RaceWriter`) may be
        behind a record this node stored without telling anyone: once reloaded, the other
        nodes get a notice of it, and a race found finished goes to the finish hooks (that
        save may have finished it; a hook run again for a race changes nothing). A race the
        store no longer has (a Redis restarted without its data: after it, every followed
        race is reloaded on the broker's gap) is forgotten here, its sessions told (`lost`)."""
        was_stale = runtime.stale
        try:
            if reload_boards and runtime.race.started_at_ms is not None:
                moves = await self.store.get_moves(runtime.race_id)
                if not runtime.boards:
                    runtime.deal_boards()
                for player_id in list(runtime.boards):
                    # Board first, then race: the order moves take the locks.
                    await runtime.catch_up_board(player_id, moves)
            async with runtime.lock:
                record = await self.store.get_race(runtime.race_id)
                lost = record is None and runtime.saved is not None
                if record is not None and record != runtime.saved:
                    runtime.race.reset_to(record)
                    runtime.saved = record
                if not lost:
                    self.delivery.forward(runtime)
                if was_stale and not lost and self.relay is not None:
                    await self.relay.publish(runtime, ())
        except StoreError as exc:
            runtime.stale = True
            log.warning("race %s: cannot reload (%s)", runtime.race_id, exc)
            return
        runtime.stale = False
        if lost:
            if self.races.get(runtime.race_id) is runtime:
                self.lost(runtime)
            return
        if was_stale and runtime.race.status is RaceStatus.FINISHED:
            await self.finish_hooks.run(runtime)

    # --- a player's races ------------------------------------------------------------------

    def live_races_of(self, player_id: PlayerId) -> list[RaceRuntime]:
        """The live races held here in which `player_id` is a racer."""
        return [rt for rt in self.races.values() if rt.race.is_live and player_id in rt.race.racers]

    async def load_live_races_of(self, player_id: PlayerId) -> list[RaceRuntime]:
        """A player's live races: on several nodes, from the store (loaded here, and the
        player's boards rebuilt from the stored moves: it may have moved elsewhere)."""
        if not self.is_cluster:
            return self.live_races_of(player_id)
        found: list[RaceRuntime] = []
        for record in await self.store.list_races(LIVE_STATUSES):
            if not any(r.player_id == player_id for r in record.racers):
                continue
            runtime = await self.load_race(record.race_id)
            if runtime is None or not runtime.race.is_live:
                continue
            await self.catch_up_racer(runtime, player_id)
            found.append(runtime)
        return found

    async def catch_up_racer(self, runtime: RaceRuntime, player_id: PlayerId) -> None:
        """Several nodes: bring the racer's board in this copy up to the racer's stored moves,
        for a board the racer itself is sent (its hello's races, its sync). Another node may
        have stored moves of the racer that this copy has not heard of: their notice goes
        out with that node's next progress batch, seconds later when the store was away
        meanwhile. A copy that has not seen the race start (its notice is on the way, or was
        lost) has no board of the racer: it takes the stored record first (`refresh`: what
        this node's sessions missed is forwarded, the boards dealt), else the racer's first
        move here was judged on a fresh deal and refused. `StoreError` if the moves cannot be
        read. One node stores every move through its own boards: nothing to read."""
        if not self.is_cluster:
            return
        if player_id not in runtime.boards and runtime.race.is_live:
            await self.refresh(runtime)
        if player_id not in runtime.boards:
            return
        moves = await self.store.get_moves(runtime.race_id)
        await runtime.catch_up_board(player_id, moves)


__all__ = [
    "RaceLoader",
]
