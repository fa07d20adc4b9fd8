"""The races a node holds and every change to them, on one node or on several nodes sharing
Redis: `RaceKeeper`. The hub, the move handler and the node-presence watch change races only
through it (`apply_to_race`).

A change is a function of the race (`Race -> events`). The keeper has it applied under the
race's lock, with the race's waiting progress batch ahead of it (so that a finish, a resign or
a time-out ranks on current figures), through the parts it owns, each with one job:
- `applier` (race_apply.py): the one path of every change, under the race's lock, the batch
  ahead of it, stored by the `writer`; a race this node finished to the `finish_hooks`
  (race_finish_hooks.py);
- `writer` (race_writes.py): the change applied and stored by compare-and-set on the race's
  record; of two nodes changing a race from the same record one wins, the other applies its
  change again to the stored record, where a start, a finish or a time-out someone else
  already applied yields no event: each happens once;
- `delivery` (race_delivery.py): the events to this node's sessions, in version order, or a
  snapshot; spectators' delayed boards;
- `progress` (race_progress.py): the moves that only move their racer on, folded into the race
  in batches (`note_progress`) rather than a change each;
- `loader` (race_loading.py): the live races recovered at start, new races, races loaded from
  the store, and the reload of a copy that fell behind (`refresh`, which the relay asks for on
  a newer notice or a gap);
- `deals` (race_held_deals.py): the deals held for a tournament round, and their release;
- `relay` (race_relay.py; several nodes): a notice on the race's channel for each change
  stored here, and the following of other nodes' changes to the races held here.

The keeper itself runs the race clock (`tick`: due starts, time-outs and forfeits, boards the
store refused, spectators' batches, finished races forgotten), stores the boards of racers
who won or got stuck, forgets races (finished long enough, cancelled, or lost by the store),
and offers its parts' entry points to the node's other parts (the hub's, the move handler,
the node watch, the tournament host), which call the keeper alone.

The stored record carries the event numbering (epoch and version) and the recent events, so
any node can serve a resync. One node (no broker) keeps SQLite fast: a change that only moves
a racer's progress on is not stored (a restart recomputes progress by replaying the moves) and
nothing is published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from solrace.server.broker import Broker
from solrace.server.lobby import LobbyFeed
from solrace.server.metrics import Metrics
from solrace.server.outage import Outage
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Error, RaceEvent
from solrace.server.protocol.records import (
    MoveRecord,
    RaceRecord,
    RaceStatus,
)
from solrace.server.race_apply import RaceApplier
from solrace.server.race_changes import (
    Change,
    board_progress,
    race_timers,
)
from solrace.server.race_delivery import RaceDelivery
from solrace.server.race_finish_hooks import FinishHooks, RaceFinishedHook
from solrace.server.race_held_deals import HeldDeals
from solrace.server.race_loading import RaceLoader
from solrace.server.race_progress import ProgressBatches
from solrace.server.race_relay import RaceRelay
from solrace.server.race_writes import RaceBusyError, RaceWriter
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store
from solrace.server.timers import run_every
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.race_sync")

FINISHED_KEPT = 500
#: Finished races are looked for (to be dropped from memory) at most this often.
FORGET_EVERY_MS = 1000
#: Races whose due transitions are applied at once: each its own task, so that a race whose
#: change takes long (a slow store, its lock held) holds up no other race's clock.
TICKS_AT_ONCE = 16


class RaceKeeper:
    """The races this node holds (`races`): it has them changed by its `applier` (stored by
    its `writer`), their events delivered to this node's sessions (those of `players`, kept
    by the hub) by its `delivery`, folds racers' progress in through its `progress`, loads
    races from the store and reloads them through its `loader`, (several nodes) follows other
    nodes' changes to them through its `relay`, and runs their timers (`tick`).

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
        self.finish_hooks = FinishHooks()
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
        #: Every change, under the race's lock with its batch ahead of it (`apply_to_race`).
        self.applier = RaceApplier(
            self.writer, self.progress, self.finish_hooks, is_cluster=self.is_cluster
        )
        #: The deals held for a tournament round, and their release (`release_deal`).
        self.deals = HeldDeals(store, self.races, self.delivery, clock=clock)
        #: New races, races loaded from the store, and reloads (`load_race`, `refresh`).
        self.loader = RaceLoader(
            store,
            settings,
            self.races,
            relay=self.relay,
            deals=self.deals,
            delivery=self.delivery,
            finish_hooks=self.finish_hooks,
            apply_to_race=self.apply_to_race,
            lost=self._lost,
            catch_up_progress=self.catch_up_progress,
            clock=clock,
            is_cluster=self.is_cluster,
        )
        self._ticker: asyncio.Task[None] | None = None
        #: Each race's tick under way (`_tick_one`), by race: the next tick skips the race.
        self._ticking: dict[RaceId, asyncio.Task[None]] = {}
        #: What the race ticks that ended since the last tick found: the store's refusal
        #: (`unavailable`), or None.
        self._ticked: list[str | None] = []
        #: Races whose ticks run at once (each its own compare-and-set round trips).
        self._tick_room = asyncio.Semaphore(TICKS_AT_ONCE)
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
        hook that fails is logged; the next ones still run: `FinishHooks.add`)."""
        self.finish_hooks.add(hook)

    def remove_finish_hook(self, hook: RaceFinishedHook) -> None:
        """Stop calling `hook` (the first one added equal to it); `ValueError` if it was
        never added."""
        self.finish_hooks.remove(hook)

    @property
    def is_cluster(self) -> bool:
        """Several nodes may serve this node's races (a broker links them)."""
        return self.broker is not None

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover the live races from the store, then run their timers."""
        await self.recover()
        self._ticker = asyncio.create_task(self._tick_forever(), name="solrace-ticker")

    async def settle_due(self) -> None:
        """Apply what is already due and wait until it is done, the ticks the ticker started
        meanwhile too: time limits and forfeits that passed while the node was down, starts
        due, and the boards a crash left unsettled (`_tick`). The node's start runs it after
        recovering the races and before it listens (`App.start`), so that its first client
        does not see a race whose time ran out while it was down as still running (in its
        welcome's `active_races`, a `running` snapshot, moves refused `time_up`)."""
        await self._tick(wait=True)
        if ticking := list(self._ticking.values()):
            await asyncio.wait(ticking)

    async def stop(self) -> None:
        """Stop the timers; fold the last progress batches in (and store them); stop
        following other nodes' changes."""
        if self._ticker is not None:
            await cancel_and_wait([self._ticker])
            self._ticker = None
        await self._stop_ticks()
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
        await self._stop_ticks()
        await self.progress.give_up(list(self.races.values()))

    async def recover(self) -> None:
        """Reload every live race from the store: `RaceLoader.recover`."""
        await self.loader.recover()

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
        async def step() -> None:
            await self._tick(wait=False)

        await run_every(self.settings.tick_s, step, log, "tick")

    async def _stop_ticks(self) -> None:
        ticking = list(self._ticking.values())
        self._ticking.clear()
        if ticking:
            await cancel_and_wait(ticking)

    async def tick(self) -> None:
        """Apply due transitions (start, time-out, forfeit) and push spectators' boards;
        return once every race's tick it started has ended."""
        await self._tick(wait=True)

    async def _tick(self, *, wait: bool) -> None:
        """Apply due transitions (start, time-out, forfeit) and push spectators' boards.

        Every node ticks the races it has loaded; when two apply the same transition, the
        compare-and-set keeps one. Each due race is ticked in a task of its own
        (`TICKS_AT_ONCE` at a time), so that a race whose change takes long holds up no other
        race's clock; a race whose tick is still under way is skipped. The node's ticker
        does not wait for them (`wait=False`): the next tick comes on time. A store outage is
        logged once, not at every tick; so is a race whose change the store keeps refusing
        (`RaceBusyError`), naming it, until its tick goes through."""
        now = self.clock()
        push = now - self._last_spectator_push >= self.settings.spectator_batch_s * 1000
        started: list[asyncio.Task[None]] = []
        # Every race is looked at, so the look is kept short: most races have nothing due
        # (their deadline is remembered between changes) and no spectator.
        for runtime in list(self.races.values()):
            if runtime.race_id in self._ticking:
                continue  # its last tick is still under way (it pushes its own boards)
            race = runtime.race
            due = race.next_deadline()
            if (
                runtime.stale
                or runtime.unsettled
                or runtime.unstored_connections
                or (due is not None and due <= now)
            ):
                task = asyncio.create_task(
                    self._tick_one(runtime, now, push), name=f"solrace-tick-{runtime.race_id}"
                )
                self._ticking[runtime.race_id] = task
                started.append(task)
            elif push and runtime.spectators and race.is_live:
                self.delivery.push_spectator_boards(runtime, now)
        if push:
            self._last_spectator_push = now
        if wait and started:
            await asyncio.wait(started)
        ticked, self._ticked = self._ticked, []
        failure = next((f for f in ticked if f is not None), None)
        if failure is not None:
            self.timers.failed(f"{failure} (they wait until the store is back)")
        else:
            self.timers.worked()
        if self._last_forget is None or now - self._last_forget >= FORGET_EVERY_MS:
            self._last_forget = now
            self._forget_finished(now)

    async def _tick_one(self, runtime: RaceRuntime, now: int, push: bool) -> None:
        """One race's tick (`_tick_race`), then its spectators' boards if `push`; what
        became of it goes to `_ticked`."""
        failure: str | None = None
        try:
            async with self._tick_room:
                await self._tick_race(runtime, now)
        except RaceBusyError as exc:
            if not runtime.timers_refused:  # this race's own trouble: once until it passes
                runtime.timers_refused = True
                log.warning("race %s: timers not applied (retried): %s", runtime.race_id, exc)
        except RaceError as exc:
            if exc.code == ErrorCode.UNAVAILABLE:
                failure = exc.message
            elif exc.code == ErrorCode.UNKNOWN_RACE:
                self._lost(runtime)
            else:  # e.g. a race cancelled meanwhile
                log.warning("race %s: tick refused: %s", runtime.race_id, exc.message)
        except Exception:
            log.exception("race %s: tick failed", runtime.race_id)
        else:
            runtime.timers_refused = False
        finally:
            if self._ticking.get(runtime.race_id) is asyncio.current_task():
                del self._ticking[runtime.race_id]
        self._ticked.append(failure)
        # Not for a race its reload forgot (the store lost it).
        forgotten = self.races.get(runtime.race_id) is not runtime
        if push and runtime.spectators and runtime.race.is_live and not forgotten:
            self.delivery.push_spectator_boards(runtime, now)

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
            await self.applier.store_connections(runtime)
        race = runtime.race
        due = race.next_deadline()
        if not race.is_live or runtime.is_storing_move or due is None or due > now:
            return

        await self.apply_to_race(runtime, race_timers(now))

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

    # --- forgetting races ------------------------------------------------------------------

    def _forget_finished(self, now_ms: int) -> None:
        """Drop finished races from memory once `finished_kept_s` old, and the oldest beyond
        `FINISHED_KEPT`. Until then a late resend, watcher or sync is answered from memory;
        after, a finished race is its replay in the store. Its age counts from its finish, or
        from when this node finished it if that is later (a time limit that passed while the
        node was down, applied at its restart: its racers come back after that). A race whose
        deal is held stays while spectators watch it here, until its round ends (they get the
        final boards then: `release_deal`); one watched by nobody goes as any other (a later
        watcher loads it)."""
        cutoff = now_ms - int(self.settings.finished_kept_s * 1000)

        def kept_since(runtime: RaceRuntime) -> int:
            return max(runtime.race.finished_at_ms or 0, runtime.finished_here_ms or 0)

        done = sorted(
            (
                rt
                for rt in self.races.values()
                if not rt.race.is_live
                and not (rt.race.record.deal_held and rt.spectators)
                and rt.race_id not in self._ticking  # dropped once its tick has ended
            ),
            key=kept_since,
        )
        excess = len(done) - FINISHED_KEPT
        for index, runtime in enumerate(done):
            finished_at = runtime.race.finished_at_ms
            if index < excess or (finished_at is not None and kept_since(runtime) <= cutoff):
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

    # --- the parts' entry points -----------------------------------------------------------

    async def apply_to_race(
        self, runtime: RaceRuntime, change: Change, *, moves: Sequence[MoveRecord] = ()
    ) -> list[RaceEvent]:
        """Apply `change` to the race, store it, deliver its events: `RaceApplier.apply_to_race`
        (`RaceError(UNAVAILABLE)` if the store cannot be reached)."""
        return await self.applier.apply_to_race(runtime, change, moves=moves)

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
        """A change of `player_id`'s connection that nobody waits on, a refusal logged (and
        applied again by the tick if the store could not take it): `RaceApplier.apply_or_log`."""
        await self.applier.apply_or_log(
            runtime, change, player_id, what, away=away, through=through
        )

    async def store_new_race(
        self, record: RaceRecord, first: Change, created_by: PlayerId | None = None
    ) -> None:
        """Store a new race with its first change and hold it here: `RaceLoader.store_new_race`."""
        await self.loader.store_new_race(record, first, created_by)

    async def load_race(self, race_id: RaceId) -> RaceRuntime | None:
        """This node's copy of a race, loaded if need be: `RaceLoader.load_race`."""
        return await self.loader.load_race(race_id)

    async def refresh(self, runtime: RaceRuntime, *, reload_boards: bool = False) -> None:
        """Reload a copy from the store and forward what this node's sessions missed:
        `RaceLoader.refresh`."""
        await self.loader.refresh(runtime, reload_boards=reload_boards)

    def live_races_of(self, player_id: PlayerId) -> list[RaceRuntime]:
        """The live races held here in which `player_id` is a racer."""
        return self.loader.live_races_of(player_id)

    async def catch_up_racer(self, runtime: RaceRuntime, player_id: PlayerId) -> None:
        """Several nodes: the racer's board here brought up to its stored moves:
        `RaceLoader.catch_up_racer`."""
        await self.loader.catch_up_racer(runtime, player_id)

    async def load_live_races_of(self, player_id: PlayerId) -> list[RaceRuntime]:
        """A player's live races (several nodes: loaded from the store):
        `RaceLoader.load_live_races_of`."""
        return await self.loader.load_live_races_of(player_id)

    def release_deal(self, race_id: RaceId) -> None:
        """The race's deal was released in the store: `HeldDeals.release_deal`."""
        self.deals.release_deal(race_id)

    async def take_releases(self, tournament_id: str | None = None) -> None:
        """Another node changed a tournament: `HeldDeals.take_releases`."""
        await self.deals.take_releases(tournament_id)


__all__ = [
    "FINISHED_KEPT",
    "RaceKeeper",
]
