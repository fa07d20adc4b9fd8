"""The lobby's requests about races: the list of live races (`list_races`), and a player's own
seat in a race: create one, join, leave, start, resign. A race whose seats the server fills (a
tournament's) is opened here too (`open_seated_race`).

Each change goes through the race keeper (`RaceKeeper.apply_to_race`, `store_new_race`); a
race's checks and record are race_setup.py's, the quotas race_quota.py's.
"""

from __future__ import annotations

import contextlib
import logging
import random
import secrets
from collections.abc import Callable, Sequence

from solrace.server.guesses import INVITE_CODE_GUESSES, Guesses
from solrace.server.identities import identity_of
from solrace.server.lobby import LobbyFeed, race_list
from solrace.server.player_sessions import PlayerSessions
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    CreateRace,
    JoinRace,
    LeaveRace,
    ListRaces,
    RaceEvent,
    RaceInfo,
    RaceList,
    Resign,
    StartRace,
)
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    RaceRecord,
    RaceStatus,
)
from solrace.server.race_quota import RaceQuota
from solrace.server.race_setup import (
    check_create_race,
    game_number_of,
    new_race_record,
)
from solrace.server.race_sync import RaceKeeper
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store
from solrace.server.watching import Watching

log = logging.getLogger("solrace.server.race_requests")


async def requested_race(keeper: RaceKeeper, requested: str) -> RaceRuntime:
    """The race a client's request names (its id as sent: it becomes a `RaceId` here)."""
    race_id = RaceId(requested)
    runtime = await keeper.load_race(race_id)
    if runtime is None:
        raise RaceError(ErrorCode.UNKNOWN_RACE, await _not_held_text(keeper, race_id))
    return runtime


async def _not_held_text(keeper: RaceKeeper, race_id: RaceId) -> str:
    """Why a request's race is not one to act on, in words: a race the store keeps as finished
    (long enough ago to be out of memory) or cancelled says so, and a finished one where its
    replay is; any other id is no live race."""
    record = await keeper.store.get_race(race_id)
    if record is not None and record.status is RaceStatus.FINISHED:
        if record.deal_held:  # a tournament round's deal: no replay before the round ends
            return f"race {race_id!r} has finished: its replay comes when its round ends"
        return f"race {race_id!r} has finished: its replay is there to fetch (get_replay)"
    if record is not None and record.status is RaceStatus.CANCELLED:
        return f"race {race_id!r} was cancelled"
    return f"no live race {race_id!r}"


