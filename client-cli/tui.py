"""The Textual applications: `PlayApp` (lobby -> race -> result), `WatchApp`, `ReplayApp`.

The session's pump runs beside the app on the same event loop; each server message reaches the
app as a `ServerEvent`, after the state has folded it in. The app then moves between screens
(a race that starts opens the race screen, a race that ends the result screen) and asks the
current screen to redraw.

Tournaments: `PlayApp` also plays a person's tournament races. A `tournament_race` notice (the
server seated the player in a match's race) opens the race screen for it, from any screen but
another live race; when the race ends, its result shows a few seconds, then the tournament
screen comes back until the next race. Started as `solrace tournament join|play ID` the app
opens on that tournament's screen and checks in by itself when check-in opens. A tournament
race's deal is held until its round ends: once a pushed tournament view shows that, the app
fetches the race's replay and checks the deal against the commitment received at the start
(`held_deals.py`, shared with the plain mode), then notifies and redraws the result screen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.app import App
from textual.css.query import NoMatches
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    ReplayModel,
    Sync,
)
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    TournamentModel,
    TournamentRace,
    TournamentView,
    WatchTournament,
)

from .held_deals import HeldDeals
from .link_status import Incoming, LinkStatus, StatusChange
from .lobby_screen import LobbyScreen
from .race_screen import RaceScreen
from .result_screen import ResultScreen
from .session import LinkClosedError, RequestError, Session, tournament_view_of
from .tournament_render import must_check_in
from .watching import ReplayScreen, WatchPicker, WatchScreen
from .wire_text import one_line

if TYPE_CHECKING:
    from .app import Opponents

#: How long quitting waits for the server to take back the open races the app created.
QUIT_LEAVE_S = 3.0

CSS = """
.form { height: 1; margin: 0 0 1 0; }
.form > * { margin-right: 1; }
.form Input { width: 14; }
.form #join-id { width: 16; }
.form #seats, .form #time { width: 8; }
.form Select { width: 24; }
.form Button { width: auto; min-width: 6; }
DataTable#races, DataTable#tournaments { height: 1fr; }
#ranking { height: auto; max-height: 12; }
#race-head, #watch-head { height: auto; }
#message { height: auto; max-height: 3; }
#move { height: 1; }
#lobby-status, #reveal { height: auto; margin: 1 0; }
#watch-boards { height: 1fr; grid-gutter: 1 2; }
Screen.-narrow #create-form, Screen.-narrow #join-form {
    layout: grid; grid-size: 4; grid-rows: 1; height: auto; grid-gutter: 0 1;
}
Screen.-narrow #create-form > *, Screen.-narrow #join-form > * { margin-right: 0; }
Screen.-narrow #create-form { grid-columns: 10 24 8 8; }
Screen.-narrow #join-form { grid-columns: 9 16 13 7; }
"""


class ServerEvent(Message):
    """One server message (or link status change), already applied to the state."""

    def __init__(self, incoming: Incoming) -> None:
        super().__init__()
        self.incoming = incoming


#: The smallest terminal the screens are drawn for (a board beside the racers, the lobby's
#: table and form); smaller, they are cut off, and the app says so.
MIN_COLUMNS, MIN_LINES = 60, 20


def cramped(width: int, height: int) -> str | None:
    """What to tell a player whose terminal is `width` x `height`, if it is too small."""
    if width >= MIN_COLUMNS and height >= MIN_LINES:
        return None
    return (
        f"the terminal is {width}x{height}: solrace needs at least {MIN_COLUMNS}x{MIN_LINES}"
        " (enlarge it; --plain works in any size)"
    )


class _RoomCheck(App[None]):
    """An app that says (once, and again each time it becomes too small after being big
    enough) when the terminal is smaller than its screens need."""

    #: Below 80 columns a screen has the class `-narrow` (the lobby's forms fold onto more
    #: rows). Not a ClassVar: Textual's annotation of it is not one to mypy.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-wide")]  # noqa: RUF012

    #: The notice last given about the terminal's size (None while it is big enough).
    room_notice: str | None = None

    def check_room(self, width: int, height: int) -> None:
        notice = cramped(width, height)
        if notice is not None and self.room_notice is None:
            self.notify(notice, title="terminal too small", severity="warning", timeout=10)
        self.room_notice = notice

    def on_resize(self, event: events.Resize) -> None:
        self.check_room(event.size.width, event.size.height)


class _SessionApp(_RoomCheck):
    """Shared by the play and watch apps: forwards the session's messages as events."""

    CSS = CSS

    def __init__(self, session: Session, *, ascii: bool = False) -> None:
        super().__init__()
        self.session = session
        self.ascii = ascii
        self.follow = False
        session.listeners.append(self._forward)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast: its texts often carry the server's (an error's message, a name), so they
        are shown as they are (`one_line`, no markup) unless a caller asks for markup."""
        super().notify(
            one_line(message),
            title=one_line(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def action_help_quit(self) -> None:
        """Ctrl+C: how to quit (Textual's own toast says it with markup, which `notify` here
        shows as typed)."""
        for key, active in self.active_bindings.items():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(f"Press {key} to quit", title="Do you want to quit?")
                return

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

    def subscribe_tournament(self, tournament_id: str) -> None:
        """Ask for a tournament's view and every change after it."""
        watch = WatchTournament(tournament_id=tournament_id)
        self.background(self.session.request(watch, tournament_view_of(tournament_id)))

    def watch_race(self, race_id: RaceId) -> None:
        """Spectate a race on the watch screen (Esc comes back)."""
        self.background(self.session.watch(race_id))
        if isinstance(self.screen, WatchScreen):
            self.switch_screen(WatchScreen(race_id, ascii=self.ascii))
        else:
            self.push_screen(WatchScreen(race_id, ascii=self.ascii))

    def on_server_event(self, event: ServerEvent) -> None:
        incoming = event.incoming
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.RECONNECTING:
                self.sub_title = "reconnecting…"
            elif incoming.status is LinkStatus.CONNECTED:
                self.sub_title = ""
                self.notify("reconnected")  # the connection watched its tournaments again
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
    #: Seconds a tournament race's result stays on screen before the tournament comes back.
    RESULT_PAUSE_S: ClassVar[float] = 5.0

    def __init__(
        self,
        session: Session,
        *,
        opponents: Opponents | None = None,
        game: str = "klondike",
        args: argparse.Namespace | None = None,
        tournament_id: str | None = None,
    ) -> None:
        super().__init__(session, ascii=bool(args and args.ascii))
        self.opponents = opponents
        self.game = game
        #: Opened on this tournament's screen (`solrace tournament join|play ID`).
        self.tournament_id = tournament_id
        #: Tournaments this player plays in here: checked in by the app when check-in opens.
        self.playing: set[str] = set() if tournament_id is None else {tournament_id}
        self._checked_in: set[str] = set()
        #: The held deals of this player's tournament races, checked when their round ends.
        self.deals = HeldDeals(session)
        self.time_limit = args.time_limit if args else 600
        self.race_id: RaceId | None = None
        #: Races this app created: those still open are left when it quits.
        self.created: set[RaceId] = set()
        #: What quitting did (races left), printed once the terminal is restored.
        self.farewell: list[str] = []
        self.auto_race = opponents is not None
        self.start_race_id: RaceId | None = args.race if args else None
        self.invite = args.invite if args else None
        #: `--create GAME --seats N`: the race to create at the start (with a server).
        self.create_first: tuple[str, int] | None = None
        if args is not None and getattr(args, "create", None):
            self.create_first = (args.create, args.seats)
        #: `--rated`, `--game-number N`: the first race's (created at the start).
        self.first_rated = bool(getattr(args, "rated", False))
        self.first_number: str | None = getattr(args, "game_number", None)

    def on_mount(self) -> None:
        if self.tournament_id is not None:
            from .tournament_screen import TournamentScreen

            self.push_screen(TournamentScreen(self.tournament_id))
            waiting = self.session.state.races_to_play(self.tournament_id)
            if waiting:  # back in a tournament whose race is on
                self.open_race(waiting[0])
        else:
            self.push_screen(LobbyScreen())
        self.set_interval(0.5, self._tick)
        rated, number = self.first_rated, self.first_number
        if self.auto_race and not self.start_race_id:  # `--race` goes back to that race
            self.create_race(self.game, 2, self.time_limit, rated=rated, game_number=number)
        elif self.create_first is not None:
            game, seats = self.create_first
            self.create_race(
                game,
                seats,
                self.time_limit,
                rated=rated,
                invite_code=self.invite,
                game_number=number,
            )
        elif self.start_race_id:
            self.join_race(self.start_race_id, self.invite)

    def _tick(self) -> None:
        if not self.screen_stack:  # shutting down: the screens are gone before the timer
            return
        if isinstance(self.screen, RaceScreen):
            with contextlib.suppress(NoMatches):
                self.screen.update_clock()

    # --- lobby actions -------------------------------------------------------------------

    def refresh_lobby(self, *, follow: bool = True) -> None:
        """Ask for the race list; with `follow`, the server pushes it again on changes."""
        self.background(self.session.list_races(follow=follow))

    def lobby_status(self) -> Text:
        race = self.session.state.races.get(self.race_id) if self.race_id else None
        mine = self.session.state.races_to_play()
        if mine and (race is None or race.info is None):
            return Text(f"your races in progress: {', '.join(mine)} — Ctrl+R resumes")
        if race is None or race.info is None:
            return Text(
                "create a race, or pick one and join it; Ctrl+T lists tournaments", style="dim"
            )
        info = race.info
        names = ", ".join(r.name for r in info.racers)
        text = f"your race {info.race_id} ({info.game}): {info.status}, "
        text += f"{len(info.racers)}/{info.seats} seats: {names}"
        if info.deal_chosen:
            text += " (the creator chose its deal)"
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
        game_number: str | None = None,
    ) -> None:
        async def work() -> None:
            race_id = await self.session.create_race(
                game,
                seats,
                time_limit_s,
                rated=rated,
                invite_code=invite_code,
                game_number=game_number,
            )
            self.race_id = race_id
            self.created.add(race_id)
            self.game = game
            self.time_limit = time_limit_s
            if self.opponents is not None:
                await self.opponents.seat(race_id)
            self.redraw()

        self.background(work())

    async def action_quit(self) -> None:
        """Quit (Esc on the lobby's list, `q` on a result, Ctrl+Q): the open races this app
        created are left first (no one should join a race nobody will play), as the line
        mode's `quit` does; what was left is said once the terminal is restored."""
        for line in await self.leave_created():
            self.farewell.append(line)
            self.notify(line)
        self.exit()

    async def leave_created(self) -> list[str]:
        """Leave every race this app created that is still open with this player in it: all
        at once, within `QUIT_LEAVE_S` (quitting must not wait long on a slow server), and
        none while the link is down (the server takes the seat back after its grace)."""
        me = self.session.state.player_id
        open_races = [
            race_id
            for race_id in sorted(self.created)
            if (race := self.session.state.races.get(race_id)) is not None
            and race.status == "open"
            and me in race.racers
        ]
        if not open_races:
            return []
        if self.session.link is not LinkStatus.CONNECTED:
            return [
                f"cannot leave race {race_id}: the server is not reachable (it gives the seat "
                "up after its grace period)"
                for race_id in open_races
            ]
        outcomes = await asyncio.gather(*(self._leave_created(race_id) for race_id in open_races))
        return list(outcomes)

    async def _leave_created(self, race_id: RaceId) -> str:
        try:
            await asyncio.wait_for(self.session.leave_race(race_id), QUIT_LEAVE_S)
        except TimeoutError:
            return f"cannot leave race {race_id}: no answer from the server"
        except (LinkClosedError, RequestError) as exc:
            return f"cannot leave race {race_id}: {exc}"
        if self.race_id == race_id:
            self.race_id = None
        return f"left race {race_id}: it had not started"

    def join_race(self, race_id: RaceId, invite_code: str | None = None) -> None:
        async def work() -> None:
            try:
                await self.session.join_race(race_id, invite_code)
            except RequestError as exc:
                if exc.code != ErrorCode.BAD_INVITE:
                    raise
                # The one invite field stands in the create form: say that Join reads it too.
                where = "type the race's code in the invite code field, then Join"
                self.notify(f"{exc.message}: {where}", title="refused", severity="warning")
                return
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

    def resign_current(self, race_id: RaceId) -> None:
        self.background(self.session.resign(race_id))

    def send_move(self, race_id: RaceId, text: str, screen: RaceScreen) -> None:
        """Send a move of the race `screen` shows; one of a race the server lost or no longer
        has is not sent (the screen already says what became of the race)."""
        race = self.session.state.races.get(race_id)
        if race is not None and race.is_off_server:
            screen.update_view()
            return

        async def work() -> None:
            reason = await self.session.send_move(race_id, text)
            if reason is not None:
                screen.say(f"refused {text}: {reason}")

        self.background(work())

    def rematch(self, race_id: RaceId) -> None:
        if self.session.state.tournament_of(race_id) is not None:
            self.notify("a tournament race has no rematch", severity="warning")
            return
        race = self.session.state.races.get(race_id)
        info = race.info if race else None
        self.back_to_lobby()
        if info is not None:
            self.create_race(info.game, info.seats, info.time_limit_s, rated=info.rated)

    def back_to_lobby(self, *, keep_race: bool = False) -> None:
        """The lobby again; with `keep_race`, the current race stays the lobby's (its Start,
        Leave and status line), as an open race must."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if not keep_race:
            self.race_id = None
        self.refresh_lobby()

    # --- races the server seats the player in (tournaments) ------------------------------

    def open_race(self, race_id: RaceId) -> None:
        """Show the race screen of a race this player is seated in (resync it first when its
        board is not here: a race from `welcome.active_races`, or one opened while away)."""
        if self.session.state.my_board(race_id) is None:
            self.background(self.session.conn.send(Sync(race_id=race_id)))
        self.race_id = race_id
        self._pop_races()
        self.push_screen(RaceScreen(race_id, ascii=self.ascii))

    def resume_race(self) -> None:
        """The lobby's Ctrl+R: the oldest live race this player still plays in; one not
        started yet becomes the lobby's race (there is no board to show before the start)."""
        mine = self.session.state.races_to_play()
        if not mine:
            self.notify("no race of yours is on")
            return
        race = self.session.state.races.get(mine[0])
        if race is not None and race.status == "open":
            self.race_id = mine[0]
            self.notify(f"race {mine[0]} has not started: it is in the lobby's status line")
            self.redraw()
            return
        self.open_race(mine[0])

    def _pop_races(self) -> None:
        while len(self.screen_stack) > 2 and isinstance(
            self.screen, RaceScreen | ResultScreen | WatchScreen
        ):
            self.pop_screen()

    def is_mine(self, race_id: RaceId) -> bool:
        state = self.session.state
        if race_id in state.races_to_play():
            return True
        return any(
            live.race_id == race_id and state.player_id in live.players
            for view in state.tournaments.values()
            for live in view.live
        )

    def watch_race(self, race_id: RaceId) -> None:
        if self.is_mine(race_id):
            self.open_race(race_id)  # racers cannot watch their own race: play it
        else:
            super().watch_race(race_id)

    def play_tournament(self, tournament_id: str) -> None:
        """Join a tournament (from its screen or the list) and play its races here."""
        self.playing.add(tournament_id)
        join = JoinTournament(tournament_id=tournament_id)
        self.background(self.session.request(join, tournament_view_of(tournament_id)))

    def check_in(self, tournament_id: str) -> None:
        self.playing.add(tournament_id)
        self._checked_in.add(tournament_id)
        self.background(self.session.conn.send(CheckIn(tournament_id=tournament_id)))

    def open_tournament(self, tournament_id: str) -> None:
        from .tournament_screen import TournamentScreen

        screen = self.screen
        if isinstance(screen, TournamentScreen) and screen.tournament_id == tournament_id:
            return
        self.push_screen(TournamentScreen(tournament_id))

    def back_to_tournament(self, race_id: RaceId) -> None:
        """After a tournament race: its tournament's screen (under the race, or a new one)."""
        tournament_id = self.session.state.tournament_of(race_id)
        self._pop_races()
        if self.race_id == race_id:
            self.race_id = None
        if tournament_id is not None:
            self.open_tournament(tournament_id)

    def _on_view(self, view: TournamentModel) -> None:
        tid = view.tournament_id
        if (
            tid in self.playing
            and tid not in self._checked_in
            and must_check_in(view, self.session.state.player_id)
        ):
            self.check_in(tid)

    def check_deals(self) -> None:
        """Fetch and check the held deals of the player's races whose round has ended."""
        for race_id in self.deals.claim():
            self.run_worker(self._check_deal(race_id), exclusive=False)

    async def _check_deal(self, race_id: RaceId) -> None:
        check = await self.deals.check(race_id)
        if check.ok is None:
            self.notify(check.text, title="deal not checked", severity="warning")
        elif check.ok:
            self.notify(f"race {race_id}: {check.text}", title="round over")
        else:
            self.notify(f"race {race_id}: {check.text}", title="round over", severity="error")
        self.redraw()

    def _on_tournament_race(self, notice: TournamentRace) -> None:
        if self.session.state.player_id not in notice.players:
            return
        screen = self.screen
        if isinstance(screen, RaceScreen):
            if screen.race_id == notice.race_id:
                return
            current = self.session.state.races.get(screen.race_id)
            if current is not None and current.is_live:  # busy: say so, do not take over
                self.notify(f"tournament race {notice.race_id} ({notice.match_id}) is ready")
                return
        self.notify(f"match {notice.match_id}, race {notice.race_number}: {notice.race_id}")
        self.open_race(notice.race_id)

    # --- screen changes ------------------------------------------------------------------

    def after_event(self, incoming: Incoming) -> None:
        if isinstance(incoming, TournamentView | RaceFinished):
            self.check_deals()  # a round ended (its races' deals are released) or a race did
        if isinstance(incoming, TournamentRace):
            self._on_tournament_race(incoming)
            return
        if isinstance(incoming, TournamentView):
            self._on_view(incoming.tournament)
            return
        race_id = self.race_id
        if race_id is None or getattr(incoming, "race_id", None) != race_id:
            return
        race = self.session.state.races.get(race_id)
        if race is None:
            return
        screen = self.screen
        if race.status == "cancelled" and isinstance(screen, RaceScreen):
            self.notify(f"race {race_id} was stopped: its match is decided", severity="warning")
            if self.session.state.tournament_of(race_id) is not None:
                self.back_to_tournament(race_id)
            else:
                self.back_to_lobby()
            return
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
        race_id: RaceId | None = None,
        follow: bool = False,
        ascii: bool = False,
        watching: bool = False,
    ) -> None:
        """`watching`: `race_id` is watched already (`session.watch` answered)."""
        super().__init__(session, ascii=ascii)
        self.first_race = race_id
        self.follow = follow
        self.watching = watching

    def home_screen(self) -> Screen[None]:
        """The screen under the watched races (Esc on a race comes back to it)."""
        return WatchPicker()

    def on_mount(self) -> None:
        self.push_screen(self.home_screen())
        if self.first_race and self.watching:
            self.push_screen(WatchScreen(self.first_race, ascii=self.ascii))
        elif self.first_race:
            self.watch_race(self.first_race)
        self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        if not self.screen_stack:  # shutting down: the screens are gone before the timer
            return
        if isinstance(self.screen, WatchScreen):
            with contextlib.suppress(NoMatches):
                self.screen.update_head()

    def after_event(self, incoming: Incoming) -> None:
        screen = self.screen
        if isinstance(screen, WatchScreen):
            screen.on_race_event(incoming)
        elif isinstance(screen, WatchPicker) and self.follow:
            screen.follow_next()


class ReplayApp(_RoomCheck):
    TITLE = "solrace replay"
    CSS = CSS

    def __init__(self, replay: ReplayModel, *, ascii: bool = False) -> None:
        super().__init__()
        self.replay = replay
        self.ascii = ascii

    def on_mount(self) -> None:
        self.push_screen(ReplayScreen(self.replay, ascii=self.ascii))
