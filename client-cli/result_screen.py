"""The play app's result screen: the ranking, the revealed deal and its commitment check, and
a rematch. It reads `ClientState` and acts through the app; `update_view()`, which the app
calls after every server message, never changes the state itself: only server messages do
(`state.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Button, Static

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.replay import result_time

from .widgets import FittedTable, KeysFooter, columned_table
from .wire_text import as_text

if TYPE_CHECKING:
    from .state import RaceState
    from .tui import PlayApp


__all__ = ["ResultScreen"]


class ResultScreen(Screen[None]):
    """The ranking, the revealed deal and its commitment check, and a rematch."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "rematch", "Rematch"),
        Binding("l", "lobby", "Lobby"),
        Binding("t", "tournament", "Tournament"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, race_id: RaceId) -> None:
        super().__init__()
        self.race_id = race_id
        self.tournament_id: str | None = None
        #: The deal's line as plain text (tests and logs read it).
        self.reveal_text = ""

    @property
    def play(self) -> PlayApp:
        from .tui import PlayApp

        assert isinstance(self.app, PlayApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Static(id="result-head")
        yield columned_table(
            "ranking",
            # The time says what it is: `in 93.012s`, `last card out at 8.700s`.
            *("rank", "player", "result", "cards", "time"),
            cursor_type="none",
        )
        yield Static(id="reveal")
        with Horizontal(classes="form"):
            yield Button("Rematch", id="rematch", compact=True)
            yield Button("Lobby", id="lobby", compact=True)
            yield Button("Quit", id="quit", compact=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.tournament_id = self.play.session.state.tournament_of(self.race_id)
        if self.tournament_id is not None:  # the tournament comes back by itself
            self.query_one("#rematch", Button).display = False
            self.set_timer(self.play.RESULT_PAUSE_S, self._back_to_tournament)
        self.update_view()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "tournament":
            return self.tournament_id is not None
        if action == "rematch":
            return self.tournament_id is None
        return True

    def _back_to_tournament(self) -> None:
        if self.app.screen is self:
            self.action_tournament()

    def action_tournament(self) -> None:
        if self.tournament_id is not None:
            self.play.back_to_tournament(self.race_id)

    def update_view(self) -> None:
        race = self.play.session.state.races.get(self.race_id)
        if race is None:
            return
        me = self.play.session.state.player_id
        mine = next((e for e in race.results or [] if e.player_id == me), None)
        head = f"race {self.race_id} finished"
        if mine is not None:
            head += f": you are #{mine.rank} of {len(race.results or [])}"
        notice = self.play.session.state.tournament_race(self.race_id)
        if notice is not None:
            head += f"  (tournament {notice.tournament_id}, match {notice.match_id})"
        if self.tournament_id is not None:
            head += "\nthe tournament comes back in a moment (t: now)"
        self.query_one("#result-head", Static).update(Text(head, style="bold"))
        rows = [
            (
                None,
                (
                    Text(str(entry.rank)),
                    as_text(entry.name + (" (you)" if entry.player_id == me else "")),
                    as_text(entry.state),
                    Text(f"{entry.on_foundations}/{entry.total}"),
                    Text(result_time(entry)),
                ),
            )
            for entry in race.results or []
        ]
        self.query_one("#ranking", FittedTable).fill(rows)
        reveal = self._reveal(race)
        self.reveal_text = reveal.plain
        self.query_one("#reveal", Static).update(reveal)

    def _reveal(self, race: RaceState) -> Text:
        """The deal and its commitment check; a tournament race's deal is held until its
        round ends, then the app fetches and checks it (`held_deals.py`)."""
        deals = self.play.deals
        if race.commitment_ok is None and race.deal_held:
            if self.race_id in deals.checking:
                return Text("the round is over: fetching the deal to check it…", style="dim")
            failure = deals.failures.get(self.race_id)
            if failure is not None:
                return Text(f"deal not checked: {failure}", style="yellow")
            return Text("deal held until the tournament round ends", style="dim")
        if race.commitment_ok is None:
            return Text("waiting for the reveal…", style="dim")
        deal = f"deal {race.game} {race.game_number}"
        if self.tournament_id is not None:
            deal += " (the round's deal)"
        ok, bad = ("", "") if self.play.ascii else (" ✓", " ✗")
        if race.commitment_ok:
            return Text(f"{deal}: commitment {race.commitment}{ok} verified", style="green")
        return Text(f"{deal}: commitment does NOT match{bad}", style="bold red")

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "rematch":
            self.action_rematch()
        elif event.button.id == "lobby":
            self.action_lobby()
        elif event.button.id == "quit":
            await self.play.action_quit()

    def action_rematch(self) -> None:
        self.play.rematch(self.race_id)

    def action_lobby(self) -> None:
        self.play.back_to_lobby()