class RaceRequests:
    """Answers the lobby's requests on the races `keeper` holds (several nodes: the list is
    read from the `store`): new races within the `quota`, each deal drawn with `rng` unless
    the creator chose one; a racer's connection as `sessions` name it; a racer stops watching
    (`watching`) the race it joins."""

    def __init__(
        self,
        keeper: RaceKeeper,
        store: Store,
        settings: Settings,
        lobby: LobbyFeed,
        quota: RaceQuota,
        watching: Watching,
        sessions: PlayerSessions,
        *,
        rng: random.Random,
        clock: Callable[[], int],
    ) -> None:
        self.keeper = keeper
        self.store = store
        self.settings = settings
        self.lobby = lobby
        self.quota = quota
        self.watching = watching
        self.sessions = sessions
        self.rng = rng
        self.clock = clock
        #: Wrong invite codes, per connection and per address (`guesses.Guesses`).
        self.invite_guesses = Guesses(
            INVITE_CODE_GUESSES, per_address=settings.max_connections_per_address > 0
        )

    async def _live_race_infos(self) -> list[RaceInfo]:
        if self.keeper.is_cluster:
            records = await self.store.list_races(LIVE_STATUSES)
            return [Race(r, "", 1).info() for r in records]
        return [rt.race.info() for rt in self.keeper.races.values() if rt.race.is_live]

    async def race_list(self) -> RaceList:
        return race_list(await self._live_race_infos())

    async def list_races(self, session: Session, message: ListRaces) -> None:
        races, frame = await self.lobby.current()
        session.send_frame(frame)
        if message.follow:
            self.lobby.follow(session, races)
        else:
            self.lobby.unfollow(session)

    async def create_race(self, session: Session, message: CreateRace) -> None:
        player_id, name = identity_of(session)
        check_create_race(self.settings, message)
        with self.quota.reserve(player_id):
            await self._create_checked_race(session, message, player_id, name)

    async def _create_checked_race(
        self, session: Session, message: CreateRace, player_id: PlayerId, name: str
    ) -> None:
        number = game_number_of(message, self.rng)
        now = self.clock()
        record = new_race_record(
            self.settings,
            RaceId("r" + secrets.token_hex(5)),
            game=message.game,
            game_number=number,
            seats=message.seats,
            time_limit_s=message.time_limit_s,
            rated=message.rated,
            invite_code=message.invite_code,
            creator=player_id,
            now_ms=now,
            deal_chosen=message.game_number is not None,
        )
        await self.keeper.store_new_race(
            record,
            lambda race: race.join(
                player_id, name, message.invite_code, now, self.sessions.claimant_holder(session)
            ),
            created_by=player_id,
        )
        log.info("%s created race %s (%s)", name, record.race_id, record.game)

    async def join_race(self, session: Session, message: JoinRace) -> None:
        """Seat the player. An invite code given for a race that needs one, by a player not
        seated in it yet, is a guess: a wrong one is counted, and one from an address out of
        guesses is refused unchecked (`invite_guesses`). A racer who sends it again is
        answered `already_joined`, whatever its address's guesses."""
        player_id, name = identity_of(session)
        runtime = await requested_race(self.keeper, message.race_id)
        seated = player_id in runtime.race.racers
        guessing = (
            not seated
            and message.invite_code is not None
            and runtime.race.record.invite_code is not None
        )
        if guessing:
            self.invite_guesses.check(session, f"race {runtime.race_id}")
        # A seat already held is resumed, not taken; a new one is checked against the
        # player's live races and counted among them until the join is through.
        quota = self.quota
        with contextlib.nullcontext() if seated else quota.reserve_seat(player_id, runtime.race_id):
            await self._join(session, message, runtime, player_id, name, guessing)

    async def _join(
        self,
        session: Session,
        message: JoinRace,
        runtime: RaceRuntime,
        player_id: PlayerId,
        name: str,
        guessing: bool,
    ) -> None:
        now = self.clock()
        try:
            await self.keeper.apply_to_race(
                runtime,
                lambda race: race.join(
                    player_id,
                    name,
                    message.invite_code,
                    now,
                    self.sessions.claimant_holder(session),
                ),
            )
        except RaceError as exc:
            if guessing and exc.code is ErrorCode.BAD_INVITE:
                raise self.invite_guesses.wrong(session, exc, f"race {runtime.race_id}") from None
            raise
        # A racer does not watch its own race: one that watched it first stops watching.
        self.watching.unwatch(session, runtime)

    async def leave_race(self, session: Session, message: LeaveRace) -> None:
        player_id, _ = identity_of(session)
        runtime = await requested_race(self.keeper, message.race_id)
        now = self.clock()
        events = await self.keeper.apply_to_race(runtime, lambda race: race.leave(player_id, now))
        # No longer a racer, so not among the recipients: sent here, and marked as had (a
        # connection that had none of the race's events, a racer's new one, would otherwise be
        # sent them all again by a later `watch` or `sync`, after these).
        self.keeper.delivery.send_to(session, runtime, events)
        if runtime.race_id not in self.keeper.races:
            # Left alone, the race was cancelled and dropped: nothing more of it can come.
            # Otherwise the session keeps the version it had (as after an `unwatch`), so that
            # a later `watch` or `sync` of the race never sends it an event it had already.
            session.versions.pop(runtime.race_id, None)

    async def start_race(self, session: Session, message: StartRace) -> None:
        player_id, _ = identity_of(session)
        runtime = await requested_race(self.keeper, message.race_id)
        now = self.clock()
        await self.keeper.apply_to_race(runtime, lambda race: race.request_start(player_id, now))

    async def resign(self, session: Session, message: Resign) -> None:
        player_id, _ = identity_of(session)
        runtime = await requested_race(self.keeper, message.race_id)
        now = self.clock()
        await self.keeper.apply_to_race(runtime, lambda race: race.resign(player_id, now))

    async def open_seated_race(
        self, record: RaceRecord, seated: Sequence[tuple[PlayerId, str]]
    ) -> None:
        """Open a race whose seats the server fills (a tournament's): every (player id, name)
        is seated with the record's invite code, so the countdown starts at once; the grace of
        a seated player not connected here runs from now. An existing race id is left alone."""
        if record.race_id in self.keeper.races or await self.store.get_race(record.race_id):
            return
        now = self.clock()
        here = {p: self.sessions.holder_of(s) for p, s in self.sessions.players.items()}

        def seat(race: Race) -> list[RaceEvent]:
            events: list[RaceEvent] = []
            for player_id, name in seated:
                events += race.join(player_id, name, record.invite_code, now)
            for player_id, _ in seated:
                connected = player_id in here
                events += race.set_connected(player_id, connected, now, here.get(player_id))
            return events

        await self.keeper.store_new_race(record, seat)


__all__ = ["RaceRequests", "requested_race"]
