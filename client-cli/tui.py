"""The Textual applications: `PlayApp` (lobby -> race -> result), `WatchApp`, `ReplayApp`.

The session's pump runs beside the app on the same event loop; each server message reaches the
app as a `ServerEvent`, after the state has folded it in. The app then moves between screens
(a race that starts opens the race screen, a race that ends the result screen) and asks the
current screen to redraw.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import App
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    ReplayModel,
)

from .connection import Incoming, LinkStatus, StatusChange
from .screens import LobbyScreen, RaceScreen, ResultScreen
from .session import RequestError, Session
from .watching import ReplayScreen, WatchPicker, WatchScreen

if TYPE_CHECKING:
    from .app import Opponents

CSS = """
.form { height: 1; margin: 0 0 1 0; }
.form > * { margin-right: 1; }
.form Input { width: 12; }
.form Select { width: 24; }
#races { height: 1fr; }
#ranking { height: auto; max-height: 12; }
#race-head, #watch-head { height: 1; }
#message { height: 1; }
#move { height: 1; }
#lobby-status, #reveal { height: auto; margin: 1 0; }
#watch-boards { height: 1fr; }
"""


class ServerEvent(Message):
    """One server message (or link status change), already applied to the state."""

    def __init__(self, incoming: Incoming) -> None:
        super().__init__()
        self.incoming = incoming


class _SessionApp(App[None]):
    """Shared by the play and watch apps: forwards the session's messages as events."""

    CSS = CSS

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        session.listeners.append(self._forward)

    def _forward(self, incoming: Incoming) -> None:
        self.post_message(ServerEvent(incoming))

    def on_unmount(self) -> None:
        if self._forward in self.session.listeners:
            self.session.listeners.remove(self._forward)

    def redraw(self) -> None:
        update = getattr(self.screen, "update_view", None)
        if callable(update):
            with contextlib.suppress(NoMatches):  # a screen pushed but not composed yet
                update()

    def background(self, work: Awaitable[object]) -> None:
        """Run a request; a refusal becomes a notification."""

        async def run() -> None:
            try:
                await work
            except RequestError as exc:
                self.notify(exc.message, title="refused", severity="warning")
            except TimeoutError:
                self.notify("no answer from the server", severity="error")

        self.run_worker(run(), exclusive=False)

    def on_server_event(self, event: ServerEvent) -> None:
        incoming = event.incoming
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.RECONNECTING:
                self.sub_title = "reconnecting…"
            elif incoming.status is LinkStatus.CONNECTED:
                self.sub_title = ""
                self.notify("reconnected")
            else:
                self.sub_title = "disconnected"
                self.notify(f"connection closed: {incoming.detail}", severity="error")
        elif isinstance(incoming, Error) and incoming.request is None:
            self.notify(incoming.message, title=incoming.code, severity="warning")
        if not self.screen_stack:
            # Events can arrive while screens are being swapped (or before the first one):
            # the next screen reads the session's state when it mounts.
            return
        self.after_event(incoming)
        self.redraw()

    def after_event(self, incoming: Incoming) -> None:
        """Screen changes an event causes (subclasses)."""


