"""Tournaments at run time: requests, the round's races, results, no-shows, restarts.

`TournamentService` is the service a node runs, built in layers of one module each: the one
way to change a tournament (`tournament_changes.py`), the players' and directors' requests on
top of it (`tournament_requests.py`), and here what runs with the node: its start and stop,
the tick, the hub's hooks and the changes other nodes announce.

The hub calls `race_finished` when a race ends; the finishing order (ties share a place) and
cards on foundations become the match's result, except for racers who ended it gone without a
single move: they never showed up, and forfeit as no-shows (as the no-show timer would have
them) instead of counting as racers. `tick` reports players connected during their match as
present and forfeits no-shows once the grace period has passed since the race was requested
(that time is stored with the tournament, so a restart continues the timer; after a restart
nobody is forfeited until `min(no_show_grace, grace_s)` has passed since it: players get the
race's reconnect grace to come back, but no longer than their own no-show grace).
After a restart, `start` reopens requested races that were never stored, feeds results of
races that finished while the tournament was not told, and releases the deals of ended rounds
still held (finished tournaments too: the document notes which rounds may be, `held_deals`).

On several nodes (a broker), each saved change is announced on the broker
(`tournament_relay.py`): the other nodes push the view to their own watchers and hand the
`tournament_race` notices to the seated players connected to them (marking them connected in
the race, as a hello would). Presence counts a player connected to any node: here, or
connected in the stored race record.
"""

from __future__ import annotations

import asyncio
import logging
import random

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.race import absent_racers, placings_of
from solrace.server.protocol.records import LIVE_STATUSES, RaceRecord, RaceStatus
from solrace.server.protocol.tournament_events import TournamentEvent
from solrace.server.protocol.tournament_messages import TournamentRace, tournament_of_race
from solrace.server.protocol.tournament_model import RaceResult
from solrace.server.protocol.tournament_state import Phase
from solrace.server.ratings import RatingService
from solrace.server.session import Session
from solrace.server.store.base import StoreError, StoreUnavailableError, TournamentVersion
from solrace.server.timers import run_every
from solrace.server.tournament_host import RaceHost
from solrace.server.tournament_live import Live
from solrace.server.tournament_relay import ChangeNotice, TournamentRelay
from solrace.server.tournament_requests import TournamentRequests
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.tournaments")


def _version_of(stored: TournamentVersion | None) -> int | None:
    return None if stored is None else stored.version


