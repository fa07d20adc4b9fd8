"""The play screens: lobby, race and result. They read `ClientState` and act through the app.

Each screen has `update_view()`, which the app calls after every server message, and never
changes the state itself: only server messages do (`state.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Final

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Checkbox, DataTable, Input, Select, Static

from solrace.engine import GAME_IDS, Move, game_class
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.replay import result_time

from .boards import check_move, rules_board
from .render import Hit
from .widgets import (
    BoardWidget,
    FittedTable,
    KeysFooter,
    RacersPanel,
    clock_text,
    columned_table,
    link_text,
    wrap_parts,
)
from .wire_text import as_text

if TYPE_CHECKING:
    from .state import RaceState
    from .tui import PlayApp


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


#: How the race screen names the player's own state once out of a race others still play.
OUT_WORDS: Final[Mapping[str, str]] = {
    "resigned": "you resigned",
    "finished": "you finished",
    "stuck": "you are stuck (no move left)",
    "gone": "you were away too long (gone)",
    "timed_out": "your time is up",
}


class RaceScreen(Screen[None]):
    """The own board, the clock, every racer's progress; moves by keys, mouse or typing."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "deal", "Deal"),
        Binding("escape", "cancel", "Cancel"),
        Binding("colon", "type_move", "Type a move"),
        Binding("x", "resign", "Resign (twice)"),
        Binding("l", "leave_screen", "Back"),  # to the lobby, or to a race's tournament
    ]

    def __init__(self, race_id: RaceId, *, ascii: bool = False) -> None:
        super().__init__()
        self.race_id = race_id
        self.ascii = ascii
        self.source: tuple[str, int | None] | None = None
        self.keys = ""
        self.message = ""
        #: The message was said before the race had a board (a refusal during the countdown):
        #: it goes once the board comes.
        self._message_before_start = False
        #: `x` was pressed once: the next `x` resigns; anything else in between disarms it.
        self._resign_armed = False

    @property
    def play(self) -> PlayApp:
        from .tui import PlayApp

        assert isinstance(self.app, PlayApp)
        return self.app

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="race-head")
            yield BoardWidget(id="board", ascii=self.ascii)
            yield RacersPanel(id="racers", ascii=self.ascii)
            yield Static(id="message")
            yield Input(
                placeholder=": type a move (deal, w-t3, t2-t5:3) and Enter", id="move", compact=True
            )
        yield KeysFooter()

    def on_mount(self) -> None:
        board = self.query_one("#board", BoardWidget)
        board.can_focus = True
        board.focus()
        self.update_view()

    # --- drawing -------------------------------------------------------------------------

    def update_view(self) -> None:
        app = self.play
        state = app.session.state
        race = state.races.get(self.race_id)
        me = state.player_id
        board = state.my_board(self.race_id)
        if board is not None and self._message_before_start:
            # What was said before the start goes, and so does a resign it asked for.
            self.message, self._message_before_start = "", False
            self._resign_armed = False
        selected = self.source[0] if self.source else None
        self.query_one("#board", BoardWidget).show(board, selected)
        self.query_one("#racers", RacersPanel).show(race, me)
        self.update_clock()
        line = self.message
        if self.keys:
            line = f"pile: {self.keys}…"
        elif self.source:
            count = f" ({self.source[1]} cards)" if self.source[1] and self.source[1] > 1 else ""
            line = f"from {self.source[0]}{count}: pick a target (Esc cancels)"
        if race is not None and race.last_rejection is not None and not line:
            line = f"refused {race.last_rejection.move}: {race.last_rejection.reason}"
        if race is not None and race.unusable is not None and not line:
            line = race.unusable
        style = "yellow" if line else ""
        racer = race.racers.get(me) if race is not None and me is not None else None
        if race is not None and race.is_live and racer is not None and racer.is_done:
            line = self.out_text(racer.state)
        if race is not None and race.lost is not None:
            line, style = self.lost_text(race.lost), "bold red"
        elif race is not None and race.gone is not None:
            line, style = self.gone_text(race.gone), "bold red"
        self.query_one("#message", Static).update(Text(line, style=style))

    def back_text(self) -> str:
        """Where `l` goes from this race."""
        if self.play.session.state.tournament_of(self.race_id) is not None:
            return "l goes back to the tournament"
        return "l goes back to the lobby"

    def out_text(self, state: str) -> str:
        """What the player is told once out of a race others still play (`state`: its own,
        `resigned`, `finished`...): the results come here at its end, unless it leaves."""
        done = OUT_WORDS.get(state, f"you are out ({state})")
        return f"{done}: the results show here when the race ends — {self.back_text()}"

    def lost_text(self, lost: str) -> str:
        """What the player is told of this race once the server lost it (`lost`: the
        server's words), and where to go from here."""
        where = self.back_text()
        if self.play.session.state.tournament_of(self.race_id) is None:
            where += ", to create or join another race"
        return f"{lost}: this race cannot go on and will have no result — {where}"

    def gone_text(self, gone: str) -> str:
        """What the player is told of this race once the server no longer has it after a
        reconnect (`gone`: the server's words): lost, or finished while the link was down."""
        where = self.play.session.race_on_server(self.race_id)
        return (
            f"the server no longer has this race ({gone}): if it has finished, "
            f"solrace replay {where} shows it — {self.back_text()}"
        )

    def update_clock(self) -> None:
        app = self.play
        race = app.session.state.races.get(self.race_id)
        if race is None:
            return
        now = app.session.conn.server_now_ms()
        remaining = race.remaining_ms(now)
        if race.lost is not None:
            clock = "lost by the server"
        elif race.gone is not None:
            clock = "gone from the server"
        elif race.started_at_ms is None:
            clock = f"starts in {clock_text(remaining)}"
        else:
            clock = f"{'time' if self.ascii else '⏱'} {clock_text(remaining)} left"
        game = race.game or "?"
        title = game_class(game).title if game in GAME_IDS else game
        parts = [f"{link_text(app.session)}{title}", f"race {self.race_id}", clock]
        if race.deal_chosen:  # a casual race's creator may name the deal, and so know it
            parts.append("deal chosen by its creator")
        if race.commitment:
            parts.append(f"deal commitment {race.commitment[:12]}…")
        # On two lines where one is too narrow (60 columns), broken between its parts.
        head = wrap_parts(parts, self.size.width or self.app.size.width)
        self.query_one("#race-head", Static).update(Text(head, style="bold"))

    def on_resize(self, event: events.Resize) -> None:
        self.update_clock()  # the head line folds or unfolds

    # --- acting --------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.message = text
        self._message_before_start = self.play.session.state.my_board(self.race_id) is None
        self.update_view()

    def disarm_resign(self) -> None:
        """Anything but a second `x` after the first cancels the resign it asked for."""
        if self._resign_armed:
            self._resign_armed = False
            self.message = ""

    def send(self, move: Move) -> None:
        self.disarm_resign()
        self.source = None
        self.keys = ""
        self.message = ""
        self.play.send_move(self.race_id, str(move), self)
        self.update_view()

    def action_deal(self) -> None:
        self.send(Move.parse("deal"))

    def action_cancel(self) -> None:
        self.source = None
        self.keys = ""
        self.message = ""
        self._resign_armed = False
        self.query_one("#move", Input).value = ""  # a move half typed goes too
        self.query_one("#board", BoardWidget).focus()
        self.update_view()

    def action_type_move(self) -> None:
        self.disarm_resign()
        self.query_one("#move", Input).focus()

    def action_leave_screen(self) -> None:
        """Back to the lobby (a tournament's race: to its tournament); the race goes on, and
        Ctrl+R in the lobby comes back to it while it does."""
        if self.play.session.state.tournament_of(self.race_id) is not None:
            self.play.back_to_tournament(self.race_id)
            return
        race = self.play.session.state.races.get(self.race_id)
        self.play.back_to_lobby(keep_race=race is not None and race.status == "open")

    def action_resign(self) -> None:
        race = self.play.session.state.races.get(self.race_id)
        me = self.play.session.state.player_id
        if race is not None and race.is_off_server:
            self.update_view()  # nothing to resign: the race is gone, as the screen says
            return
        racer = race.racers.get(me) if race is not None and me is not None else None
        if racer is not None and racer.is_done:
            self.say(f"nothing to resign: you are {racer.state}")
            return
        if not self._resign_armed:
            self._resign_armed = True
            self.say("press x again to resign (any other key cancels)")
            return
        self._resign_armed = False
        self.play.resign_current(self.race_id)
        self.say("resigning…")  # once the server says so, what comes next (`out_text`)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.value = ""
        self.disarm_resign()
        if text:
            self.source = None
            self.keys = ""
            self.message = ""
            self.play.send_move(self.race_id, text, self)
        self.query_one("#board", BoardWidget).focus()

    def pick(self, pile: str, depth: int | None) -> None:
        """A pile was chosen (key or click): first the source, then the target."""
        self.disarm_resign()
        board = self.play.session.state.my_board(self.race_id)
        if board is None:
            return
        if self.source is None:
            if pile == "s":
                self.action_deal()
                return
            view = board.piles.get(_long(pile, board.piles))
            if view is None or not view.cards:
                self.say(f"{pile} has no card to move")
                return
            self.source = (pile, depth)
            self.message = ""
            self.update_view()
            return
        src, n = self.source
        if pile == src:
            self.action_cancel()
            return
        legal = [m for m in rules_board(board).card_moves() if m.src == src and m.dst == pile]
        # A clicked card moves exactly the cards from it up (refused if that many cannot go,
        # as a typed count is); a pile picked by name or label moves what can go.
        exact = [m for m in legal if m.n == n] if n else legal[:1]
        chosen = exact[0] if exact else None
        if chosen is None:
            reason = check_move(board, Move(src, pile, n or 1)) or "not a legal move"
            self.source = None
            self.say(f"refused {src}-{pile}: {reason}")
            return
        self.send(chosen)

    def on_board_widget_picked(self, event: BoardWidget.Picked) -> None:
        hit: Hit = event.hit
        self.keys = ""
        self.pick(hit.pile, hit.depth or None)

    def on_key(self, event: events.Key) -> None:
        if isinstance(self.focused, Input):
            return
        char = event.character or ""
        if char != "x":
            self.disarm_resign()
        board = self.play.session.state.my_board(self.race_id)
        if board is None and char and char in "swftr":
            self.say("no board yet: the race has not started")
            return
        if board is None or not char:
            return
        shorts = [_short_of(name) for name in board.piles]
        if char in "swftr":
            self.keys = char
        elif char.isdigit() and self.keys[:1] in ("f", "t", "r"):
            self.keys += char
        elif char in (" ", "\r", "\n") and self.keys in shorts:
            pass
        else:
            return
        event.stop()
        candidates = [s for s in shorts if s.startswith(self.keys)]
        if not candidates:  # `t9` in a game of seven columns: said now, not waited on
            self.message = f"no pile {self.keys} in this game"
            self.keys = ""
            self.update_view()
            return
        if self.keys in shorts and (len(candidates) == 1 or char in (" ", "\r", "\n")):
            pile, self.keys = self.keys, ""
            self.pick(pile, None)
        else:
            self.update_view()


def _short_of(name: str) -> str:
    from solrace.engine import to_short_name

    return to_short_name(name)


def _long(short: str, piles: Mapping[str, object]) -> str:
    for name in piles:
        if _short_of(name) == short:
            return name
    return short


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
        deal = f"deal {race.game} #{race.game_number}"
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
