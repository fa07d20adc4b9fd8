"""What the line mode (`PlainMode`) keeps and what it says as things happen: `PlainEvents`
holds the mode's state (the current race, the races it created, the moves answered late,
the input read) and prints the server's messages as they arrive: players joining, the
countdown and the start, the own board, opponents' progress, the result, the late answer to
a move, the link lost and back, a race the server lost or no longer has. `closed_text` is the
line for a link closed for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TextIO

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
)

from .held_deals import deal_line
from .leaving import line_mode_back
from .link_status import Incoming, LinkStatus, StatusChange
from .plain_words import NO_RACE
from .render import render_plain, result_line
from .session import Session
from .state import RaceState, is_gone
from .typed_lines import TypedLines
from .wire_text import printable


def closed_text(detail: str) -> str:
    """The line for a link closed for good (`detail`: the close as `link_closes.close_text`
    says it, maybe within the hello's failure)."""
    if f"({CloseCode.REPLACED.value}" in detail:
        return (
            f"connection closed: {detail}; another program uses the same identity, this one stops"
        )
    return f"connection closed: {detail}; this program stops"


class PlainEvents:
    """The line mode's state, its output, and the server's messages said as they arrive
    (`on_event`, a listener of the session)."""

    def __init__(
        self,
        session: Session,
        out: TextIO,
        *,
        width: int = 80,
        interactive: bool = False,
        no_race: str = NO_RACE,
        back: Callable[[RaceId], str] = line_mode_back,
    ) -> None:
        self.session = session
        self.out = out
        self.width = width
        #: How the player comes back to a race once the program has ended (`leaving_line`).
        self.back = back
        #: What a command on the current race says when there is none (a tournament's line
        #: mode has races that come, not races to create or join).
        self.no_race = no_race
        #: The input is a person at a terminal, not a script (a pipe, a file): while a command
        #: waits for an open race's start, what they type meanwhile may act at once.
        self.interactive = interactive
        self.race_id: RaceId | None = None
        #: Set when the link is closed for good: `run` ends.
        self.closed = asyncio.Event()
        self._seen: dict[PlayerId, tuple[int, str]] = {}
        #: Races this program created: those still open are left on `quit`.
        self._created: set[RaceId] = set()
        self._status: dict[RaceId, str] = {}
        #: Moves whose wait ran out (sequence numbers): their answer is said when it comes,
        #: once. Any other answer not waited for is a second answer to a move sent again
        #: (`duplicate`), already said.
        self._late: set[int] = set()
        #: The one `quit` (the end of the input and a stop signal may both ask for it).
        self._quitting: asyncio.Task[None] | None = None
        #: The command lines read and not run yet (read all the while `run` runs).
        self._input = TypedLines()
        #: `quit` typed while a command waited for an open race's start: it ends `run`.
        self._quit_asked = False
        #: The last `reconnecting…` line said while the link is down: a failed try that gives
        #: the same reason again is not said again (a server down for a minute is tried a
        #: dozen times).
        self._reconnecting_said: str | None = None
        session.listeners.append(self.on_event)

    def say(self, text: str) -> None:
        self.out.write(printable(text) + "\n")
        self.out.flush()

    @property
    def race(self) -> RaceState | None:
        return None if self.race_id is None else self.session.state.races.get(self.race_id)

    def name_of(self, race: RaceState, player_id: PlayerId) -> str:
        racer = race.racers.get(player_id)
        return racer.name if racer else player_id

    def print_board(self) -> None:
        board = None if self.race_id is None else self.session.state.my_board(self.race_id)
        if board is None:
            self.say("no board yet")
            return
        self.say(render_plain(board, self.width))

    # --- events --------------------------------------------------------------------------

    def on_event(self, incoming: Incoming) -> None:
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.RECONNECTING:
                line = f"reconnecting… ({incoming.detail})"
                if line != self._reconnecting_said:
                    self.say(line)
                self._reconnecting_said = line
            elif incoming.status is LinkStatus.CONNECTED:
                self._reconnecting_said = None
                self.say("reconnected")
            else:
                self.say(closed_text(incoming.detail))
                self.closed.set()
            return
        race_id = getattr(incoming, "race_id", None)
        if race_id is None and isinstance(incoming, Error):
            if not self.session.was_awaited(incoming):  # a refusal of a request not waited for
                self.say(f"error: {incoming.message} ({incoming.code})")
            return
        if race_id is None or race_id != self.race_id:
            return
        race = self.session.state.races[race_id]
        if isinstance(incoming, Board | MoveAck) and race.unusable is not None:
            self.say(f"error: {race.unusable}")  # dropped: the board stays as it was
            return
        if isinstance(incoming, RaceUpdate | RaceSnapshot):
            self._on_update(race)
        elif isinstance(incoming, RaceStarted):
            limit = (incoming.ends_at_ms - incoming.started_at_ms) // 1000
            chosen = ""
            if race.deal_chosen and race.info and race.info.creator != self.session.me:
                chosen = ", the creator chose its deal"
            self.say(f"race started ({limit}s{chosen}); commitment {incoming.commitment}")
        elif isinstance(incoming, Board) and incoming.player_id == self.session.me:
            self.print_board()
        elif isinstance(incoming, Progress) and incoming.progress.player_id == self.session.me:
            entry = incoming.progress  # a change of the own state: the resign's confirmation
            if (
                entry.state == "resigned"
                and self._seen.get(entry.player_id, (0, ""))[1] != "resigned"
            ):
                self.say(f"resigned from race {race_id}")
            self._seen[entry.player_id] = (entry.on_foundations, entry.state)
        elif isinstance(incoming, Progress):
            entry = incoming.progress
            mark = (entry.on_foundations, entry.state)
            if self._seen.get(entry.player_id) != mark:
                self._seen[entry.player_id] = mark
                name = self.name_of(race, entry.player_id)
                self.say(
                    f"progress {name} {entry.on_foundations}/{entry.total} {entry.state} "
                    f"({entry.moves} move{'' if entry.moves == 1 else 's'})"
                )
        elif isinstance(incoming, RaceFinished):
            self.print_result(race)
        elif isinstance(incoming, MoveAck | MoveRejected) and not self.session.was_awaited(
            incoming
        ):
            # The answer to a move whose wait ran out (the link was down: the move was sent
            # again once it was back): said now, so that nobody plays it twice; once, though
            # a move sent twice may be answered twice.
            if incoming.seq not in self._late:
                return
            self._late.discard(incoming.seq)
            if isinstance(incoming, MoveAck):
                self.say(f"ok {incoming.move} (answered late)")
                self.print_board()
            else:
                self.say(f"refused {incoming.move}: {incoming.reason} (answered late)")
        elif isinstance(incoming, Error) and race.lost is not None and incoming.request is None:
            self.say_lost(race)  # said even to a wait: it ends any wait on the race
        elif is_gone(incoming) and race.gone is not None and not self.session.was_awaited(incoming):
            self.say(self.gone_text(race, race.gone))  # a wait says it when it ends
        elif isinstance(incoming, Error) and not self.session.was_awaited(incoming):
            self.say(f"error: {incoming.message} ({incoming.code})")

    def say_lost(self, race: RaceState) -> None:
        """Say that the server lost `race` (its `lost`), and what the player can do."""
        line = f"race {race.race_id}: {race.lost}: it cannot go on and will have no result"
        if self.session.state.tournament_of(race.race_id) is None:
            line += " ('create' or 'join' another race, or 'quit')"
        self.say(line)

    def _on_update(self, race: RaceState) -> None:
        info = race.info
        if info is None:
            return
        names = sorted(r.name for r in info.racers)
        joined = ",".join(names)
        key = f"{info.status}|{joined}"
        if self._status.get(race.race_id) == key:
            return
        self._status[race.race_id] = key
        if info.status == "countdown" and info.start_at_ms is not None:
            wait = max(0, info.start_at_ms - self.session.conn.server_now_ms()) / 1000
            self.say(f"countdown: starting in {wait:.0f}s ({joined})")
        elif info.status == "open":
            self.say(f"waiting for players: {len(names)}/{info.seats} ({joined})")
        elif info.status == "cancelled":
            self.say("race cancelled")

    def print_result(self, race: RaceState) -> None:
        self.say("race finished")
        for entry in race.results or []:
            self.say(result_line(entry))
        if race.commitment_ok is not None:
            self.say(deal_line(race))
        elif race.deal_held:
            self.say("deal held until the tournament round ends (checked then)")

    def gone_text(self, race: RaceState, gone: str) -> str:
        """What is said of `race` once the server no longer has it (`gone`: its words)."""
        where = self.session.race_on_server(race.race_id)
        return (
            f"race {race.race_id}: the server no longer has it ({gone}); if it has finished, "
            f"'solrace replay {where}' shows it"
        )


__all__ = ["PlainEvents", "closed_text"]
