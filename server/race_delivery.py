"""Races' events to this node's sessions. A race's sessions here are its racers connected to
this node and its spectators here; each is sent the events it has not had, in version order,
or a snapshot when the race's history no longer reaches back, so that every session sees a
race's versions rise. Spectators also get each racer's board as it was `spectator_delay` ago,
in batches.

`RaceDelivery` does this for the race keeper (race_sync.py), which calls `forward` after each
change it applies or reloads; delivery never changes a race, and it tells the keeper when a
race has ended (`ended`), which the keeper acts on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from solrace.server.lobby import LobbyFeed
from solrace.server.protocol.codec import encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import RaceEvent, RaceSnapshot
from solrace.server.protocol.records import RaceStatus
from solrace.server.race_changes import is_progress_only, mover_of, own_board
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings

#: Told that a race held here ended: it finished (once per copy, after its final boards went
#: to its spectators) or was cancelled (each time its events are forwarded).
RaceEnded = Callable[[RaceRuntime], None]

#: Read once: on Python 3.11 an enum member costs ~0.2 us a read, and `forward` runs for
#: every progress batch.
_FINISHED: Final = RaceStatus.FINISHED
_CANCELLED: Final = RaceStatus.CANCELLED


class RaceDelivery:
    """Sends races' events and spectators' boards to this node's sessions: the sessions of
    `players` (kept by the hub) racing in a race, and the race's spectators. It tells the
    lobby feed when a race's listing may have changed and `ended` when a race ended."""

    def __init__(
        self,
        settings: Settings,
        lobby: LobbyFeed,
        players: Mapping[PlayerId, Session],
        *,
        clock: Callable[[], int],
        ended: RaceEnded,
    ) -> None:
        self.settings = settings
        self.lobby = lobby
        self.players = players
        self.clock = clock
        self.ended = ended

    def recipients(self, runtime: RaceRuntime) -> Collection[Session]:
        """The race's sessions on this node, each once: its connected racers and its
        spectators. A racer's session is its own: a list of them, no set built (each session
        hashed in Python: every progress batch asks), unless the race has spectators here, one
        of whom may be a racer's session too."""
        players = self.players
        racers = [s for p in runtime.race.racers if (s := players.get(p)) is not None]
        return runtime.spectators.union(racers) if runtime.spectators else racers

    def publish(self, runtime: RaceRuntime, messages: Sequence[RaceEvent | RaceSnapshot]) -> None:
        """Send `messages` (in version order) to the race's sessions, each only what is newer
        than what that session was last sent of the race: every session sees versions rise.
        With progress batches a racer is not sent the progress of its own moves: its acks
        carried it."""
        recipients = self.recipients(runtime)
        if not recipients or not messages:
            return
        race_id = runtime.race_id
        batching = self.settings.progress_interval_s > 0
        batch = [
            (encode(m), m.epoch, m.version, mover_of(m) if batching else None) for m in messages
        ]
        for session in recipients:
            _send_newer(session, race_id, batch)

    def send_to(self, session: Session, runtime: RaceRuntime, events: Sequence[RaceEvent]) -> None:
        """Send one session that is not among the race's recipients (a racer who just left
        it) `events`, each only if newer than what it was last sent of the race, as `publish`
        does: a later `watch` or `sync` then never sends it one of them again."""
        batch = [(encode(e), e.epoch, e.version, None) for e in events]
        _send_newer(session, runtime.race_id, batch)

    def push_spectator_boards(
        self, runtime: RaceRuntime, now: int, *, force: bool = False, only: Session | None = None
    ) -> None:
        """Send spectators each racer's board as it was `spectator_delay` ago (batched): to
        every spectator the boards that moved on since the last push (all, with `force`); to
        `only` (a new spectator) every board, which moves nobody else's on (the next push
        does). None to a racer of the race (one who watched it before joining), and none at
        all while the race's deal is held: other matches of its tournament round race on the
        same deal, and anyone may watch (a player's second, anonymous connection too); they
        go out once it is released (`HeldDeals.release_deal`)."""
        targets = runtime.spectators if only is None else {only}
        if not targets or not runtime.boards or runtime.race.record.deal_held:
            return
        racers = runtime.race.racers
        # What new spectators' watches sent them since the last batch: not sent again.
        sent_on_watch = runtime.boards_sent_on_watch
        if only is None:
            runtime.boards_sent_on_watch = {}
        for player_id, board in runtime.boards.items():
            delayed = runtime.advance_spectator_board(player_id, now)
            if only is None:
                if delayed.ply == board.spectators_ply and not force:
                    continue
                board.spectators_ply = delayed.ply
            frame = runtime.spectator_board_frame(player_id)
            for session in targets:
                if session.player_id in racers:
                    continue
                if only is None:
                    if sent_on_watch.get(session, {}).get(player_id) is frame:
                        continue  # its watch sent it this very board
                else:
                    sent_on_watch.setdefault(session, {})[player_id] = frame
                session.send_frame(frame)

    def forward(self, runtime: RaceRuntime) -> None:
        """Send this node's sessions the events they have not had, in version order (a
        snapshot if the history no longer reaches back), then act on what changed: the lobby
        told, each racer here sent its board when the race starts, the final boards sent to
        spectators when it finishes, and `ended` told when it finished or was cancelled."""
        race = runtime.race
        if runtime.sent_epoch == race.epoch and runtime.sent_version == race.version:
            return
        missed = race.events_since(runtime.sent_epoch, runtime.sent_version)
        runtime.sent_epoch, runtime.sent_version = race.epoch, race.version
        if missed is None:
            self.publish(runtime, [race.snapshot(self.clock())])
            self.lobby.changed()
        else:
            self.publish(runtime, missed)
            if not is_progress_only(missed):
                self.lobby.changed()
        if race.started_at_ms is not None and not runtime.boards:
            runtime.deal_boards()  # the race just started: no moves yet
            for player_id in runtime.boards:
                session = self.players.get(player_id)
                if session is not None:
                    session.send(own_board(runtime, player_id))
        if race.status is _FINISHED and not runtime.finished:
            now = self.clock()
            runtime.finished = True
            runtime.finished_here_ms = now
            self.push_spectator_boards(runtime, now, force=True)
            self.ended(runtime)
        elif race.status is _CANCELLED:
            self.ended(runtime)

    def forget(self, runtime: RaceRuntime) -> None:
        """The node forgets the race: its sessions here forget what they were sent of it and
        that they watched it."""
        race_id = runtime.race_id
        for session in self.recipients(runtime):
            session.versions.pop(race_id, None)
            session.watching.discard(race_id)


#: A versioned message as `publish` sends it: its frame, epoch, version, and the racer whose
#: own move it reports (not sent to that racer), if any.
_Outgoing = tuple[bytes, str, int, PlayerId | None]


def _send_newer(session: Session, race_id: RaceId, batch: Sequence[_Outgoing]) -> None:
    """Send `session` the messages of `batch` (in version order) newer than its mark of the
    race, and move the mark on to the last one sent."""
    mark = session.versions.get(race_id)
    for frame, epoch, version, mover in batch:
        if mark is not None and mark[0] == epoch and version <= mark[1]:
            continue  # it had this version already (a catch-up overtook the batch)
        if mover is None:
            session.send_frame(frame)
        elif mover != session.player_id:
            session.hold_frame(frame)  # a racer's progress: it may wait a little
        else:
            continue
        mark = (epoch, version)
    if mark is not None:
        session.versions[race_id] = mark


__all__ = ["RaceDelivery", "RaceEnded"]
