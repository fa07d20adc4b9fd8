"""The tournament screen: the bracket drawn as a tree (elimination formats) or the standings
table (Swiss, round robin, heats), redrawn on every `tournament_view` the server pushes, and
the tournament's live matches: Enter on one watches its race on the usual watch screen.

`TournamentApp` is a `WatchApp` that opens on this screen (`solrace tournament show ID --tui`):
it subscribes with `watch_tournament` (again after a reconnect, since the server forgets a
closed session's subscriptions) and unsubscribes when it closes. The play app (`PlayApp`) shows
the same screen to a player (`solrace tournament join|play ID`, or Ctrl+T in the lobby): there
`j` joins, `c` checks in, Ctrl+R (or Enter on the player's own live match, where the cursor
goes when that race starts) opens the player's race screen, and the player's next race opens
by itself. A refused subscription (an unknown id) is said in the title, not only in a toast.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Static

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.tournament_messages import (
    LiveMatchModel,
    TournamentModel,
    UnwatchTournament,
    WatchTournament,
)

from .link_status import LinkStatus
from .session import RequestError, Session, tournament_view_of
from .tournament_render import must_check_in, names_of, render_board, render_title
from .tui import PlayApp, WatchApp, _SessionApp
from .widgets import FittedTable, KeysFooter, columned_table, selected_key
from .wire_text import as_text, one_line

TOURNAMENT_CSS = """
#t-head { height: auto; }
#t-body { height: 1fr; }
#t-live-head { height: 1; }
#t-live { height: auto; max-height: 8; }
"""


def live_rows(view: TournamentModel) -> list[tuple[str, str, str, str, RaceId]]:
    """The live matches as table rows: match, round, race number, players, race id."""
    names = names_of(view)
    return [
        (
            live.match_id,
            str(live.round),
            str(live.race_number),
            " vs ".join(names.get(p, p) for p in live.players),
            live.race_id,
        )
        for live in view.live
    ]


def own_live(view: TournamentModel, me: PlayerId | None) -> LiveMatchModel | None:
    """The player's live match, if one is on."""
    return next((live for live in view.live if me is not None and me in live.players), None)


def player_line(view: TournamentModel, me: PlayerId | None) -> str:
    """Where the player stands: not in it, registered, checked in, playing a match, out."""
    if me is None or all(p.player_id != me for p in view.players):
        if view.phase in ("registration", "check_in"):
            return "you: not registered (j joins)"
        return "you: watching"
    if view.phase == "registration":
        return "you: registered; your races open by themselves"
    if view.phase == "check_in":
        done = me in view.checked_in
        return "you: checked in" if done else "you: registered, not checked in (c checks in)"
    live = own_live(view, me)
    if live is not None:
        return f"you: playing {live.match_id} race {live.race_number} ({live.race_id}, Ctrl+R)"
    standing = next((s for s in view.standings if s.player_id == me), None)
    if view.phase == "finished":
        return "you: champion!" if view.champion == me else "you: done"
    if standing is not None and (standing.is_eliminated or standing.is_dropped):
        return "you: out"
    return "you: waiting for your next race"


