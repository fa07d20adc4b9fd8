"""Who watches which tournament, and the views that go to them.

A watched tournament's view goes to its watchers at most every `tournament_view_push_s` (a
burst of changes, a round's races ending together, is one view a watcher reads, not one
each), encoded once per version for every watcher and every answer of that version.

While a saved change is still being carried out (races opened or stopped, deals released:
`carrying_out`), no view of that tournament goes out: the newest is held back and pushed once
the last such change is done, so a watcher never sees a round ended whose deals are still
held.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from solrace.server.protocol.codec import encode
from solrace.server.protocol.tournament_messages import TournamentView
from solrace.server.protocol.tournament_view import build_view
from solrace.server.session import Session
from solrace.server.tournament_live import Live


@dataclass
class _Pushes:
    """A watched tournament's watchers and the views they get: the version they last got,
    when the next may go, the newest waiting for that and its timer, and the view's frame
    with its version (built once for every watcher)."""

    watchers: set[Session] = field(default_factory=set)
    pushed: int = 0
    next_at: float = 0.0
    waiting: Live | None = None
    timer: asyncio.TimerHandle | None = None
    frame: tuple[int, bytes] | None = None

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.waiting = None


@dataclass
class _Settling:
    """A tournament with saved changes still being carried out: how many such changes, and
    the newest version held back meanwhile (pushed once the last is done)."""

    steps: int = 0
    held: Live | None = None


def view_of(live: Live) -> TournamentView:
    return TournamentView(
        tournament=build_view(
            live.tournament,
            version=live.version,
            name=live.name,
            time_limit_s=live.time_limit_s,
            names=live.names,
            race_id_of=live.race_id_of,
        )
    )


class TournamentViews:
    """The watchers of each tournament (kept while it has one) and the views sent to them and
    to requesters; `push_every_s` apart at most, per tournament."""

    def __init__(self, push_every_s: float) -> None:
        self.push_every_s = push_every_s
        self._pushes: dict[str, _Pushes] = {}
        self._settling: dict[str, _Settling] = {}

    def stop(self) -> None:
        """No view waits for its time any more."""
        for pushes in self._pushes.values():
            pushes.cancel()

    # --- watchers --------------------------------------------------------------------------

    def watch(self, session: Session, live: Live) -> None:
        """`session` watches the tournament from now on, starting with its view now."""
        self._pushes.setdefault(live.tournament_id, _Pushes()).watchers.add(session)
        self.send(session, live)

    def unwatch(self, session: Session, tournament_id: str) -> None:
        pushes = self._pushes.get(tournament_id)
        if pushes is None:
            return
        pushes.watchers.discard(session)
        if not pushes.watchers:
            del self._pushes[tournament_id]
            pushes.cancel()

    def session_closed(self, session: Session) -> None:
        """The hub's hook: a closed session watches nothing (nothing is kept for it)."""
        watched = [t for t, pushes in self._pushes.items() if session in pushes.watchers]
        for tournament_id in watched:
            self.unwatch(session, tournament_id)

    def watchers_of(self, tournament_id: str) -> frozenset[Session] | None:
        """The sessions watching `tournament_id`; None when nothing is kept for it (nobody
        watches it)."""
        pushes = self._pushes.get(tournament_id)
        return None if pushes is None else frozenset(pushes.watchers)

    def is_watched(self, tournament_id: str) -> bool:
        pushes = self._pushes.get(tournament_id)
        return pushes is not None and bool(pushes.watchers)

    def watched(self) -> list[str]:
        """Every tournament someone watches here."""
        return [tid for tid, pushes in self._pushes.items() if pushes.watchers]

    # --- views -----------------------------------------------------------------------------

    def send(self, session: Session, live: Live) -> None:
        session.send_frame(self._frame(live))

    def answer(self, session: Session, live: Live) -> None:
        """The requester gets the view (watchers get it with their next push)."""
        pushes = self._pushes.get(live.tournament_id)
        if pushes is None or session not in pushes.watchers:
            self.send(session, live)

    def push(self, live: Live) -> None:
        """`live`'s view to its watchers who do not have it: now, or once the last push is
        `push_every_s` old, or once the changes being carried out are done."""
        tournament_id = live.tournament_id
        settling = self._settling.get(tournament_id)
        if settling is not None:
            if settling.held is None or settling.held.version < live.version:
                settling.held = live
            return
        pushes = self._pushes.get(tournament_id)
        if pushes is None or not pushes.watchers or pushes.pushed >= live.version:
            return
        # A 256-player Swiss's view is ~0.3 MB and ~30 ms to build: one per burst.
        if pushes.waiting is not None:
            if pushes.waiting.version < live.version:
                pushes.waiting = live
            return
        loop = asyncio.get_running_loop()
        wait = pushes.next_at - loop.time()
        if wait > 0:
            pushes.waiting = live
            pushes.timer = loop.call_later(wait, self._push_waiting, pushes)
            return
        pushes.next_at = loop.time() + self.push_every_s
        pushes.pushed = live.version
        frame = self._frame(live)  # once for every watcher
        for session in list(pushes.watchers):
            if session.closed:
                pushes.watchers.discard(session)
            else:
                session.send_frame(frame)

    @contextmanager
    def carrying_out(self, tournament_id: str) -> Iterator[None]:
        """A saved change of the tournament is being carried out within: its views are held
        back until the last such change is done, then the newest goes out."""
        self._settling.setdefault(tournament_id, _Settling()).steps += 1
        try:
            yield
        finally:
            settling = self._settling[tournament_id]
            settling.steps -= 1
            if not settling.steps:
                del self._settling[tournament_id]
                if settling.held is not None:
                    self.push(settling.held)

    def _push_waiting(self, pushes: _Pushes) -> None:
        live, pushes.waiting, pushes.timer = pushes.waiting, None, None
        if live is not None:
            self.push(live)

    def _frame(self, live: Live) -> bytes:
        """`live`'s view, encoded: once per version while the tournament has watchers (a
        push, the answers and the watches of one version share it)."""
        pushes = self._pushes.get(live.tournament_id)
        if pushes is not None and pushes.frame is not None and pushes.frame[0] == live.version:
            return pushes.frame[1]
        frame = encode(view_of(live))
        if pushes is not None:
            pushes.frame = (live.version, frame)
        return frame
