"""The play app's lobby screen: open and running races; create (the form's numbers read by
`form_number`), join (by id or invite code), start. It reads `ClientState` and acts through
the app; `update_view()`, which the app calls after every server message, never changes the
state itself: only server messages do (`state.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Button, Checkbox, DataTable, Input, Select, Static

from solrace.engine import GAME_IDS
from solrace.server.protocol.ids import RaceId

from .widgets import FittedTable, KeysFooter, columned_table, link_text
from .wire_text import as_text

if TYPE_CHECKING:
    from .tui import PlayApp


__all__ = ["LobbyScreen", "form_number"]


class LobbyScreen(Screen[None]):
    """Open and running races; create, join (by id or invite code), start."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f5", "refresh", "Refresh"),
        Binding("ctrl+s", "start", "Start"),
        Binding("ctrl+r", "resume", "Resume"),
        Binding("ctrl+t", "tournaments", "Tournaments"),
        Binding("escape", "quit", "Quit"),
    ]

    @property
    def play(self) -> PlayApp:
        from .tui import PlayApp

        assert isinstance(self.app, PlayApp)
        return self.app

    async def action_quit(self) -> None:
        """Esc anywhere but the list (a field, a button, the checkbox) goes back to the list;
        on the list it quits, leaving the open races this app created (`PlayApp.action_quit`)."""
        races = self.query_one("#races", DataTable)
        if self.focused is not None and self.focused is not races:
            races.focus()
            return
        await self.play.action_quit()

    def compose(self) -> ComposeResult:
        yield Static(id="lobby-head")
        yield columned_table("races", "race", "game", "status", "players", "time", "")
        # Each row's button first: it stays on screen however narrow the terminal.
        with Horizontal(id="create-form", classes="form"):
            yield Button("Create", id="create", compact=True)
            yield Select(
                [(g, g) for g in GAME_IDS],
                value=self.play.game,
                allow_blank=False,
                id="game",
                compact=True,
            )
            yield Input("2", placeholder="seats", id="seats", type="integer", compact=True)
            yield Input("600", placeholder="seconds", id="time", type="integer", compact=True)
            yield Checkbox("rated", id="rated", compact=True)
            yield Input(placeholder="invite code", id="invite", compact=True)
        with Horizontal(id="join-form", classes="form"):
            yield Button("Join", id="join", compact=True)
            yield Input(placeholder="race id to join", id="join-id", compact=True)
            yield Button("Start", id="start", compact=True)
            yield Button("Leave", id="leave", compact=True)
            yield Button("Refresh", id="refresh", compact=True)
            yield Button("Resume", id="resume", compact=True)
            yield Button("Tournaments", id="tournaments", compact=True)
        yield Static(id="lobby-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.update_view()

    def on_screen_resume(self) -> None:
        self.action_refresh()  # and the server pushes the list on every change while here

    def on_screen_suspend(self) -> None:
        self.play.refresh_lobby(follow=False)  # a race screen needs no lobby pushes

    def action_refresh(self) -> None:
        self.play.refresh_lobby()

    def action_start(self) -> None:
        self.play.start_current()

    def action_resume(self) -> None:
        self.play.resume_race()

    def action_tournaments(self) -> None:
        from .tournament_lobby import TournamentListScreen

        self.app.push_screen(TournamentListScreen())

    def update_view(self) -> None:
        app = self.play
        state = app.session.state
        head = f"{link_text(app.session)}solrace — {state.name or 'anonymous'}"
        if state.lobby_more:
            head += f" — {state.lobby_more} more live races not listed"
        self.query_one("#lobby-head", Static).update(Text(head, style="bold"))
        rows: list[tuple[str | None, tuple[Text, ...]]] = []
        stacked: list[tuple[str | None, tuple[Text, ...]]] = []
        for info in sorted(state.lobby.values(), key=lambda i: i.created_at_ms):
            names = ", ".join(r.name for r in info.racers)
            flags = " ".join(
                f
                for f, on in (
                    ("rated", info.rated),
                    ("private", info.private),
                    ("chosen-deal", info.deal_chosen),
                )
                if on
            )
            cells = (
                as_text(info.race_id),
                as_text(info.game),
                as_text(info.status),
                as_text(f"{len(info.racers)}/{info.seats} {names}"),
                Text(f"{info.time_limit_s}s"),
                Text(flags),
            )
            rows.append((info.race_id, cells))
            # Where the six columns do not fit (60 columns): three, of two lines.
            race, game, status, players, time, _ = cells
            terms = Text(f"{time.plain} {flags}".strip())
            stacked.append((info.race_id, (race + "\n" + game, status + "\n" + terms, players)))
        # A pushed list must not move the player's choice: `fill` keeps the cursor's race.
        table = self.query_one("#races", FittedTable)
        table.fill(rows, stacked=(("race", "status", "players"), stacked))
        self.query_one("#lobby-status", Static).update(app.lobby_status())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        race_id = event.row_key.value
        if race_id:
            self.query_one("#join-id", Input).value = race_id

    def on_button_pressed(self, event: Button.Pressed) -> None:
        button = event.button.id
        if button == "create":
            game = self.query_one("#game", Select).value
            seats = self.query_one("#seats", Input).value
            limit = self.query_one("#time", Input).value
            invite = self.query_one("#invite", Input).value.strip() or None
            rated = self.query_one("#rated", Checkbox).value
            try:
                count = form_number(seats, "seats", 2)
                seconds = form_number(limit, "seconds", 600)
            except ValueError as exc:
                self.app.notify(str(exc), severity="warning", markup=False)
                return
            # Numbers out of range are the server's to refuse (it says its bounds).
            self.play.create_race(str(game), count, seconds, rated=rated, invite_code=invite)
        elif button == "join":
            race_id = RaceId(self.query_one("#join-id", Input).value.strip())
            invite = self.query_one("#invite", Input).value.strip() or None
            if race_id:
                self.play.join_race(race_id, invite)
        elif button == "start":
            self.play.start_current()
        elif button == "leave":
            self.play.leave_current()
        elif button == "refresh":
            self.action_refresh()
        elif button == "resume":
            self.action_resume()
        elif button == "tournaments":
            self.action_tournaments()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "join-id" and event.value.strip():
            invite = self.query_one("#invite", Input).value.strip() or None
            self.play.join_race(RaceId(event.value.strip()), invite)


def form_number(text: str, what: str, default: int) -> int:
    """A whole number typed in a form field (empty: `default`); `ValueError` saying what is
    wrong with anything else."""
    text = text.strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a whole number") from None