class TournamentScreen(Screen[None]):
    """One tournament: title, bracket or standings, live matches (Enter watches)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pagedown", "scroll_body(1)", "Scroll", show=False),
        Binding("pageup", "scroll_body(-1)", "Scroll", show=False),
        Binding("f5", "refresh", "Refresh"),
        Binding("j", "join", "Join"),
        Binding("c", "check_in", "Check in"),
        Binding("ctrl+r", "own_race", "Your race"),
        Binding("escape", "back", "Back"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, tournament_id: str) -> None:
        super().__init__()
        self.tournament_id = tournament_id
        #: What the screen shows, as plain text (tests and logs read it).
        self.title_text = ""
        self.body_text = ""
        self.live_race_ids: list[RaceId] = []
        #: Why the server refused to show the tournament (an unknown id), else None.
        self.refusal: str | None = None
        #: The offered actions (`check_action`) the footer last showed.
        self.offered: tuple[bool | None, ...] | None = None

    @property
    def host(self) -> _SessionApp:
        assert isinstance(self.app, _SessionApp)
        return self.app

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("join", "check_in"):
            if not isinstance(self.app, PlayApp):  # a spectator has no identity to play with
                return False
            # Offered while they can do something: joining during registration (one
            # registered already: playing its races here), checking in while check-in is
            # open (one registered, not checked in yet).
            view = self.app.session.state.tournaments.get(self.tournament_id)
            if view is None:
                return True
            me = self.app.session.state.player_id
            if action == "check_in":
                return must_check_in(view, me)
            if not any(p.player_id == me for p in view.players):
                return view.phase == "registration"
            return view.phase != "finished" and self.tournament_id not in self.app.playing
        if action == "back":
            return len(self.app.screen_stack) > 2  # pushed from the lobby
        if action == "own_race":  # offered while the player has a race on here
            return self.own_race_id() is not None
        return True

    def own_race_id(self) -> RaceId | None:
        """The player's race on in this tournament (the one the title names), else None."""
        if not isinstance(self.app, PlayApp):
            return None
        state = self.app.session.state
        view = state.tournaments.get(self.tournament_id)
        live = own_live(view, state.player_id) if view is not None else None
        if live is not None:
            return live.race_id
        mine = state.races_to_play(self.tournament_id)
        return mine[0] if mine else None

    def compose(self) -> ComposeResult:
        yield Static(id="t-head")
        with VerticalScroll(id="t-body"):
            yield Static(id="t-tree")
        yield Static(id="t-live-head")
        yield columned_table("t-live", "match", "round", "race", "players", "race id")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#t-live", DataTable).focus()
        self.update_view()
        self.subscribe()

    def on_screen_resume(self) -> None:
        self.update_view()  # views that came while a race was on screen
        self._to_own_race()

    def action_refresh(self) -> None:
        self.subscribe()

    def subscribe(self) -> None:
        """`watch_tournament` (as `subscribe_tournament`), its refusal shown in the title:
        a toast alone left the screen "waiting for the server…" for ever."""
        host = self.host
        tid = self.tournament_id

        async def work() -> None:
            watch = WatchTournament(tournament_id=tid)
            try:
                await host.session.request(watch, tournament_view_of(tid))
            except RequestError as exc:
                # Refused: not watched, so not asked again on a reconnect (`Connection`).
                self.refusal = f"{exc.message} ({exc.code})"
            else:
                self.refusal = None
            if self.is_mounted:
                with contextlib.suppress(NoMatches):
                    self.update_view()

        host.background(work())

    def action_own_race(self) -> None:
        race_id = self.own_race_id()
        if isinstance(self.app, PlayApp) and race_id is not None:
            self.app.open_race(race_id)

    def action_join(self) -> None:
        if isinstance(self.app, PlayApp):
            self.app.play_tournament(self.tournament_id)

    def action_check_in(self) -> None:
        if isinstance(self.app, PlayApp):
            self.app.check_in(self.tournament_id)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_scroll_body(self, pages: int) -> None:
        body = self.query_one("#t-body", VerticalScroll)
        if pages > 0:
            body.scroll_page_down()
        else:
            body.scroll_page_up()

    def update_view(self) -> None:
        app = self.host
        view = app.session.state.tournaments.get(self.tournament_id)
        link = "" if app.session.link is LinkStatus.CONNECTED else "  reconnecting…"
        if view is None:
            if self.refusal is not None:
                self.title_text = (
                    f"tournament {self.tournament_id}: refused by the server{link}\n"
                    f"{one_line(self.refusal)}; F5 asks again"
                )
            else:
                self.title_text = f"tournament {self.tournament_id}: waiting for the server…{link}"
            self.body_text = ""
            self._show([])
            return
        names = names_of(view)
        title = render_title(view) + link
        if view.champion is not None:
            title += f"\nchampion: {names.get(view.champion, view.champion)}"
        if isinstance(app, PlayApp):
            title += "\n" + player_line(view, app.session.state.player_id)
        self.title_text = title
        self.body_text = render_board(view, self.body_width())
        self._show(live_rows(view))
        self._refresh_offered()

    def body_width(self) -> int:
        """The columns the bracket or table has: the screen's, less the scroll bar it may
        need (a wrapped bracket line broke the tree at 60 columns)."""
        width = self.size.width or self.app.size.width
        scrollbar = self.query_one("#t-body", VerticalScroll).styles.scrollbar_size_vertical
        return max(20, width - scrollbar)

    def on_resize(self) -> None:
        self.update_view()

    #: The actions whose offer changes with the tournament (`check_action`).
    CHANGING: ClassVar[tuple[str, ...]] = ("join", "check_in", "own_race", "back")

    def _refresh_offered(self) -> None:
        """The footer again when what it offers changed (Join and Check in follow the phase,
        Your race the player's race): redrawn on every view, it flickered during a race."""
        offered = tuple(self.check_action(action, ()) for action in self.CHANGING)
        if offered != self.offered:
            self.offered = offered
            self.refresh_bindings()

    def _show(self, rows: list[tuple[str, str, str, str, RaceId]]) -> None:
        self.query_one("#t-head", Static).update(Text(self.title_text, style="bold"))
        self.query_one("#t-tree", Static).update(Text(self.body_text))
        count = len(rows)
        head = f"live matches ({count}) — Enter watches a race" if count else "no live match"
        self.query_one("#t-live-head", Static).update(Text(head, style="dim" if not count else ""))
        table = self.query_one("#t-live", FittedTable)
        ids = [row[-1] for row in rows]
        if ids == self.live_race_ids and table.row_count == count:
            return  # the same races: keep the table (and its cursor) as it is
        selected = self._selected_race_id()
        table.fill((row[-1], tuple(as_text(cell) for cell in row)) for row in rows)
        own = self.own_race_id()
        if own in ids and own not in self.live_race_ids:
            selected = own  # the player's race just started: Enter opens it
        self.live_race_ids = ids
        if selected in ids:
            table.move_cursor(row=ids.index(selected))

    def _to_own_race(self) -> None:
        """The cursor on the player's live match, if it is listed."""
        own = self.own_race_id()
        if own in self.live_race_ids:
            self.query_one("#t-live", DataTable).move_cursor(row=self.live_race_ids.index(own))

    def _selected_race_id(self) -> RaceId | None:
        key = selected_key(self.query_one("#t-live", DataTable))
        return None if key is None else RaceId(key)  # a row's key is its race's id

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        race_id = event.row_key.value
        if race_id:  # a row's key is its race's id
            self.host.watch_race(RaceId(race_id))


class TournamentApp(WatchApp):
    """`WatchApp` opening on a tournament: Esc on a race goes back to the tournament."""

    TITLE = "solrace tournament"
    CSS = WatchApp.CSS + TOURNAMENT_CSS

    def __init__(self, session: Session, tournament_id: str, *, ascii: bool = False) -> None:
        super().__init__(session, ascii=ascii)
        self.tournament_id = tournament_id

    def home_screen(self) -> Screen[None]:
        return TournamentScreen(self.tournament_id)

    async def action_quit(self) -> None:
        if self.session.link is LinkStatus.CONNECTED:  # a closed link is the connection's
            await self.session.conn.send(UnwatchTournament(tournament_id=self.tournament_id))
        self.exit()


__all__ = ["TournamentApp", "TournamentScreen", "live_rows"]