class PlayApp(_SessionApp):
    TITLE = "solrace"

    def __init__(
        self,
        session: Session,
        *,
        opponents: Opponents | None = None,
        game: str = "klondike",
        args: argparse.Namespace | None = None,
    ) -> None:
        super().__init__(session)
        self.opponents = opponents
        self.game = game
        self.ascii = bool(args and args.ascii)
        self.time_limit = args.time_limit if args else 600
        self.race_id: str | None = None
        self.auto_race = opponents is not None
        self.start_race_id = args.race if args else None
        self.invite = args.invite if args else None

    def on_mount(self) -> None:
        self.push_screen(LobbyScreen())
        self.set_interval(0.5, self._tick)
        if self.auto_race:
            self.create_race(self.game, 2, self.time_limit)
        elif self.start_race_id:
            self.join_race(self.start_race_id, self.invite)

    def _tick(self) -> None:
        if isinstance(self.screen, RaceScreen):
            with contextlib.suppress(NoMatches):
                self.screen.update_clock()

    # --- lobby actions -------------------------------------------------------------------

    def refresh_lobby(self) -> None:
        self.background(self.session.list_races())

    def lobby_status(self) -> Text:
        race = self.session.state.races.get(self.race_id) if self.race_id else None
        if race is None or race.info is None:
            return Text("create a race, or pick one and join it", style="dim")
        info = race.info
        names = ", ".join(r.name for r in info.racers)
        text = f"your race {info.race_id} ({info.game}): {info.status}, "
        text += f"{len(info.racers)}/{info.seats} seats: {names}"
        if info.status == "open" and info.creator == self.session.state.player_id:
            text += "  — Start when ready (Ctrl+S)"
        return Text(text)

    def create_race(
        self,
        game: str,
        seats: int,
        time_limit_s: int,
        *,
        rated: bool = False,
        invite_code: str | None = None,
    ) -> None:
        async def work() -> None:
            race_id = await self.session.create_race(
                game, seats, time_limit_s, rated=rated, invite_code=invite_code
            )
            self.race_id = race_id
            self.game = game
            self.time_limit = time_limit_s
            if self.opponents is not None:
                await self.opponents.seat(race_id)
            self.redraw()

        self.background(work())

    def join_race(self, race_id: str, invite_code: str | None = None) -> None:
        async def work() -> None:
            await self.session.join_race(race_id, invite_code)
            self.race_id = race_id
            self.redraw()

        self.background(work())

    def start_current(self) -> None:
        if self.race_id:
            self.background(self.session.start_race(self.race_id))

    def leave_current(self) -> None:
        if self.race_id:
            self.background(self.session.leave_race(self.race_id))
            self.race_id = None

    def resign_current(self, race_id: str) -> None:
        self.background(self.session.resign(race_id))

    def send_move(self, race_id: str, text: str, screen: RaceScreen) -> None:
        async def work() -> None:
            reason = await self.session.send_move(race_id, text)
            if reason is not None:
                screen.say(f"refused {text}: {reason}")

        self.background(work())

    def rematch(self, race_id: str) -> None:
        race = self.session.state.races.get(race_id)
        info = race.info if race else None
        self.back_to_lobby()
        if info is not None:
            self.create_race(info.game, info.seats, info.time_limit_s, rated=info.rated)

    def back_to_lobby(self) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()
        self.race_id = None
        self.refresh_lobby()

    # --- screen changes ------------------------------------------------------------------

    def after_event(self, incoming: Incoming) -> None:
        race_id = self.race_id
        if race_id is None or getattr(incoming, "race_id", None) != race_id:
            return
        race = self.session.state.races.get(race_id)
        if race is None:
            return
        screen = self.screen
        if isinstance(incoming, MoveRejected) and isinstance(screen, RaceScreen):
            screen.message = f"refused {incoming.move}: {incoming.reason}"
        if isinstance(incoming, MoveAck) and isinstance(screen, RaceScreen):
            screen.message = ""
        if race.is_finished and race.results is not None:
            if isinstance(screen, RaceScreen):
                self.switch_screen(ResultScreen(race_id))
            elif isinstance(screen, LobbyScreen):
                self.push_screen(ResultScreen(race_id))
            return
        starting = race.status in ("countdown", "running") or isinstance(incoming, Board)
        if (
            starting
            and isinstance(screen, LobbyScreen)
            and isinstance(incoming, RaceUpdate | RaceStarted | RaceSnapshot | Board)
        ):
            self.push_screen(RaceScreen(race_id, ascii=self.ascii))


class WatchApp(_SessionApp):
    TITLE = "solrace watch"

    def __init__(
        self,
        session: Session,
        *,
        race_id: str | None = None,
        follow: bool = False,
        ascii: bool = False,
    ) -> None:
        super().__init__(session)
        self.first_race = race_id
        self.follow = follow
        self.ascii = ascii

    def home_screen(self) -> Screen[None]:
        """The screen under the watched races (Esc on a race comes back to it)."""
        return WatchPicker()

    def on_mount(self) -> None:
        self.push_screen(self.home_screen())
        if self.first_race:
            self.watch_race(self.first_race)
        self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        if isinstance(self.screen, WatchScreen):
            with contextlib.suppress(NoMatches):
                self.screen.update_head()

    def watch_race(self, race_id: str) -> None:
        self.background(self.session.watch(race_id))
        if isinstance(self.screen, WatchScreen):
            self.switch_screen(WatchScreen(race_id, ascii=self.ascii))
        else:
            self.push_screen(WatchScreen(race_id, ascii=self.ascii))

    def after_event(self, incoming: Incoming) -> None:
        screen = self.screen
        if isinstance(screen, WatchScreen):
            screen.on_race_event(incoming)
        elif isinstance(screen, WatchPicker) and self.follow:
            screen.follow_next()


class ReplayApp(App[None]):
    TITLE = "solrace replay"
    CSS = CSS

    def __init__(self, replay: ReplayModel, *, ascii: bool = False) -> None:
        super().__init__()
        self.replay = replay
        self.ascii = ascii

    def on_mount(self) -> None:
        self.push_screen(ReplayScreen(self.replay, ascii=self.ascii))
