"""The play app's race screen: the own board, the clock, every racer's progress; moves by
keys, mouse or typing, and how the screen names the player's own state once out of a race
others still play (`OUT_WORDS`): its footer then offers only the way back, and a move's key
says the player is out instead of sending what the server would refuse. Before the start
(`WAIT_WORDS`) the footer offers only the way back too, and a move's key says the race has
not started yet. It reads
`ClientState` and acts through the app; `update_view()`, which the app calls after every
server message, never changes the state itself: only server messages do (`state.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Final

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

from solrace.engine import GAME_IDS, Move, game_class
from solrace.server.protocol.ids import RaceId

from .boards import check_move, rules_board
from .render import Hit
from .widgets import (
    DEAL_PLACEHOLDER,
    BoardWidget,
    KeysFooter,
    RacersPanel,
    clock_text,
    link_text,
    wrap_parts,
)

if TYPE_CHECKING:
    from .tui import PlayApp


__all__ = ["OUT_WORDS", "WAIT_WORDS", "RaceScreen"]


#: How the race screen names the player's own state once out of a race others still play.
OUT_WORDS: Final[Mapping[str, str]] = {
    "resigned": "you resigned",
    "finished": "you finished",
    "stuck": "you are stuck (no move left)",
    "gone": "you were away too long (gone)",
    "timed_out": "your time is up",
}


#: How the race screen names a race's wait before its start (its status, open or countdown).
WAIT_WORDS: Final[Mapping[str, str]] = {
    "open": "waiting for players",
    "countdown": "counting down to its start",
}


#: What the board's place says once the race runs and the own board has not come yet (the
#: server sends it at the start, and with a sync's answer): not a deal still to come.
BOARD_ON_ITS_WAY: Final = "race running: waiting for your board…"


#: The race screen's actions for playing: offered (and run) only while the race runs and the
#: player plays on (not before the start: the server refuses a move or a resign then).
PLAYING_ACTIONS: Final[frozenset[str]] = frozenset({"deal", "cancel", "type_move", "resign"})


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
        #: A move was tried once out of the race: the message line says so (`say_no_move`) in
        #: place of what comes next.
        self._move_tried_out = False
        #: A move was tried before the start: the message line says the race has not started
        #: (`say_no_move`) until it starts.
        self._move_tried_early = False
        #: Whether the footer last offered the playing keys (`check_action`).
        self._offered_play: bool | None = None

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

    def out_state(self) -> str | None:
        """Why the player has nothing left to play here: its own state once out (`resigned`,
        `finished`, `stuck`, `gone`, `timed_out`), or the race's end when the server lost it
        or no longer has it (`lost`, `gone`); None while it plays (or the race has no news)."""
        state = self.play.session.state
        race = state.races.get(self.race_id)
        if race is None:
            return None
        if race.is_off_server:
            return "lost" if race.lost is not None else "gone"
        me = state.player_id
        racer = race.racers.get(me) if me is not None else None
        return racer.state if racer is not None and racer.is_done else None

    def waiting(self) -> str | None:
        """The race's status while it waits for its start (`open`, `countdown`), the player
        not out of it; None once it runs (or when the race has no news)."""
        race = self.play.session.state.races.get(self.race_id)
        if race is None or not race.is_live or self.out_state() is not None:
            return None
        return race.status if race.status in WAIT_WORDS else None

    def playing(self) -> bool:
        """The race runs and the player plays on: its moves, cancel and resign apply."""
        return self.out_state() is None and self.waiting() is None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Before the start and once out of the race, its moves, resign and cancel go from the
        # footer (and their keys say why: `on_key`); the way back stays.
        if action in PLAYING_ACTIONS:
            return self.playing()
        return True

    def _refresh_offered(self) -> None:
        """The footer again when the playing keys come or go (not on every view: it would
        flicker), and the move line shut while they are gone (a move typed there would be
        refused): open again once the race starts."""
        playing = self.playing()
        line = self.query_one("#move", Input)
        if not playing and not line.disabled:
            if line.has_focus:
                self.query_one("#board", BoardWidget).focus()
            line.value = ""
            line.disabled = True
        elif playing and line.disabled:
            line.disabled = False
        if playing != self._offered_play:
            self._offered_play = playing
            self.refresh_bindings()

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
        waiting = self.waiting()
        if waiting is None:
            self._move_tried_early = False
        selected = self.source[0] if self.source else None
        widget = self.query_one("#board", BoardWidget)
        running = race is not None and race.status == "running"
        widget.placeholder = BOARD_ON_ITS_WAY if running else DEAL_PLACEHOLDER
        widget.show(board, selected)
        self.query_one("#racers", RacersPanel).show(race, me)
        self.update_clock()
        self._refresh_offered()
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
        if waiting is not None and self._move_tried_early:
            line = self.early_text(waiting)
        style = "yellow" if line else ""
        racer = race.racers.get(me) if race is not None and me is not None else None
        if race is not None and race.is_live and racer is not None and racer.is_done:
            out = self.out_move_text if self._move_tried_out else self.out_text
            line = out(racer.state)
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

    def out_move_text(self, state: str) -> str:
        """What a move's key (`d`, `:`, `x`, a pile, a click) says once the player is out of
        a race others still play: nothing is sent."""
        done = OUT_WORDS.get(state, f"you are out ({state})")
        return (
            f"{done}: you have no more moves in this race; the results show here when it "
            f"ends — {self.back_text()}"
        )

    def early_text(self, status: str) -> str:
        """What a move's key (`d`, `:`, `x`, a pile, a click) says before the race starts
        (`status`: `open` or `countdown`): nothing is sent, and the way out is named."""
        where = self.back_text()
        if status == "open" and self.play.session.state.tournament_of(self.race_id) is None:
            where += " (Leave there gives up your seat)"
        wait = WAIT_WORDS.get(status, status)
        return f"the race has not started yet ({wait}): no moves before the start — {where}"

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

    def say_no_move(self) -> bool:
        """A move's key when no move can be made, once out of the race (or the race off the
        server) or before its start: the line says why (until the start, for the latter; a
        lost or gone race's line already says what became of it) and nothing is sent. True
        when it was said."""
        out = self.out_state() is not None
        if not out and self.waiting() is None:
            return False
        self._resign_armed = False
        self.source, self.keys = None, ""
        if out:
            self._move_tried_out = True
        else:
            self._move_tried_early = True
        self.message = ""
        self.update_view()
        return True

    def disarm_resign(self) -> None:
        """Anything but a second `x` after the first cancels the resign it asked for."""
        if self._resign_armed:
            self._resign_armed = False
            self.message = ""

    def send(self, move: Move) -> None:
        if self.say_no_move():
            return
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
        if self.say_no_move():  # nothing to resign
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
        if text and self.say_no_move():
            text = ""
        if text:
            self.source = None
            self.keys = ""
            self.message = ""
            self.play.send_move(self.race_id, text, self)
        self.query_one("#board", BoardWidget).focus()

    def pick(self, pile: str, depth: int | None) -> None:
        """A pile was chosen (key or click): first the source, then the target."""
        if self.say_no_move():
            return
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
        if char and char in "dx:swftr" and not self.playing():
            # Out of the race or before its start: `d`, `:` and `x` are not bound
            # (`check_action`), and no pile is picked; the key says why.
            event.stop()
            self.say_no_move()
            return
        if char != "x":
            self.disarm_resign()
        board = self.play.session.state.my_board(self.race_id)
        if board is None and char and char in "swftr":
            self.say(self.play.session.no_board_text(self.race_id))
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
