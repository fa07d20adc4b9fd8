"""The play app's list of tournaments (Ctrl+T in the lobby): Enter opens a tournament's screen,
`j` joins the highlighted one (and opens it), Esc goes back to the lobby."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from solrace.server.protocol.messages import ServerMessage
from solrace.server.protocol.tournament_messages import (
    ListTournaments,
    TournamentList,
    TournamentSummary,
)

from .session import RequestError
from .tui import PlayApp
from .widgets import selected_key


class TournamentListScreen(Screen[None]):
    """Every tournament the server knows, newest state on F5."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "join", "Join"),
        Binding("f5", "refresh", "Refresh"),
        Binding("escape", "back", "Lobby"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.summaries: list[TournamentSummary] = []

    @property
    def play(self) -> PlayApp:
        assert isinstance(self.app, PlayApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Static(
            Text("tournaments — Enter opens one, j joins it, Esc back", style="bold"), id="t-head"
        )
        yield DataTable(id="tournaments", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#tournaments", DataTable)
        table.add_columns("id", "name", "game", "format", "phase", "players", "round", "champion")
        table.focus()
        self.action_refresh()

    def action_refresh(self) -> None:
        async def work() -> None:
            def answers(message: ServerMessage) -> bool:
                return isinstance(message, TournamentList)

            try:
                reply = await self.play.session.request(ListTournaments(), answers)
            except (RequestError, TimeoutError) as exc:
                self.play.notify(str(exc), severity="warning")
                return
            assert isinstance(reply, TournamentList)
            self.show(reply.tournaments)

        self.run_worker(work(), exclusive=True)

    def show(self, summaries: list[TournamentSummary]) -> None:
        self.summaries = list(summaries)
        table = self.query_one("#tournaments", DataTable)
        table.clear()
        for t in self.summaries:
            table.add_row(
                t.tournament_id,
                t.name,
                t.game,
                t.format,
                t.phase,
                str(t.players),
                str(t.round),
                t.champion or "",
                key=t.tournament_id,
            )

    def selected(self) -> str | None:
        return selected_key(self.query_one("#tournaments", DataTable))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.play.open_tournament(str(event.row_key.value))

    def action_join(self) -> None:
        tournament_id = self.selected()
        if tournament_id is not None:
            self.play.play_tournament(tournament_id)
            self.play.open_tournament(tournament_id)

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["TournamentListScreen"]
