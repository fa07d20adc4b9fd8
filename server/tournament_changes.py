"""The one way to change a tournament: load it, apply one command, save it, then carry it out.

The rules are pure (`protocol/tournament.py`); this loads a tournament's document from the
store, applies one command to it, saves it with a compare-and-set on its version (so of two
nodes moving one tournament on, one wins and the other reloads and tries again), and only then
acts on the events. A race whose match was decided meanwhile (a forfeit, a drop-out, an
admin correction: `RaceCancelled`) is stopped first: cancelled through the hub like any race
change, so its racers and spectators see it end (before the notice of a racer's next race),
and it neither counts nor changes ratings. Then it opens each requested race through its race
host (the hub's races, `tournament_host.py`; `Hub.open_seated_race`: the match's players
seated, the round's secret deal), tells the seated players (`tournament_race`) and pushes the
new view to the tournament's watchers. The deals
of the rounds a change ended are released (`held_deals` notes which rounds may still hold
theirs); a step the store refuses is left for the tick (`_repairs`).

On several nodes (a broker), each saved change is announced on the broker
(`tournament_relay.py`).

`TournamentChanges` holds what the service's layers share (the tournaments held here, their
locks, their watchers' views, the repairs due); the requests (`tournament_requests.py`) and
the service a node runs (`tournaments.py`) are built on it.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass

from solrace.engine import random_ranked_number
from solrace.server.keyed_locks import KeyedLocks
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import LIVE_STATUSES
from solrace.server.protocol.tournament_errors import MatchId, TournamentError
from solrace.server.protocol.tournament_events import (
    RaceCancelled,
    RaceRequested,
    RoundEnded,
    TournamentEvent,
)
from solrace.server.protocol.tournament_messages import TournamentRace, tournament_race_id
from solrace.server.protocol.tournament_state import Phase
from solrace.server.race_setup import new_race_record
from solrace.server.store.base import StoreError
from solrace.server.tournament_host import RaceHost
from solrace.server.tournament_live import Command, Live, RaceLink, cancel_race, refusal
from solrace.server.tournament_relay import TournamentRelay
from solrace.server.tournament_views import TournamentViews

log = logging.getLogger("solrace.server.tournament_changes")

SAVE_ATTEMPTS = 8


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


class TournamentChanges:
    """The tournaments held here and the one way to change them (the module's docstring); the
    races they request are `host`'s: what the service asks of them is all in `RaceHost`."""

    def __init__(self, host: RaceHost, rng: random.Random | None = None) -> None:
        self.host = host
        self.store = self.host.store
        self.settings = self.host.settings
        self.rng = rng or random.SystemRandom()
        self.live: dict[str, Live] = {}
        self._locks = KeyedLocks()
        #: Each watched tournament's watchers and the views that go to them and requesters.
        self.views = TournamentViews(self.settings.tournament_view_push_s)
        #: Tournaments a saved change left with a race not opened or deals not released (the
        #: store was away), each as that change left it: the tick tries again.
        self._repairs: dict[str, Live] = {}
        self.relay: TournamentRelay | None = None

    def _deal(self, round_number: int, race_number: int) -> str:
        return random_ranked_number(self.rng)

    def _now(self) -> float:
        return self.host.clock() / 1000

    async def _announce(
        self, tournament_id: str, version: int, notices: list[TournamentRace]
    ) -> None:
        """Several nodes: the others hear that the tournament changed (saved as `version`,
        opening the races of `notices`); one node: nothing to do."""
        if self.relay is not None:
            await self.relay.publish(tournament_id, version, notices)

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
        """Stop the races a saved change cancelled, open the ones it requested and release
        the deals of the rounds it ended: the notices of the races opened."""
        # The change is saved, so it stands: each step below is on its own, and one the store
        # refuses is tried again by the tick (`_repairs`), not reported to the requester.
        # Changes saved meanwhile (the tick, a race's result) push no view until it is done.
        live, tournament_id = saved.live, saved.live.tournament_id
        cancelled = [e for e in saved.events if isinstance(e, RaceCancelled)]
        notices = []
        with self.views.carrying_out(tournament_id):
            # Stopped first: a player of a race its match no longer needs hears it cancelled
            # before the notice of its next race (which a line mode makes the current one).
            for stop in cancelled:
                await self._stop_race(live, stop)
            for race_id, event in saved.races.items():
                notice = await self._open_race(live, race_id, event.race_number, event.match_id)
                if notice is not None:
                    notices.append(notice)
            await self._release_held(live)  # the rounds it ended (and any left held before)
        return notices

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
                if record.status in LIVE_STATUSES:
                    await self._stop_before_release(race_id)
                    continue
                released = record.model_copy(update={"deal_held": False})
                if await self.store.save_race_if(released, record):
                    break
            else:
                raise StoreError(f"race {race_id} kept changing while its deal was released")
            self.host.release_deal(race_id)  # this node's copy, and its spectators

    async def _stop_before_release(self, race_id: RaceId) -> None:
        """A race of an ended round still runs: its match was decided, but the store refused
        its cancel (`_stop_race`). Released, its deal would be known (the view names the
        round's numbers) to racers still racing it, its finish rated: it is stopped first.
        `StoreError` if it cannot be, for the tick to try again."""
        try:
            runtime = await self.host.load_race(race_id)
            if runtime is not None and runtime.race.is_live:
                await self.host.apply_to_race(runtime, cancel_race(self.host.clock()))
        except (RaceError, StoreError) as exc:
            raise StoreError(f"race {race_id} still runs, not stopped yet: {exc}") from exc
        log.info("race %s stopped before its round's deal is released", race_id)

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


__all__ = ["SAVE_ATTEMPTS", "TournamentChanges"]
