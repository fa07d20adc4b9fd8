"""Watching races and catching up: which sessions of this node watch which race (a race's
`spectators`, a session's `watching`), and how a session is sent the events of a race it has
not had, or a snapshot when they are not all kept (a `watch`, a `sync`, a racer seated by
another node).

A `watch` or a `sync` is answered under the race's lock, which a change holds until the store
has taken it: the race in memory is then the race as stored. In between it may hold a change
the store goes on to refuse (and that is undone): a finish would show the game number and
every board of a race that runs on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.records import RaceRecord
from solrace.server.race_changes import own_board
from solrace.server.race_delivery import RaceDelivery
from solrace.server.race_sync import RaceKeeper
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session

#: Asked before a session watches a race; it may refuse it (`RaceError`).
WatchCheck = Callable[[Session, RaceRecord], Awaitable[None]]


class Watching:
    """The spectators of the races `keeper` holds, and catching sessions up on those races
    (a new spectator's boards through `delivery`, the keeper's); its `checks` may refuse a
    session a race (services', through `Hub.plug_in`)."""

    def __init__(
        self, keeper: RaceKeeper, delivery: RaceDelivery, *, clock: Callable[[], int]
    ) -> None:
        self.keeper = keeper
        self.delivery = delivery
        self.clock = clock
        #: Asked, in this order, before a session watches a race (`add_check`).
        self.checks: list[WatchCheck] = []

    def add_check(self, check: WatchCheck) -> None:
        """Ask `check` too before a session watches a race; it may refuse it (`RaceError`)."""
        self.checks.append(check)

    def send_missed(
        self,
        session: Session,
        runtime: RaceRuntime,
        epoch: str | None,
        since: int | None,
        *,
        answer: bool = False,
    ) -> None:
        """Send `session` the race's events after version `since` of `epoch` (a snapshot if
        they are not all kept, or the epoch is another, or none is given). With `answer` (a
        client asked), a snapshot also when none was missed: every `sync` gets an answer."""
        race = runtime.race
        missed = race.events_since(epoch, since)
        mark = session.versions.get(race.race_id)
        if missed and mark is not None and mark[0] == race.epoch and missed[0].version <= mark[1]:
            missed = None  # live events reached it first: the missed ones would come too late
        if missed is None or (answer and not missed):
            session.send(race.snapshot(self.clock()))
        else:
            for event in missed:
                session.send(event)
        session.versions[race.race_id] = (race.epoch, race.version)

    def catch_up(self, session: Session, runtime: RaceRuntime) -> None:
        """Send `session` the race's events it has not had (all of them for a session new to
        the race), in order: a racer seated by another node learns of the start this way."""
        race = runtime.race
        mark = session.versions.get(race.race_id)
        since = mark[1] if mark is not None and mark[0] == race.epoch else 0
        self.send_missed(session, runtime, race.epoch, since)

    async def watch(
        self, session: Session, runtime: RaceRuntime, epoch: str | None, since: int | None
    ) -> None:
        """`session` (not a racer of it) watches the race from version `since` of `epoch`
        (a `watch`, or a spectator's `sync`), answered with the events or a snapshot."""
        if session.player_id is not None and session.player_id in runtime.race.racers:
            raise RaceError(ErrorCode.NOT_ALLOWED, "racers cannot watch their own race")
        for check in self.checks:
            await check(session, runtime.race.record)
        async with runtime.lock:  # no change half stored meanwhile
            runtime.spectators.add(session)
            session.watching.add(runtime.race_id)
            self.send_missed(session, runtime, epoch, since, answer=True)
            self.delivery.push_spectator_boards(runtime, self.clock(), only=session)

    async def resync(
        self, session: Session, runtime: RaceRuntime, epoch: str | None, since: int | None
    ) -> None:
        """A racer's `sync` of its race from version `since` of `epoch`: the events it missed
        or a snapshot, then its own board once the race has started."""
        async with runtime.lock:  # no change half stored meanwhile
            self.send_missed(session, runtime, epoch, since, answer=True)
            player_id = session.player_id
            if player_id is not None and player_id in runtime.boards:
                session.send(own_board(runtime, player_id))

    def unwatch(self, session: Session, runtime: RaceRuntime) -> None:
        """`session` no longer watches the race (an `unwatch`, or it took a seat in it)."""
        runtime.spectators.discard(session)
        runtime.boards_sent_on_watch.pop(session, None)
        session.watching.discard(runtime.race_id)

    def closed(self, session: Session) -> None:
        """`session` closed: the races it watched that this node still holds drop it."""
        for race_id in session.watching:
            runtime = self.keeper.races.get(race_id)
            if runtime is not None:
                runtime.spectators.discard(session)
                runtime.boards_sent_on_watch.pop(session, None)


__all__ = ["WatchCheck", "Watching"]
