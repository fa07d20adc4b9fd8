"""The races a node holds and every change to them, on one node or on several nodes sharing
Redis: `RaceKeeper`. The hub, the move handler and the node-presence watch change races only
through it (`apply_to_race`).

A change is a function of the race (`Race -> events`). The keeper applies it under the race's
lock, with the race's waiting progress batch ahead of it (so that a finish, a resign or a
time-out ranks on current figures), through the parts it owns, each with one job:
- `writer` (race_writes.py): the change applied and stored by compare-and-set on the race's
  record; of two nodes changing a race from the same record one wins, the other applies its
  change again to the stored record, where a start, a finish or a time-out someone else
  already applied yields no event: each happens once;
- `delivery` (race_delivery.py): the events to this node's sessions, in version order, or a
  snapshot; spectators' delayed boards;
- `progress` (race_progress.py): the moves that only move their racer on, folded into the race
  in batches (`note_progress`) rather than a change each;
- `relay` (race_relay.py; several nodes): a notice on the race's channel for each change
  stored here, and the following of other nodes' changes to the races held here.

The keeper itself recovers the live races at start, runs the race clock (`tick`: due starts,
time-outs and forfeits, boards the store refused, spectators' batches, finished races
forgotten), loads races from the store and reloads a copy that fell behind (`refresh`, which
the relay asks for on a newer notice or a gap), follows deals held for a tournament round,
and calls the finish hooks.

The stored record carries the event numbering (epoch and version) and the recent events, so
any node can serve a resync. One node (no broker) keeps SQLite fast: a change that only moves
a racer's progress on is not stored (a restart recomputes progress by replaying the moves) and
nothing is published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from solrace.server.broker import Broker, Subscription
from solrace.server.lobby import LobbyFeed
from solrace.server.metrics import Metrics
from solrace.server.outage import Outage
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Error, RaceEvent, RaceFinished
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    MoveRecord,
    RaceRecord,
    RacerState,
    RaceStatus,
)
from solrace.server.protocol.tournament_messages import tournament_of_race
from solrace.server.race_changes import (
    Change,
    board_progress,
    new_epoch,
    no_change,
    opening_progress,
)
from solrace.server.race_delivery import RaceDelivery
from solrace.server.race_progress import FOLD_RETRY_S, ProgressBatches
from solrace.server.race_relay import RaceRelay
from solrace.server.race_writes import RaceWriter
from solrace.server.runtime import RaceRuntime, UnstoredConnection
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store, StoreError
from solrace.server.timers import run_every
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.race_sync")

FINISHED_KEPT = 500
#: Finished races are looked for (to be dropped from memory) at most this often.
FORGET_EVERY_MS = 1000


#: What a service does once this node finished a race (ratings, tournaments), given its record.
RaceFinishedHook = Callable[[RaceRecord], Awaitable[None]]


def _then(first: Change, then: Change) -> Change:
    """`first`, then `then`, as one change (one compare-and-set)."""

    def both(race: Race) -> list[RaceEvent]:
        return first(race) + then(race)

    return both


class RaceKeeper:
    """The races this node holds (`races`): it changes them (stored by its `writer`), has
    their events delivered to this node's sessions (those of `players`, kept by the hub) by
    its `delivery`, folds racers' progress in through its `progress`, loads races from the
    store and (several nodes) follows other nodes' changes to them through its `relay`, and
    runs their timers (`tick`).

    It tells the lobby feed when a race's listing may have changed, and calls the finish
    hooks (`add_finish_hook`, `remove_finish_hook`) once for each race this node finished."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        lobby: LobbyFeed,
        players: Mapping[PlayerId, Session],
        *,
        clock: Callable[[], int],
        broker: Broker | None = None,
    ) -> None:
        self.store = store
        self.broker = broker
        self.settings = settings
        self.metrics = metrics
        self.lobby = lobby
        #: Sends the races' events and spectators' boards to the sessions of `players`.
        self.delivery = RaceDelivery(settings, lobby, players, clock=clock, ended=self._ended)
        #: Called, in this order, with each race this node finished (`add_finish_hook`).
        self._finish_hooks: list[RaceFinishedHook] = []
        self.clock = clock
        self.races: dict[RaceId, RaceRuntime] = {}
        #: Finished or stuck boards the store could not take (the tick stores them later).
        self.storing_boards = Outage(log, "storing boards the store refused")
        self.timers = Outage(log, "applying race timers (starts, time-outs, forfeits)")
        #: Several nodes: the races' channels (notices of the changes stored here, and the
        #: following of the races held here); None on one node.
        self.relay = None if broker is None else RaceRelay(broker, self.refresh)
        #: Applies each change and stores it (compare-and-set), delivering its events.
        self.writer = RaceWriter(store, lobby, self.relay, forward=self.delivery.forward)
        #: Racers' progress, folded into their races in batches (`ProgressBatches.note_progress`).
        self.progress = ProgressBatches(
            settings,
            is_cluster=self.is_cluster,
            clock=clock,
            apply=self.apply_to_race,
            forward=self.delivery.forward,
        )
        self._ticker: asyncio.Task[None] | None = None
        self._last_spectator_push = 0
        #: When finished races were last looked for (`_forget_finished`); None: never.
        self._last_forget: int | None = None
        metrics.on_render.append(self._count_races)

    def _ended(self, runtime: RaceRuntime) -> None:
        """The `delivery` forwarded a race's end: a finish is logged, a cancelled race is
        forgotten here."""
        if runtime.race.status is RaceStatus.CANCELLED:
            self._drop(runtime)
        else:
            log.info("race %s finished", runtime.race_id)

    def add_finish_hook(self, hook: RaceFinishedHook) -> None:
        """Call `hook` with each race this node finishes, after the hooks added before it (a
        hook that fails is logged; the next ones still run)."""
        self._finish_hooks.append(hook)

    def remove_finish_hook(self, hook: RaceFinishedHook) -> None:
        """Stop calling `hook` (the first one added equal to it); `ValueError` if it was
        never added."""
        self._finish_hooks.remove(hook)

    @property
    def is_cluster(self) -> bool:
        """Several nodes may serve this node's races (a broker links them)."""
        return self.broker is not None

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover the live races from the store, then run their timers."""
        await self.recover()
        self._ticker = asyncio.create_task(self._tick_forever(), name="solrace-ticker")

    async def stop(self) -> None:
        """Stop the timers; fold the last progress batches in (and store them); stop
        following other nodes' changes."""
        if self._ticker is not None:
            await cancel_and_wait([self._ticker])
            self._ticker = None
        await self.progress.stop(list(self.races.values()))
        if self.relay is not None:
            for runtime in list(self.races.values()):
                await self.relay.unfollow(runtime)

    async def give_up(self) -> None:
        """The node's stop was cut short (`stop` may not have run, or not to its end): the
        timers and the progress folds under way are cancelled and waited for, so that none
        outlives the node; the batches still pending are left."""
        if self._ticker is not None:
            await cancel_and_wait([self._ticker])
            self._ticker = None
        await self.progress.give_up(list(self.races.values()))

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
                runtime = await self._load_followed(record.race_id, record)
                if runtime is None:
                    continue
                race = runtime.race
                await self.catch_up_progress(runtime)
            else:
                moves = await self.store.get_moves(record.race_id) if record.started_at_ms else []
                runtime = self._install_loaded(record, moves)
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
        board tells: the tick stores it (`_settle_boards`), as after a refused store."""
        for player_id, board in runtime.boards.items():
            racer = runtime.race.racers.get(player_id)
            if racer is None or racer.state is not RacerState.PLAYING or not board.move_times:
                continue
            if board.is_over:
                runtime.settle_later(player_id)

    async def catch_up_progress(self, runtime: RaceRuntime) -> None:
        """Several nodes: a node that died between storing a move and its progress left the
        record behind the moves; replaying them tells, and the progress is stored now (or,
        if the store refuses it, by the tick: `store_board`). A board whose lock a move holds
        is left out: that move is on it before it is stored (the store may refuse it, and
        it is taken back), and its handler moves the racer's progress on once it is stored."""
        race = runtime.race
        for player_id in list(runtime.boards):
            board = runtime.boards[player_id]
            if not board.lock.locked() and board.game.ply > race.racers[player_id].moves:
                await self.store_board(runtime, player_id)

    async def store_board(
        self, runtime: RaceRuntime, player_id: PlayerId, moves: Sequence[MoveRecord] = ()
    ) -> None:
        """Store the racer's board in the race now: its figures, and its finish or stuck
        state (several nodes: `moves` published with it). If the store refuses it, the tick
        stores it once the store answers again (`_settle_boards`); it is not raised."""
        change = board_progress(player_id, runtime.boards[player_id])
        try:
            await self.apply_to_race(runtime, change, moves=moves)
        except RaceError as exc:
            runtime.settle_later(player_id, moves)
            self.storing_boards.failed(f"race {runtime.race_id}, {player_id}: {exc}")
        else:
            self.storing_boards.worked()

    async def _settle_boards(self, runtime: RaceRuntime) -> None:
        """Store the finish or stuck board of racers whose move's change the store refused
        (the move itself was stored and acknowledged); `RaceError` while it still refuses."""
        for player_id, moves in sorted(runtime.unsettled.items()):
            board = runtime.boards.get(player_id)
            if board is not None and runtime.race.is_live and board.move_times:
                change = board_progress(player_id, board)
                await self.apply_to_race(runtime, change, moves=moves)
            del runtime.unsettled[player_id]
        self.storing_boards.worked()

    # --- the clock -------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        await run_every(self.settings.tick_s, self.tick, log, "tick")

    async def tick(self) -> None:
        """Apply due transitions (start, time-out, forfeit) and push spectators' boards.

        Every node ticks the races it has loaded; when two apply the same transition, the
        compare-and-set keeps one. A store outage is logged once, not at every tick."""
        now = self.clock()
        push = now - self._last_spectator_push >= self.settings.spectator_batch_s * 1000
        failure: str | None = None
        # Every race is looked at, so the look is kept short: most races have nothing due
        # (their deadline is remembered between changes) and no spectator.
        for runtime in list(self.races.values()):
            race = runtime.race
            due = race.next_deadline()
            if (
                runtime.stale
                or runtime.unsettled
                or runtime.unstored_connections
                or (due is not None and due <= now)
            ):
                try:
                    await self._tick_race(runtime, now)
                except RaceError as exc:
                    if exc.code == ErrorCode.UNAVAILABLE:
                        failure = exc.message
                    elif exc.code == ErrorCode.UNKNOWN_RACE:
                        self._lost(runtime)
                        continue  # gone: no spectators' boards either
                    else:  # e.g. a race cancelled meanwhile
                        log.warning("race %s: tick refused: %s", runtime.race_id, exc.message)
                if self.races.get(runtime.race_id) is not runtime:
                    continue  # forgotten by its reload (the store lost it)
            if push and runtime.spectators and race.is_live:
                self.delivery.push_spectator_boards(runtime, now)
        if push:
            self._last_spectator_push = now
        if failure is not None:
            self.timers.failed(f"{failure} (they wait until the store is back)")
        else:
            self.timers.worked()
        if self._last_forget is None or now - self._last_forget >= FORGET_EVERY_MS:
            self._last_forget = now
            self._forget_finished(now)

    async def _tick_race(self, runtime: RaceRuntime, now: int) -> None:
        """Reload a copy left stale, store what a refused change left unsettled (boards,
        then connections), then apply the transitions due by `now`."""
        if runtime.stale:
            await self.refresh(runtime, reload_boards=True)
            if self.races.get(runtime.race_id) is not runtime:
                return  # forgotten: the store no longer has it
        if runtime.unsettled:
            await self._settle_boards(runtime)
        if runtime.unstored_connections:
            await self._store_connections(runtime)
        race = runtime.race
        due = race.next_deadline()
        if not race.is_live or runtime.is_storing_move or due is None or due > now:
            return

        def change(race: Race) -> list[RaceEvent]:
            events = race.tick(now)
            return events + opening_progress(race, events)

        await self.apply_to_race(runtime, change)

    def _lost(self, runtime: RaceRuntime) -> None:
        """The store no longer has the race (a Redis restarted without its data; races are
        never deleted), so no change of it can be stored again. Its sessions here (racers
        and spectators) are told with an `unknown_race` error naming it, and it is forgotten
        here, so that it is not tried (and its refusal logged) at every tick."""
        log.warning(
            "race %s: the store no longer has it (its data was lost?): forgotten here",
            runtime.race_id,
        )
        gone = Error(
            code=ErrorCode.UNKNOWN_RACE.value,
            message="the server lost this race (its store was restarted without its data)",
            race_id=runtime.race_id,
        )
        for session in self.delivery.recipients(runtime):
            session.send(gone)
        self._drop(runtime)
        self.lobby.changed()

    def _count_races(self) -> None:
        """The races gauge, by status: counted when the metrics are read."""
        counts = {status: 0 for status in RaceStatus}
        for runtime in self.races.values():
            counts[runtime.race.status] += 1
        for status, count in counts.items():
            self.metrics.races.labels(status.value).set(count)

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
            if player_id in runtime.boards:
                moves = await self.store.get_moves(runtime.race_id)
                await runtime.catch_up_board(player_id, moves)
            found.append(runtime)
        return found

    # --- forgetting races ------------------------------------------------------------------

    def _forget_finished(self, now_ms: int) -> None:
        """Drop finished races from memory once `finished_kept_s` old, and the oldest beyond
        `FINISHED_KEPT`. Until then a late resend, watcher or sync is answered from memory;
        after, a finished race is its replay in the store. A race whose deal is held stays
        while spectators watch it here, until its round ends (they get the final boards then:
        `release_deal`); one watched by nobody goes as any other (a later watcher loads it)."""
        cutoff = now_ms - int(self.settings.finished_kept_s * 1000)
        done = sorted(
            (
                rt
                for rt in self.races.values()
                if not rt.race.is_live and not (rt.race.record.deal_held and rt.spectators)
            ),
            key=lambda rt: rt.race.finished_at_ms or 0,
        )
        excess = len(done) - FINISHED_KEPT
        for index, runtime in enumerate(done):
            finished_at = runtime.race.finished_at_ms
            if index < excess or (finished_at is not None and finished_at <= cutoff):
                self._drop(runtime)

    def _drop(self, runtime: RaceRuntime) -> None:
        """Forget a race held here (finished long enough, or cancelled): its armed fold, its
        following of other nodes' notices and what this node's sessions keep of it."""
        race_id = runtime.race_id
        self.delivery.forget(runtime)
        if self.races.get(race_id) is runtime:
            del self.races[race_id]
        self.progress.disarm(runtime)
        if self.relay is not None:
            self.relay.drop(runtime)

    # --- changes ---------------------------------------------------------------------------

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
                    both = change if fold is no_change else _then(fold, change)
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

    async def _store_connections(self, runtime: RaceRuntime) -> None:
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
            await self._run_finish_hooks(runtime)

    async def _run_finish_hooks(self, runtime: RaceRuntime) -> None:
        """The finish hooks, in order, with the race's record (one that fails is logged)."""
        for hook in self._finish_hooks:
            try:
                await hook(runtime.race.to_record())
            except Exception:
                log.exception("race %s: a finish hook failed", runtime.race_id)

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

    # --- several nodes: loading and following races ------------------------------------------

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
                await self._take_release(runtime)
            return runtime
        if not self.is_cluster:
            return await self._load_recently_finished(race_id)
        return await self._load_followed(race_id)

    async def _load_followed(
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
        runtime = self._install_loaded(record, moves)
        self.relay.follow(runtime, subscription)
        return runtime

    async def _take_release(self, runtime: RaceRuntime) -> None:
        """Several nodes: a finished race whose deal this copy holds. The tournament service
        releases it in the store when its round ends, on whichever node (on its own node it
        also tells this keeper: `release_deal`), which this copy does not follow; the store is
        asked (a held deal stays held if it cannot answer)."""
        try:
            record = await self.store.get_race(runtime.race_id)
        except StoreError as exc:
            log.warning("race %s: release of its deal not checked: %s", runtime.race_id, exc)
            return
        if record is not None and not record.deal_held:
            self.release_deal(runtime.race_id)

    async def take_releases(self, tournament_id: str | None = None) -> None:
        """Several nodes: another node changed the tournament `tournament_id` (maybe ending a
        round; None: any tournament, changes may have been missed). Its finished races held
        here whose deal is held and which someone here watches ask the store whether it was
        released, so that their spectators get the final boards now (the node ending the
        round releases only its own copies). The races are read together, not one after
        another: a round of a big tournament has many."""
        waiting = [
            runtime
            for runtime in self.races.values()
            if runtime.spectators
            and runtime.race.record.deal_held
            and runtime.race.status is RaceStatus.FINISHED
            and (tournament_id is None or tournament_of_race(runtime.race_id) == tournament_id)
        ]
        await asyncio.gather(*(self._take_release(runtime) for runtime in waiting))

    def release_deal(self, race_id: RaceId) -> None:
        """The race's deal was released in the store (its tournament round ended): this node's
        copy, if it has one, knows it too, and the race's spectators get the boards held back
        until now."""
        runtime = self.races.get(race_id)
        if runtime is None or not runtime.race.record.deal_held:
            return
        runtime.race.release_deal()
        if runtime.saved is not None:
            runtime.saved = runtime.saved.model_copy(update={"deal_held": False})
        self.delivery.push_spectator_boards(runtime, self.clock(), force=True)

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
        return runtime if runtime is not None else self._install_loaded(record, moves)

    def _install_loaded(self, record: RaceRecord, moves: list[MoveRecord]) -> RaceRuntime:
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
        race is reloaded on the broker's gap) is forgotten here, its sessions told (`_lost`)."""
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
                self._lost(runtime)
            return
        if was_stale and runtime.race.status is RaceStatus.FINISHED:
            await self._run_finish_hooks(runtime)


__all__ = [
    "FINISHED_KEPT",
    "RaceFinishedHook",
    "RaceKeeper",
]
