"""The play app's list of tournaments (Ctrl+T in the lobby): Enter opens a tournament's screen,
`j` joins the highlighted one (and opens it), Esc goes back to the lobby."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import ServerMessage
from solrace.server.protocol.tournament_messages import (
    GetProfile,
    ListTournaments,
    Profile,
    TournamentList,
    TournamentSummary,
)

from .session import RequestError
from .tui import PlayApp
from .widgets import FittedTable, KeysFooter, columned_table, selected_key
from .wire_text import as_text, one_line


def words(name: str) -> str:
    """A format's or phase's name as words (`single elimination`): a narrow column wraps
    it between them."""
    return name.replace("_", " ")


#: The list's head line.
HEAD = "tournaments — Enter opens one, j joins it, Esc back"
#: Under it, while the server has no tournament at all.
NONE_YET = "no tournament yet: an admin makes one with 'solrace tournament create'"

#: The tournament list's columns where its eight do not fit (`stacked_cells`).
STACKED_HEADERS = ("tournament", "game", "phase")


class TournamentListScreen(Screen[None]):
    """Every tournament the server knows, asked again on F5 and each time the list is back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "join", "Join"),
        Binding("f5", "refresh", "Refresh"),
        Binding("escape", "back", "Lobby"),
    ]

    #: Most champions whose names one refresh asks for (a request each, from the rate budget).
    NAMES_PER_REFRESH: ClassVar[int] = 20

    def __init__(self) -> None:
        super().__init__()
        self.summaries: list[TournamentSummary] = []
        #: Player id -> name: a summary names its champion by id only.
        self.names: dict[PlayerId, str] = {}

    @property
    def play(self) -> PlayApp:
        assert isinstance(self.app, PlayApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Static(Text(HEAD, style="bold"), id="t-head")
        yield columned_table(
            "tournaments",
            *("id", "name", "game", "format", "phase", "players", "round", "champion"),
        )
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#tournaments", DataTable).focus()

    def on_screen_resume(self) -> None:
        """Asked anew each time the list is back on screen (first shown, or back from a
        tournament joined there: its counts changed meanwhile)."""
        self.action_refresh()

    def action_refresh(self) -> None:
        async def work() -> None:
            def answers(message: ServerMessage) -> bool:
                return isinstance(message, TournamentList)

            try:
                reply = await self.play.session.request(ListTournaments(), answers)
            except (RequestError, TimeoutError) as exc:
                self.play.notify(one_line(str(exc)), severity="warning", markup=False)
                return
            assert isinstance(reply, TournamentList)
            self.show(reply.tournaments)
            await self.find_champions()
            self.show(self.summaries)

        self.run_worker(work(), exclusive=True)

    def name_of(self, player_id: PlayerId) -> str:
        """A player's name: asked before (`find_champions`), else from a tournament's view
        this session has had, else the id."""
        if player_id in self.names:
            return self.names[player_id]
        for view in self.play.session.state.tournaments.values():
            for player in view.players:
                if player.player_id == player_id:
                    return player.name
        return player_id

    async def find_champions(self) -> None:
        """Ask the server the names of the champions not known yet (`get_profile`)."""
        unknown = [
            t.champion
            for t in self.summaries
            if t.champion is not None and self.name_of(t.champion) == t.champion
        ]
        for player_id in list(dict.fromkeys(unknown))[: self.NAMES_PER_REFRESH]:

            def answers(message: ServerMessage, wanted: PlayerId = player_id) -> bool:
                return isinstance(message, Profile) and message.player_id == wanted

            try:
                reply = await self.play.session.request(GetProfile(player_id=player_id), answers)
            except (RequestError, TimeoutError):
                continue  # the id stays
            assert isinstance(reply, Profile)
            self.names[player_id] = reply.name

    def show(self, summaries: list[TournamentSummary]) -> None:
        self.summaries = list(summaries)
        rows = [
            (
                t.tournament_id,
                (
                    as_text(t.tournament_id),
                    as_text(t.name),
                    as_text(t.game),
                    as_text(words(t.format)),
                    as_text(words(t.phase)),
                    Text(str(t.players)),
                    Text(str(t.round)),
                    as_text(self.name_of(t.champion) if t.champion else ""),
                ),
            )
            for t in self.summaries
        ]
        stacked = [(t.tournament_id, self.stacked_cells(t)) for t in self.summaries]
        head = HEAD if self.summaries else f"{HEAD}\n{NONE_YET}"
        self.query_one("#t-head", Static).update(Text(head, style="bold"))
        # A refresh keeps the highlighted tournament highlighted (`fill` keeps its row).
        table = self.query_one("#tournaments", FittedTable)
        table.fill(rows, stacked=(STACKED_HEADERS, stacked))

    def stacked_cells(self, t: TournamentSummary) -> tuple[Text, ...]:
        """A tournament in the three columns of two lines that fit 60 columns (the eight
        columns do not fit 80): name and id, game and format, phase and the rest."""
        rest = f"{t.players} players"
        if t.round:
            rest += f", round {t.round}"
        if t.champion is not None:
            rest += f", champion {self.name_of(t.champion)}"
        lines = ((t.name, t.tournament_id), (t.game, words(t.format)), (words(t.phase), rest))
        return tuple(Text("\n").join(as_text(line) for line in pair) for pair in lines)

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
