"""Tournaments at run time: requests, the round's races, results, no-shows, restarts.

The rules are pure (`protocol/tournament.py`); this service loads a tournament's document
from the store, applies one command to it, saves it with a compare-and-set on its version
(so of two nodes moving one tournament on, one wins and the other reloads and tries again),
and only then acts on the events: it opens each requested race through its race host (the
hub's races, `tournament_host.py`; `Hub.open_seated_race`: the match's players seated, the
round's secret deal), tells the seated players (`tournament_race`) and pushes the new view to
the tournament's watchers.

The hub calls `race_finished` when a race ends; the finishing order (ties share a place) and
cards on foundations become the match's result, except for racers who ended it gone without a
single move: they never showed up, and forfeit as no-shows (as the no-show timer would have
them) instead of counting as racers. A race whose match was decided meanwhile (a
forfeit, a drop-out, an admin correction: `RaceCancelled`) is stopped: cancelled through the
hub like any race change, so its racers and spectators see it end, and it neither counts nor
changes ratings. `tick` reports players connected during their match as present and forfeits
no-shows once the grace period has passed since the race was requested (that time is stored
with the tournament, so a restart continues the timer; after a restart nobody is forfeited
until `min(no_show_grace, grace_s)` has passed since it: players get the race's reconnect
grace to come back, but no longer than their own no-show grace).
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
import hmac
import logging
import random
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from solrace.engine import random_ranked_number
from solrace.server.identities import identity_of
from solrace.server.keyed_locks import KeyedLocks
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.pairing import Format, FormatRules, RaceResult
from solrace.server.protocol.race import absent_racers, placings_of
from solrace.server.protocol.records import LIVE_STATUSES, RaceRecord, RaceStatus
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import (
    MatchId,
    TournamentError,
    TournamentId,
    WrongPhaseError,
)
from solrace.server.protocol.tournament_events import (
    RaceCancelled,
    RaceRequested,
    RoundEnded,
    TournamentEvent,
)
from solrace.server.protocol.tournament_messages import (
    TOURNAMENT_ID_PREFIX,
    TOURNAMENT_LIST_LIMIT,
    CheckIn,
    CreateTournament,
    JoinTournament,
    LeaveTournament,
    ListTournaments,
    TournamentAdmin,
    TournamentList,
    TournamentRace,
    TournamentSummary,
    UnwatchTournament,
    WatchTournament,
    tournament_of_race,
    tournament_race_id,
)
from solrace.server.protocol.tournament_model import format_rules
from solrace.server.protocol.tournament_state import Phase, TournamentSettings
from solrace.server.protocol.tournament_view import build_summary, largest_field
from solrace.server.race_setup import check_race_settings, new_race_record
from solrace.server.ratings import RatingService
from solrace.server.routing import Handler
from solrace.server.session import Session
from solrace.server.store.base import StoreError, TournamentVersion
from solrace.server.timers import run_every
from solrace.server.tournament_host import RaceHost
from solrace.server.tournament_live import (
    Command,
    Live,
    RaceLink,
    admin_command,
    cancel_race,
    refusal,
)
from solrace.server.tournament_relay import ChangeNotice, TournamentRelay
from solrace.server.tournament_views import TournamentViews
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.tournaments")

SAVE_ATTEMPTS = 8
#: Tournament summaries kept for lists (`TournamentService._summaries`): a few lists' worth
#: (`TOURNAMENT_LIST_LIMIT` each), whatever the number of tournaments a server has held.
SUMMARIES_KEPT = 4 * TOURNAMENT_LIST_LIMIT


def _version_of(stored: TournamentVersion | None) -> int | None:
    return None if stored is None else stored.version


@dataclass(frozen=True)
class _Summary:
    """A tournament's summary for `list_tournaments` and the version it shows: it stands
    while the store lists that version of the tournament."""

    version: int
    summary: TournamentSummary

    def is_of(self, version: int) -> bool:
        return self.version == version


@dataclass(frozen=True)
class _Saved:
    """A saved change: the tournament as saved, the events that changed it, and the races
    they requested by the id each was given (linked in the saved document)."""

    live: Live
    events: list[TournamentEvent]
    races: dict[RaceId, RaceRequested]


def _link_races(live: Live, events: list[TournamentEvent]) -> dict[RaceId, RaceRequested]:
    """Give each race `events` request the tournament's next race id, linked to its match in
    `live`: the requests by their ids."""
    races = {}
    for event in events:
        if isinstance(event, RaceRequested):
            race_id = tournament_race_id(live.tournament_id, live.next_race)
            live.next_race += 1
            live.links[race_id] = RaceLink(event.match_id, event.round_number, event.race_number)
            races[race_id] = event
    return races


class TournamentService:
    """Tournaments at run time (the module's docstring); the races they request are
    `host`'s: what the service asks of them is all in `RaceHost`."""

    def __init__(
        self, host: RaceHost, ratings: RatingService, rng: random.Random | None = None
    ) -> None:
        self.host = host
        self.store = self.host.store
        self.settings = self.host.settings
        self.ratings = ratings
        self.rng = rng or random.SystemRandom()
        self.live: dict[str, Live] = {}
        self._locks = KeyedLocks()
        self._started_at = 0.0
        self._ticker: asyncio.Task[None] | None = None
        #: Each watched tournament's watchers and the views that go to them and requesters.
        self.views = TournamentViews(self.settings.tournament_view_push_s)
        #: Summaries for `list_tournaments` and the version each shows, the latest used last:
        #: at most `SUMMARIES_KEPT`.
        self._summaries: OrderedDict[str, _Summary] = OrderedDict()
        #: Tournaments a saved change left with a race not opened or deals not released (the
        #: store was away), each as that change left it: the tick tries again.
        self._repairs: dict[str, Live] = {}
        #: Tournaments whose stored version (None: not among the open ones) this node cannot
        #: read (written by a newer solrace, or damaged): the tick leaves each alone until its
        #: version changes (`_load_readable`).
        self._unreadable: dict[str, int | None] = {}
        self.relay: TournamentRelay | None = None

    @property
    def handlers(self) -> dict[type[Any], Handler]:
        return {
            CreateTournament: self._create,
            ListTournaments: self._list,
            WatchTournament: self._watch,
            UnwatchTournament: self._unwatch,
            JoinTournament: self._join,
            CheckIn: self._check_in,
            LeaveTournament: self._leave,
            TournamentAdmin: self._admin,
        }

    def _deal(self, round_number: int, race_number: int) -> str:
        return random_ranked_number(self.rng)

    def _now(self) -> float:
        return self.host.clock() / 1000

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

    async def _announce(
        self, tournament_id: str, version: int, notices: list[TournamentRace]
    ) -> None:
        """Several nodes: the others hear that the tournament changed (saved as `version`,
        opening the races of `notices`); one node: nothing to do."""
        if self.relay is not None:
            await self.relay.publish(tournament_id, version, notices)

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
                log.warning("tournament %s: not repaired yet: %s", tournament_id, exc)
                self._repairs.setdefault(tournament_id, live)

    async def _tick_forever(self) -> None:
        await run_every(self.settings.tournament_tick_s, self.tick, log, "tournament tick")

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
        from then on."""
        await self._repair()
        now = self._now()
        try:
            stored = await self._versions_elsewhere()
        except StoreError as exc:
            log.warning("tournament tick skipped: versions unknown: %s", exc)
            return
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
                log.warning("tournament %s: presence unknown: %s", tournament_id, exc)
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
                log.warning("tournament %s: tick refused: %s", tournament_id, exc)

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
                log.warning("tournament %s: not resumed yet: %s", tournament_id, exc)
                self._repairs[tournament_id] = live
            except Exception:
                log.exception("tournament %s: could not resume", tournament_id)

    async def _load_readable(
        self, tournament_id: str, version: int | None, what: str
    ) -> Live | None:
        """`_load(tournament_id)` for the tick, whose stored version is `version` (None: not
        among the open ones), or None if it failed: the store away (a warning; the next tick
        tries again), or a version this node cannot read (written by a newer solrace, or
        damaged: said once, then left alone until its version changes), so that one
        tournament's trouble stops no other's tick. `what` the tick was doing ("loaded")."""
        if tournament_id in self._unreadable and self._unreadable[tournament_id] == version:
            return None
        try:
            live = await self._load(tournament_id)
        except (RaceError, StoreError) as exc:
            log.warning("tournament %s: not %s: %s", tournament_id, what, exc)
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

    # --- the one way to change a tournament ------------------------------------------------

    async def _load(self, tournament_id: str) -> Live:
        record = await self.store.get_tournament(tournament_id)
        if record is None:
            raise RaceError(ErrorCode.UNKNOWN_TOURNAMENT, f"no tournament {tournament_id!r}")
        known = self.live.get(tournament_id)
        if known is not None and known.version == record.version:
            return known
        live = Live.from_record(record, self._deal)
        if known is not None:
            live.tournament.remember_outcomes_of(known.tournament)
        if live.tournament.phase is not Phase.FINISHED:
            self.live[tournament_id] = live
        else:
            self.live.pop(tournament_id, None)
        return live

    async def _mutate(self, tournament_id: str, command: Command) -> Live:
        """Apply `command` to the stored tournament, save it (compare-and-set on the version),
        then open requested races and push the view. A refusal changes nothing."""
        saved = await self._save_change(tournament_id, command)
        if isinstance(saved, Live):  # nothing changed
            return saved
        notices = await self._carry_out(saved)
        self.views.push(saved.live)
        await self._announce(tournament_id, saved.live.version, notices)
        return saved.live

    async def _save_change(self, tournament_id: str, command: Command) -> _Saved | Live:
        """Apply `command` to a copy of the stored tournament, give the races it requests
        their ids and save it, loading and applying again while another node saves first:
        what was saved and the events it produced, or the live tournament if nothing
        changed. A refusal changes nothing."""
        async with self._locks.hold(tournament_id):
            for _ in range(SAVE_ATTEMPTS):
                live = await self._load(tournament_id)
                fresh = Live.from_record(live.to_record(), self._deal)  # a copy to change
                fresh.tournament.remember_outcomes_of(live.tournament)
                before = fresh.document()
                try:
                    events = command(fresh)
                except TournamentError as exc:
                    raise refusal(exc) from None
                races = _link_races(fresh, events)
                for event in events:  # its deals are held until `_release_held` is done
                    if isinstance(event, RoundEnded):
                        fresh.held_deals[event.round_number] = live.version + 1
                if fresh.document() == before:
                    return live
                fresh.version = live.version + 1
                if not await self.store.save_tournament(fresh.to_record(), live.version):
                    continue  # another node moved it on first: load and apply again
                if fresh.tournament.phase is Phase.FINISHED:
                    self.live.pop(tournament_id, None)
                else:
                    self.live[tournament_id] = fresh
                return _Saved(fresh, events, races)
            raise RaceError(ErrorCode.UNAVAILABLE, "the tournament is busy; retry")

    async def _carry_out(self, saved: _Saved) -> list[TournamentRace]:
        """Open the races a saved change requested, stop the ones it cancelled and release
        the deals of the rounds it ended: the notices of the races opened."""
        # The change is saved, so it stands: each step below is on its own, and one the store
        # refuses is tried again by the tick (`_repairs`), not reported to the requester.
        # Changes saved meanwhile (the tick, a race's result) push no view until it is done.
        live, tournament_id = saved.live, saved.live.tournament_id
        cancelled = [e for e in saved.events if isinstance(e, RaceCancelled)]
        notices = []
        with self.views.carrying_out(tournament_id):
            for race_id, event in saved.races.items():
                notice = await self._open_race(live, race_id, event.race_number, event.match_id)
                if notice is not None:
                    notices.append(notice)
            for stop in cancelled:
                await self._stop_race(live, stop)
            await self._release_held(live)  # the rounds it ended (and any left held before)
        return notices

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

    async def _release_held(self, live: Live) -> None:
        """Release the deals of `live`'s ended rounds still held (`Live.held_deals`), then
        note them released in the stored document, so a restart need not look at them again,
        and (several nodes) announce it, so the other nodes' spectators of those races get
        the final boards. Each step may be done twice (a crash between them, two nodes): all
        are idempotent. One the store refuses is tried again by the tick (`_repairs`)."""
        rounds = live.tournament.rounds
        released: dict[int, int] = {}
        for round_number, ended_in in live.held_deals.items():
            if round_number > len(rounds) or not rounds[round_number - 1].is_ended:
                continue  # reopened by a correction: its new races hold the deal again
            try:
                await self._release_deals(live, round_number)
            except StoreError as exc:
                log.warning(
                    "tournament %s: round %d's deals not released yet: %s",
                    live.tournament_id,
                    round_number,
                    exc,
                )
                self._repairs[live.tournament_id] = live
                continue
            released[round_number] = ended_in
        if not released:
            return

        def note(fresh: Live) -> list[TournamentEvent]:
            for round_number, ended_in in released.items():
                # A round that ended again since (a correction reopened it) stays held.
                if fresh.held_deals.get(round_number) == ended_in:
                    del fresh.held_deals[round_number]
            return []

        version = live.version
        try:
            saved = await self._save_change(live.tournament_id, note)
        except (RaceError, StoreError) as exc:
            log.warning("tournament %s: releases not noted yet: %s", live.tournament_id, exc)
            self._repairs[live.tournament_id] = live
        else:
            if isinstance(saved, _Saved):
                self.views.push(saved.live)
            version = saved.live.version if isinstance(saved, _Saved) else saved.version
        # Whichever path released them (a change, a restart, the tick's repair after an
        # outage), other nodes hear of it: their spectators of these races get the boards.
        await self._announce(live.tournament_id, version, [])

    async def _release_deals(self, live: Live, round_number: int) -> None:
        """The round ended: its races' game numbers and salts may be known (replays, checks).
        Until now they were held, because other matches raced on the same deal. `StoreError`
        if the store refused one (the rest are left for the next try)."""
        for race_id, link in live.links.items():
            if link.round_number != round_number:
                continue
            for _ in range(SAVE_ATTEMPTS):
                record = await self.store.get_race(race_id)
                if record is None or not record.deal_held:
                    break
                released = record.model_copy(update={"deal_held": False})
                if await self.store.save_race_if(released, record):
                    break
            else:
                raise StoreError(f"race {race_id} kept changing while its deal was released")
            self.host.release_deal(race_id)  # this node's copy, and its spectators

    async def _stop_race(self, live: Live, event: RaceCancelled) -> None:
        """Cancel the race of a match decided meanwhile (its result would not count)."""
        race_id = live.race_id_of(event.match_id, event.race_number)
        if race_id is None:
            return
        try:
            runtime = await self.host.load_race(race_id)
            if runtime is None or not runtime.race.is_live:
                return
            await self.host.apply_to_race(runtime, cancel_race(self.host.clock()))
        except (RaceError, StoreError) as exc:  # the race runs on; its result is ignored
            log.warning("tournament %s: race %s not stopped: %s", live.tournament_id, race_id, exc)
            return
        log.info(
            "tournament %s: race %s stopped (%s decided)",
            live.tournament_id,
            race_id,
            event.match_id,
        )

    async def _open_race(
        self, live: Live, race_id: RaceId, race_number: int, match_id: MatchId
    ) -> TournamentRace | None:
        """Open a match's race; its notice went to the seated players connected here."""
        t = live.tournament
        rnd, match = t.find_match(match_id)
        record = new_race_record(
            self.settings,
            race_id,
            game=t.game_id,
            game_number=rnd.game_numbers[race_number],
            seats=len(match.racing),
            time_limit_s=live.time_limit_s,
            rated=t.settings.rated,
            invite_code=secrets.token_hex(8),  # seats are the server's to fill
            creator=match.racing[0],
            now_ms=self.host.clock(),
            deal_held=True,  # other matches of the round race on this deal
        )
        seated = [(p, live.names.get(p, p)) for p in match.racing]
        try:
            await self.host.open_seated_race(record, seated)
        except (RaceError, StoreError) as exc:
            log.warning("tournament %s: race %s not opened yet: %s", t.tournament_id, race_id, exc)
            self._repairs[t.tournament_id] = live
            return None
        notice = TournamentRace(
            tournament_id=t.tournament_id,
            match_id=match_id,
            round=rnd.number,
            race_number=race_number,
            race_id=race_id,
            players=list(match.racing),
        )
        for player in match.racing:
            session = self.host.session_of(player)
            if session is not None:
                session.send(notice)
        log.info("tournament %s: race %s for %s", t.tournament_id, race_id, match_id)
        return notice

    # --- the hub's hook --------------------------------------------------------------------

    async def race_finished(self, record: RaceRecord) -> None:
        """A race ended: if it is a tournament's, its finishing order is the match's result."""
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

    # --- requests --------------------------------------------------------------------------

    def _check_admin(self, token: str) -> None:
        expected = self.settings.admin_token
        if not expected or not hmac.compare_digest(token.encode(), expected.encode()):
            raise RaceError(ErrorCode.NOT_ADMIN, "a valid admin token is needed for that")

    async def _create(self, session: Session, message: CreateTournament) -> None:
        self._check_admin(message.admin_token)
        admin, name = identity_of(session)
        settings = self.settings
        check_race_settings(settings, message.game, message.time_limit_s)
        try:
            rules = format_rules(message)
        except TournamentError as exc:
            raise refusal(exc) from None
        if rules.format is Format.HEATS and rules.heat_size > settings.max_seats:
            raise RaceError(
                ErrorCode.INVALID_SETTINGS,
                f"heat_size {rules.heat_size}: this server's races seat at most"
                f" {settings.max_seats} players",
            )
        most = largest_field(rules, settings.max_tournament_players)
        for field_name, asked in (
            ("max_players", message.max_players),
            ("min_players", message.min_players),
        ):
            if asked is not None and asked > most:
                raise RaceError(
                    ErrorCode.INVALID_SETTINGS, f"{field_name} {asked}: {self._field_limit(rules)}"
                )
        grace = message.no_show_grace_s
        tournament_id = TournamentId(TOURNAMENT_ID_PREFIX + secrets.token_hex(3))
        try:
            tournament = Tournament.create(
                tournament_id,
                message.game,
                TournamentSettings(
                    rules,
                    min_players=message.min_players,
                    max_players=message.max_players,
                    check_in_required=message.check_in_required,
                    no_show_grace=None if grace is None else float(grace),
                    rated=message.rated,
                ),
                admin=admin,
                now=self._now(),
                deal_source=self._deal,
            )
        except TournamentError as exc:
            raise refusal(exc) from None
        live = Live(
            tournament,
            version=1,
            name=message.name,
            time_limit_s=message.time_limit_s,
            created_at_ms=self.host.clock(),
            names={admin: name},
        )
        if not await self.store.save_tournament(live.to_record(), None):
            raise RaceError(ErrorCode.UNAVAILABLE, "tournament id taken; retry")
        self.live[tournament_id] = live
        self.views.send(session, live)
        log.info("%s created tournament %s (%s)", name, tournament_id, message.format)

    def _field_limit(self, rules: FormatRules) -> str:
        """Why a tournament of `rules` takes no more players, for a refusal."""
        cap = self.settings.max_tournament_players
        most = largest_field(rules, cap)
        if most == cap:
            return (
                f"this server takes at most {cap} players per tournament"
                " (SOLRACE_MAX_TOURNAMENT_PLAYERS)"
            )
        return (
            f"a {rules.format.value} of best-of-{rules.best_of} races takes at most {most}"
            " players (its view, sent whole to every watcher, must stay small)"
        )

    async def _list(self, session: Session, message: ListTournaments) -> None:
        """At most `TOURNAMENT_LIST_LIMIT` tournaments, oldest first, so a list stays one frame
        however many a server has held: the unfinished ones first, then the latest finished;
        the others are counted in `more`. With `skip_finished` N, a later page: the finished
        ones before the N latest, and no unfinished one. The store is asked for the open
        tournaments' versions and one page of the finished ones' (not every one ever held),
        and a summary is made once per stored version (`_summary`)."""
        limit, skip = TOURNAMENT_LIST_LIMIT, message.skip_finished
        shown: list[TournamentVersion] = []
        more = 0
        if not skip:
            unfinished = [v for v in await self.store.open_tournament_versions() if not v.finished]
            shown, more = unfinished[:limit], max(0, len(unfinished) - limit)
        page, finished = await self.store.finished_tournament_versions(skip, limit - len(shown))
        more += max(0, finished - skip - len(page))
        # One that finished between the two reads is in both: listed once.
        listed = {v.tournament_id: v for v in shown + page}.values()
        summaries = []
        for version in sorted(listed, key=lambda v: v.order):
            summary = await self._summary(version)
            if summary is not None:
                summaries.append(summary)
        session.send(TournamentList(tournaments=summaries, more=more))

    async def _summary(self, stored: TournamentVersion) -> TournamentSummary | None:
        """The summary of a tournament at its `stored` version (None: no longer stored). Made
        once per version and kept (`_summaries`, the latest used): a finished 256-player
        Swiss's document is ~0.5 MB and ~25 ms to read and score, so reading every listed
        document at every list let one client keep the node busy."""
        tournament_id = stored.tournament_id
        known = self._summaries.get(tournament_id)
        if known is None or not known.is_of(stored.version):
            live = self.live.get(tournament_id)
            if live is None or live.version != stored.version:
                record = await self.store.get_tournament(tournament_id)
                if record is None:
                    return None
                live = Live.from_record(record, self._deal)
            known = _Summary(live.version, build_summary(live.tournament, live.name))
            self._summaries[tournament_id] = known
        self._summaries.move_to_end(tournament_id)
        while len(self._summaries) > SUMMARIES_KEPT:
            self._summaries.popitem(last=False)
        return known.summary

    async def _watch(self, session: Session, message: WatchTournament) -> None:
        self.views.watch(session, await self._load(message.tournament_id))

    async def _unwatch(self, session: Session, message: UnwatchTournament) -> None:
        self.views.unwatch(session, message.tournament_id)

    async def _join(self, session: Session, message: JoinTournament) -> None:
        player, name = identity_of(session)
        now = self._now()

        def command(live: Live) -> list[TournamentEvent]:
            t = live.tournament
            rules = t.settings.rules
            is_open = t.phase in (Phase.REGISTRATION, Phase.CHECK_IN)
            most = largest_field(rules, self.settings.max_tournament_players)
            if is_open and player not in t.registered and len(t.registered) >= most:
                raise WrongPhaseError(f"the tournament is full: {self._field_limit(rules)}")
            live.names[player] = name
            return t.register(player, now=now)

        self.views.answer(session, await self._mutate(message.tournament_id, command))

    async def _check_in(self, session: Session, message: CheckIn) -> None:
        player, _ = identity_of(session)
        now = self._now()
        live = await self._mutate(
            message.tournament_id, lambda live: live.tournament.check_in(player, now=now)
        )
        self.views.answer(session, live)

    async def _leave(self, session: Session, message: LeaveTournament) -> None:
        player, _ = identity_of(session)
        now = self._now()
        live = await self._mutate(
            message.tournament_id, lambda live: live.tournament.drop(player, actor=player, now=now)
        )
        self.views.answer(session, live)

    async def _admin(self, session: Session, message: TournamentAdmin) -> None:
        self._check_admin(message.admin_token)
        ratings: dict[PlayerId, float] = {}
        if message.act == "start":  # seeding by rating: the tournament's game is needed
            live = await self._load(message.tournament_id)
            table = await self.ratings.game_ratings(live.tournament.game_id)
            ratings = {p: float(r.display()) for p, r in table.items()}
        now = self._now()
        command = admin_command(message, ratings, now)
        self.views.answer(session, await self._mutate(message.tournament_id, command))
