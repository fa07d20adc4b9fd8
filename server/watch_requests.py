"""The requests that follow a race or read one back: `watch` and `unwatch` (a spectator's),
`sync` (catching up: a racer, or a spectator from where it was) and `get_replay` (a finished
race's). Who watches and how a session catches up is `Watching`'s (watching.py), a replay
`Replays`' (replays.py).
"""

from __future__ import annotations

from collections.abc import Callable

from solrace.server.player_sessions import PlayerSessions
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import GetReplay, Sync, Unwatch, Watch
from solrace.server.race_requests import requested_race
from solrace.server.race_sync import RaceKeeper
from solrace.server.replays import Replays
from solrace.server.session import Session
from solrace.server.watching import Watching


class WatchRequests:
    """Answers `watch`, `unwatch`, `sync` and `get_replay` on the races `keeper` holds,
    through `watching` and `replays`; a racer's sync (several nodes) brings its board here up
    to its stored moves first, and marks it connected as `sessions` name its connection."""

    def __init__(
        self,
        keeper: RaceKeeper,
        watching: Watching,
        replays: Replays,
        sessions: PlayerSessions,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.keeper = keeper
        self.watching = watching
        self.replays = replays
        self.sessions = sessions
        self.clock = clock

    async def watch(self, session: Session, message: Watch) -> None:
        runtime = await requested_race(self.keeper, message.race_id)
        await self.watching.watch(session, runtime, None, None)

    async def unwatch(self, session: Session, message: Unwatch) -> None:
        runtime = await requested_race(self.keeper, message.race_id)
        self.watching.unwatch(session, runtime)

    async def sync(self, session: Session, message: Sync) -> None:
        runtime = await requested_race(self.keeper, message.race_id)
        player_id = session.player_id
        if player_id is None or player_id not in runtime.race.racers:
            await self.watching.watch(session, runtime, message.epoch, message.since_version)
            return
        # Several nodes: its board as stored, not as this copy last heard of it (another
        # node may have stored moves of it whose notice has not come yet).
        await self.keeper.catch_up_racer(runtime, player_id)
        await self.watching.resync(session, runtime, message.epoch, message.since_version)
        # A racer resyncing here is connected here, even if no hello announced it to this race
        # (a tournament race opened on another node): otherwise its grace period would run out.
        connected = self.sessions.connected_here(player_id, self.clock())
        await self.sessions.change_each([runtime], connected, player_id, "marked connected")

    async def get_replay(self, session: Session, message: GetReplay) -> None:
        session.send_frame(await self.replays.frame_of(RaceId(message.race_id)))


__all__ = ["WatchRequests"]