class TournamentService(TournamentRequests):
    """Tournaments at run time (the module's docstring); the races they request are
    `host`'s: what the service asks of them is all in `RaceHost`."""

    def __init__(
        self, host: RaceHost, ratings: RatingService, rng: random.Random | None = None
    ) -> None:
        super().__init__(host, ratings, rng)
        self._started_at = 0.0
        self._ticker: asyncio.Task[None] | None = None
        #: Tournaments whose stored version (None: not among the open ones) this node cannot
        #: read (written by a newer solrace, or damaged): the tick leaves each alone until its
        #: version changes (`_load_readable`).
        self._unreadable: dict[str, int | None] = {}
        #: The first store outage a tournament met during the tick under way (`_tick_failed`).
        self._tick_outage: StoreUnavailableError | None = None
        #: Why the stored versions could not be read, by a store error that is no outage
        #: (a Redis that refuses the read: BUSY, NOPERM, WRONGTYPE), and the ticks skipped
        #: for it since they last were read (`_versions_refused`).
        self._refusal: str | None = None
        self._refused_ticks = 0

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the unfinished tournaments and bring their races in line (after the hub has
        recovered its races), release the deals finished ones may still hold, then tick. The
        store lists only those (its open tournaments): the settled ones, most of what it holds
        after a while, are not read."""
        self._started_at = self._now()
        broker = self.host.broker
        if broker is not None:  # several nodes: hear the others' changes
            self.relay = TournamentRelay(broker, self.host.node_id, self._remote_change)
            await self.relay.start()
            self.host.on_nodes_gone(self._nodes_gone)
        for record in await self.store.list_open_tournaments():  # the settled ones: nothing to do
            if record.is_finished:
                # A crash between its last round's end and the release of that round's deals
                # left them held; the document says whether any may be.
                if Live.may_hold_deals(record):
                    try:
                        await self._release_held(Live.from_record(record, self._deal))
                    except Exception:
                        log.exception("tournament %s: deals not released", record.tournament_id)
                continue
            live = Live.from_record(record, self._deal)
            self.live[live.tournament_id] = live
            try:
                await self._announce_races(live, await self._resume(live))
            except (RaceError, StoreError) as exc:  # the store away: the tick tries again
                log.warning("tournament %s: not resumed yet: %s", live.tournament_id, exc)
                self._repairs[live.tournament_id] = live
            except Exception:
                log.exception("tournament %s: could not resume", live.tournament_id)
        self._ticker = asyncio.create_task(self._tick_forever(), name="solrace-tournaments")

    async def stop(self) -> None:
        self.views.stop()
        if self._ticker is not None:
            await cancel_and_wait([self._ticker])
            self._ticker = None
        if self.relay is not None:
            await self.relay.stop()
            self.relay = None

    async def _resume(self, live: Live) -> list[TournamentRace]:
        """Open the pending races not stored yet, count the finished ones not counted yet and
        release the deals of ended rounds still held; the notices of the races opened."""
        notices = []
        for match in live.tournament.live_matches():
            race_id = live.pending_race_id(match)
            if race_id is None or match.pending_race is None:
                continue
            stored = await self.store.get_race(race_id)
            if stored is None:
                notice = await self._open_race(live, race_id, match.pending_race, match.match_id)
                if notice is not None:
                    notices.append(notice)
            elif stored.status is RaceStatus.FINISHED:
                await self.race_finished(stored)
        await self._release_held(live)
        log.info("resumed tournament %s (%s)", live.tournament_id, live.tournament.phase.value)
        return notices

    def _nodes_gone(self) -> None:
        """Several nodes: nodes were found gone. The finish hooks run on the node that stored a
        race's finish, so one killed in between left a finished race its tournament has not
        counted (or a pending race unopened): every tournament held here is resumed at the
        next tick, as at a start (`_resume`; counting a race twice is refused)."""
        for tournament_id, live in self.live.items():
            self._repairs.setdefault(tournament_id, live)

    async def _announce_races(self, live: Live, notices: list[TournamentRace]) -> None:
        """Several nodes: the races opened here reach their players connected elsewhere."""
        if notices:
            await self._announce(live.tournament_id, live.version, notices)

    async def _repair(self) -> None:
        """Open the pending races a saved change could not open and release the deals of
        ended rounds still held, for the tournaments a store outage interrupted (`_repairs`):
        each as that change left it, or as this node knows it since if newer (a finished
        tournament is no longer in `live`, and its last round's deals must still be
        released)."""
        for tournament_id, left in list(self._repairs.items()):
            del self._repairs[tournament_id]  # a step that fails again puts it back
            known = self.live.get(tournament_id)
            live = known if known is not None and known.version > left.version else left
            try:
                await self._announce_races(live, await self._resume(live))
            except (RaceError, StoreError) as exc:
                self._tick_failed(tournament_id, "not repaired yet", exc)
                self._repairs.setdefault(tournament_id, live)

    async def _tick_forever(self) -> None:
        await run_every(self.settings.tournament_tick_s, self.tick, log, "tournament tick")

    def _tick_failed(self, tournament_id: str, what: str, exc: Exception) -> None:
        """A step of the tick failed for one tournament, which the tick leaves until the next
        one. A store outage is noted (the first one) for the end of the tick, which raises it
        so that `run_every` says it once until a tick works again: during an outage every
        tick would fail the same way for every tournament. Anything else is a warning."""
        if not isinstance(exc, StoreUnavailableError):
            log.warning("tournament %s: %s: %s", tournament_id, what, exc)
            return
        log.debug("tournament %s: %s: %s", tournament_id, what, exc)
        if self._tick_outage is None:
            self._tick_outage = StoreUnavailableError(f"tournament {tournament_id}: {what}: {exc}")

    async def tick(self) -> None:
        """Finish what a store outage interrupted; mark connected players present; forfeit
        no-shows once the grace has passed.

        A tournament is loaded from the store (and a copy changed and compared) only when the
        one held here says something is due: a player to mark present, or a no-show whose
        grace has passed (`Tournament.has_no_shows_due`). A 256-player Swiss's document is
        ~0.5 MB: loading it for nothing took 0.1-0.2 s of the event loop every tick
        (`bench/tournament_tick.py`). On one node, every change is saved here, so what it
        holds is what is stored; on several, another node's notice may be lost, so the
        stored versions of the open tournaments are read first (one small read a tick, the
        settled ones left out): one saved since is loaded before it is looked at, and an
        unfinished one not held here (created elsewhere, its notice lost) is loaded and held
        from then on.

        A store outage raises `StoreUnavailableError`: at once if the stored versions cannot
        be read, else at the end of the tick, once the other tournaments have had their turn
        (`_tick_failed`). `run_every` then says it once until a tick works again. Another
        store error reading the versions skips the tick, said once while it is the same
        error (`_versions_refused`)."""
        self._tick_outage = None
        await self._repair()
        now = self._now()
        try:
            stored = await self._versions_elsewhere()
        except StoreUnavailableError as exc:
            raise StoreUnavailableError(f"versions unknown: {exc}") from exc
        except StoreError as exc:
            self._versions_refused(exc)
            return
        self._versions_read()
        if stored is not None:
            await self._load_unheard(stored)
        for tournament_id, held in list(self.live.items()):
            live = held
            version = None if stored is None else _version_of(stored.get(tournament_id))
            if stored is not None and version != held.version:
                reloaded = await self._load_readable(tournament_id, version, "reloaded")
                if reloaded is None:
                    continue
                live = reloaded
                self.views.push(live)  # the watchers here had no notice of it either
            if live.tournament.phase is not Phase.RUNNING:
                continue
            # The no-show timer runs from the stored request time (`tick` below); after a
            # restart, players also get the race's reconnect grace to come back.
            grace = live.tournament.settings.no_show_grace or 0.0
            may_forfeit = now - self._started_at >= min(grace, self.settings.grace_s)
            absent: dict[PlayerId, RaceId | None] = {}  # player -> the race of their match
            for match in live.tournament.live_matches():
                missing = [p for p in match.racing if p not in match.present]
                if missing:  # the race is looked up among every race the tournament asked for
                    race_id = live.pending_race_id(match)
                    absent.update(dict.fromkeys(missing, race_id))
            try:
                present = {p for p, rid in absent.items() if await self._is_present(p, rid)}
            except StoreError as exc:
                self._tick_failed(tournament_id, "presence unknown", exc)
                continue
            if not present and not (may_forfeit and live.tournament.has_no_shows_due(now=now)):
                continue  # nothing to change: the store is not read

            def command(
                live: Live, may_forfeit: bool = may_forfeit, present: set[PlayerId] = present
            ) -> list[TournamentEvent]:
                t = live.tournament
                events: list[TournamentEvent] = []
                for match in t.live_matches():
                    for player in match.racing:
                        if player not in match.present and player in present:
                            events += t.report_present(player, now=now)
                return events + (t.tick(now=now) if may_forfeit else [])

            try:
                await self._mutate(tournament_id, command)
            except (RaceError, StoreError) as exc:  # this one's trouble: the others go on
                self._tick_failed(tournament_id, "tick refused", exc)
        if self._tick_outage is not None:
            raise self._tick_outage

    def _versions_refused(self, exc: StoreError) -> None:
        """The stored versions could not be read for a reason other than an outage (Redis
        refused the read): the tick is skipped, and the error is one warning while it stays
        the same (DEBUG for the ticks after), not a line or a traceback every tick."""
        reason = str(exc)
        self._refused_ticks += 1
        if reason == self._refusal:
            log.debug("tournament tick skipped again (%d): %s", self._refused_ticks, reason)
            return
        self._refusal = reason
        log.warning(
            "tournament tick skipped: versions unknown: %s (said once while it fails so)", reason
        )

    def _versions_read(self) -> None:
        """The stored versions were read: after refusals, one line says so."""
        if self._refusal is not None:
            log.warning(
                "tournament tick: versions read again after %d skipped tick(s)",
                self._refused_ticks,
            )
            self._refusal = None
            self._refused_ticks = 0

    async def _versions_elsewhere(self) -> dict[str, TournamentVersion] | None:
        """Several nodes: the stored version of each open tournament (another node may have
        saved one, or created one, this node has not heard of); a tournament held here and
        not among them was settled elsewhere. Only those: the settled ones, which never change
        again, are most of what a store holds after a while. One node: None, since every
        change is saved here."""
        if self.host.broker is None:
            return None
        return {v.tournament_id: v for v in await self.store.open_tournament_versions()}

    async def _load_unheard(self, stored: dict[str, TournamentVersion]) -> None:
        """Load the unfinished tournaments of `stored` not held here: another node created
        them (a creation sends no notice) or their notice was lost. Held from then on and
        resumed, as every unfinished one is at a node's start: the node that saved a race
        request may have died before opening the race, whose players the tick would
        otherwise forfeit as no-shows. One this node cannot read is said once per stored
        version and left alone; the others go on."""
        for tournament_id, version in stored.items():
            if version.finished or tournament_id in self.live:
                continue
            live = await self._load_readable(tournament_id, version.version, "loaded")
            if live is None:
                continue
            log.info("tournament %s: loaded from the store (made on another node)", tournament_id)
            try:
                await self._announce_races(live, await self._resume(live))
            except (RaceError, StoreError) as exc:  # the store away: the tick tries again
                self._tick_failed(tournament_id, "not resumed yet", exc)
                self._repairs[tournament_id] = live
            except Exception:
                log.exception("tournament %s: could not resume", tournament_id)

    async def _load_readable(
        self, tournament_id: str, version: int | None, what: str
    ) -> Live | None:
        """`_load(tournament_id)` for the tick, whose stored version is `version` (None: not
        among the open ones), or None if it failed: the store away (`_tick_failed`; the next
        tick tries again), or a version this node cannot read (written by a newer solrace, or
        damaged: said once, then left alone until its version changes), so that one
        tournament's trouble stops no other's tick. `what` the tick was doing ("loaded")."""
        if tournament_id in self._unreadable and self._unreadable[tournament_id] == version:
            return None
        try:
            live = await self._load(tournament_id)
        except (RaceError, StoreError) as exc:
            self._tick_failed(tournament_id, f"not {what}", exc)
            return None
        except Exception:
            log.exception(
                "tournament %s: version %s cannot be read here (written by a newer solrace, "
                "or damaged): not %s until it changes",
                tournament_id,
                "unknown" if version is None else version,
                what,
            )
            self._unreadable[tournament_id] = version
            return None
        self._unreadable.pop(tournament_id, None)
        return live

    async def _is_present(self, player: PlayerId, race_id: RaceId | None) -> bool:
        """Connected here, or connected in their match's live race (on several nodes the
        stored race says so for a player connected to another node)."""
        if self.host.session_of(player) is not None:
            return True
        if race_id is None:
            return False
        runtime = self.host.held_race(race_id)
        if runtime is not None:
            racer = runtime.race.racers.get(player)
            return racer is not None and racer.connected and runtime.race.is_live
        if self.host.broker is None:  # one node: no other node's racers to ask the store about
            return False
        record = await self.store.get_race(race_id)
        if record is None or record.status not in LIVE_STATUSES:
            return False
        return any(r.player_id == player and r.connected for r in record.racers)

    # --- other nodes' changes --------------------------------------------------------------

    async def _remote_change(self, notice: ChangeNotice | None) -> None:
        """Another node changed a tournament (None: changes may have been missed)."""
        # It may have ended a round (or released a round's deals after an outage).
        await self.host.take_releases(None if notice is None else notice.tournament_id)
        if notice is None:
            wanted = self.views.watched()
        else:
            for race in notice.races:
                await self._seat_here(race)
            tid = notice.tournament_id
            known = self.live.get(tid)
            if known is not None and known.version >= notice.version:
                # This node saved that version or loaded it since (a watch, a refused act:
                # those answer only their requester): nothing to read, but the watchers may
                # not have had it yet (`push` does nothing if they have).
                self.views.push(known)
                return
            # Held here from now on even if nobody here watches it, as every unfinished one is
            # from a node's start: this node's tick then marks presence and forfeits no-shows
            # in it too, also once the node that made it is gone.
            wanted = [tid]
        for tournament_id in wanted:
            try:
                self.views.push(await self._load(tournament_id))
            except (RaceError, StoreError) as exc:
                log.warning("tournament %s: view not refreshed: %s", tournament_id, exc)

    async def _seat_here(self, notice: TournamentRace) -> None:
        """A race another node opened: its seated players connected here are marked
        connected in it (held by this node, as a hello would) and get the notice."""
        here = [(p, s) for p in notice.players if (s := self.host.session_of(p)) is not None]
        if not here:
            return
        try:
            runtime = await self.host.load_race(notice.race_id)
            if runtime is not None and runtime.race.is_live:
                await self.host.mark_connected_here(runtime, here)
        except (RaceError, StoreError) as exc:
            log.warning("race %s: seated players not marked here: %s", notice.race_id, exc)
        for _, session in here:
            session.send(notice)

    # --- the hub's hook --------------------------------------------------------------------

    async def race_finished(self, record: RaceRecord) -> None:
        """A race ended: if it is a tournament's, its finishing order is the match's result,
        if it is the race the match's race number was last requested as. A race voided by a
        correction whose number a later change requested again may still end (late, or
        its finish hooks run at a restart): its result is ignored (logged), not recorded
        as the newer race's."""
        tournament_id = tournament_of_race(record.race_id)
        if tournament_id is None or record.results is None:
            return
        cards = {r.player_id: r.on_foundations for r in record.results}
        groups = placings_of(record)
        result = RaceResult.from_groups(groups, cards)
        absent = list(absent_racers(record))  # no-shows: they forfeit
        now = self._now()

        def command(live: Live) -> list[TournamentEvent]:
            link = live.links.get(record.race_id)
            if link is None:  # not a race of this tournament: nothing changes, nothing saved
                return []
            newest = live.race_id_of(link.match_id, link.race_number)
            if newest != record.race_id:
                # Its race number was requested again (a correction voided the race, a later
                # one reopened the match): the match waits for the newer race, not this one.
                log.info(
                    "tournament %s: race %s not counted: match %s's race %d is now race %s",
                    tournament_id,
                    record.race_id,
                    link.match_id,
                    link.race_number,
                    newest,
                )
                return []
            return live.tournament.record_race(
                link.match_id, link.race_number, result, now=now, absent=absent
            )

        try:
            await self._mutate(tournament_id, command)
        except RaceError as exc:  # e.g. the match was decided meanwhile (a forfeit)
            log.info("tournament %s: race %s not counted: %s", tournament_id, record.race_id, exc)

    async def check_watch(self, session: Session, record: RaceRecord) -> None:
        """A tournament's players may not watch its races until their round ends: the
        round's matches race on one deal, and a board of one (even delayed, or final) shows
        cards another has yet to turn. Anyone else may (an audience). The tournament says
        whether the round has ended (a race held in memory may still say its deal is held)."""
        if not record.deal_held or session.player_id is None:
            return
        tournament_id = tournament_of_race(record.race_id)
        if tournament_id is None:
            return
        try:
            live = await self._load(tournament_id)
        except StoreError as exc:
            raise RaceError(ErrorCode.UNAVAILABLE, "the store is unavailable; retry") from exc
        link = live.links.get(record.race_id)
        rounds = live.tournament.rounds
        if link is None or (
            link.round_number <= len(rounds) and rounds[link.round_number - 1].is_ended
        ):
            return
        if session.player_id in live.tournament.registered:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                "a player of this tournament cannot watch its races until their round ends "
                "(the round's matches race on one deal)",
            )


__all__ = ["TournamentService"]
