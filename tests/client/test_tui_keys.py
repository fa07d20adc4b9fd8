"""The play screens' keys and forms, driven by Textual's pilot against a real server: what a
key does is what the screen says it does, and a pushed list never moves the player's choice."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, DataTable, Input, Static

from solrace.client.bots import Bot
from solrace.client.link_status import LinkStatus
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.race_screen import RaceScreen
from solrace.client.render import Hit
from solrace.client.session import Session
from solrace.client.state import RacerStatus
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget, racer_lines, selected_key
from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId, RaceId
from tests.waiting import eventually

from .conftest import keys_reach, open_session, race_on_screen
from .process import FullTerminal


async def racing(
    app: PlayApp, alice: Session, bot: Bot, game_number: str | None = None
) -> tuple[RaceScreen, RaceId]:
    """The app's player in a started race against `bot` (on deal `game_number`, if named):
    its race screen and race id."""
    race_id, screen = await race_on_screen(app, [bot], game_number=game_number)
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="the deal")
    await keys_reach(screen)
    return screen, race_id


@contextlib.asynccontextmanager
async def racing_app(
    server_url: str, alice: Session
) -> AsyncIterator[tuple[PlayApp, Pilot[None], RaceScreen, RaceId]]:
    """The play app of `alice`, running, in a race it started against a slow bot: the app,
    its pilot, the race screen and the race id."""
    app = PlayApp(alice)
    bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=60)
    await bot.connect()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen, race_id = await racing(app, alice, bot)
            yield app, pilot, screen, race_id
    finally:
        await bot.close()


async def test_a_resign_asked_once_is_cancelled_by_any_other_key(
    server_url: str, alice: Session
) -> None:
    async with racing_app(server_url, alice) as (_, pilot, screen, race_id):
        me = PlayerId(alice.me or "")
        await pilot.press("x")
        assert screen.message.startswith("press x again to resign")
        await pilot.press("d")  # a deal in between: the resign asked for is off
        await eventually(lambda: alice.state.races[race_id].plies[me] == 1, what="deal")
        assert "press x again" not in screen.message
        await pilot.press("x")  # one x again only asks again
        assert screen.message.startswith("press x again to resign")
        assert alice.state.races[race_id].racers[me].state == "playing"
        await pilot.press("t")  # any other key cancels too
        await pilot.press("escape")
        await pilot.press("x", "x")
        await eventually(
            lambda: alice.state.races[race_id].racers[me].state == "resigned",
            what="resigned by two x in a row",
        )
        await pilot.press("x")  # nothing to resign: the line says the player is out
        await eventually(lambda: OUT_MOVE in str(message(screen).render()), what="out said")


#: What a move's key says once the player resigned a race others still play.
OUT_MOVE = (
    "you resigned: you have no more moves in this race; the results show here when it ends"
    " — l goes back to the lobby"
)


def message(screen: RaceScreen) -> Static:
    return screen.query_one("#message", Static)


#: What the race screen's footer offers for playing, while the player plays a running race.
PLAYING_KEYS = frozenset({"Deal", "Cancel", "Type a move", "Resign (twice)"})


def footer_keys(screen: RaceScreen) -> set[str]:
    """What the race screen's footer offers, by description: the app's active bindings
    shown in a footer (Textual's public view of what `check_action` leaves)."""
    return {
        active.binding.description
        for active in screen.app.active_bindings.values()
        if active.binding.show and active.enabled
    }


async def test_out_of_a_race_the_footer_offers_the_way_back_and_moves_send_nothing(
    server_url: str, alice: Session
) -> None:
    """Resigned while the others play on, the footer still offered Deal, Type a move and
    Resign, and `d`, a move typed or a click on the stock sent what the server refused."""
    async with racing_app(server_url, alice) as (app, pilot, screen, race_id):
        me = PlayerId(alice.me or "")
        await eventually(lambda: PLAYING_KEYS | {"Back"} <= footer_keys(screen), what="the keys")
        await pilot.press("x", "x")
        await eventually(
            lambda: alice.state.races[race_id].racers[me].state == "resigned", what="resigned"
        )
        await eventually(lambda: not PLAYING_KEYS & footer_keys(screen), what="no key to play")
        assert "Back" in footer_keys(screen)

        sent = alice.conn.next_seq
        await pilot.press("d")
        assert str(message(screen).render()) == OUT_MOVE
        await pilot.press("colon", "d", "enter")  # no move line to type in
        assert not screen.query_one("#move", Input).has_focus
        await pilot.press("x", "x", "t", "1", "escape")
        board = screen.query_one("#board", BoardWidget)
        rendered = board._rendered
        assert rendered is not None
        stock = next(xy for xy, hit in rendered.hits.items() if hit.pile == "s")
        await pilot.click(board, offset=stock)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert alice.conn.next_seq == sent, "a move was sent once out of the race"
        assert alice.state.races[race_id].last_rejection is None
        assert screen.source is None and not screen.keys
        assert str(message(screen).render()) == OUT_MOVE

        await pilot.press("l")  # the way back still goes
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")


@contextlib.asynccontextmanager
async def waiting_app(
    server_url: str, alice: Session
) -> AsyncIterator[tuple[PlayApp, Pilot[None], RaceScreen, RaceId]]:
    """The play app of `alice`, running, on the screen of a race it created with three seats
    and a slow bot joined: open, waiting for one more player (`app.start_current()` starts
    it). The app, its pilot, the race screen and the race id."""
    bot = Bot(server_url, "dan", make_strategy("greedy", seed=3), delay_s=60)
    await bot.connect()
    app = PlayApp(alice)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
            app.create_race("klondike", 3, 600)  # three seats, two taken: it waits
            await eventually(lambda: app.race_id is not None, what="race created")
            race_id = app.race_id
            assert race_id is not None
            await bot.join(race_id)
            app.open_race(race_id)
            await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
            screen = app.screen
            assert isinstance(screen, RaceScreen)
            await eventually(lambda: isinstance(app.focused, BoardWidget), what="keys to it")
            yield app, pilot, screen, race_id
    finally:
        await bot.close()


#: What a move's key says before the start of an open race of the lobby's.
EARLY_MOVE = (
    "the race has not started yet (waiting for players): no moves before the start — l goes"
    " back to the lobby (Leave there gives up your seat)"
)


async def test_before_the_start_the_footer_offers_the_way_back_and_moves_send_nothing(
    server_url: str, alice: Session
) -> None:
    """Open and waiting for players, the race screen's footer offered Deal, Type a move and
    Resign, and `d` or a move typed went to the server, which refused it (`the race has not
    started yet`); the keys come once the race starts."""
    async with waiting_app(server_url, alice) as (app, pilot, screen, race_id):
        await eventually(
            lambda: alice.state.races[race_id].status == "open", what="the race's news"
        )
        await eventually(lambda: "Back" in footer_keys(screen), what="the way back")
        assert not PLAYING_KEYS & footer_keys(screen)
        assert screen.query_one("#move", Input).disabled

        await app.workers.wait_for_complete()  # the race screen's sync is sent
        sent = alice.conn.next_seq
        await pilot.press("d")
        assert str(message(screen).render()) == EARLY_MOVE
        await pilot.press("colon", "d", "enter")  # no move line to type in
        assert not screen.query_one("#move", Input).has_focus
        await pilot.press("x", "x", "t", "1", "escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert alice.conn.next_seq == sent, "a move was sent before the start"
        assert alice.state.races[race_id].last_rejection is None
        assert screen.source is None and not screen.keys
        assert str(message(screen).render()) == EARLY_MOVE

        app.start_current()
        await eventually(lambda: alice.state.my_board(race_id) is not None, what="deal")
        await eventually(lambda: footer_keys(screen) >= PLAYING_KEYS, what="the keys to play")
        assert not screen.query_one("#move", Input).disabled
        await eventually(lambda: str(message(screen).render()) == "", what="the wait said")
        me = PlayerId(alice.me or "")
        await pilot.press("d")  # now it deals
        await eventually(lambda: alice.state.races[race_id].plies[me] == 1, what="deal")

        await pilot.press("l")  # the way back goes
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")


async def test_out_of_a_race_others_play_the_screen_says_what_comes_next(
    server_url: str, alice: Session
) -> None:
    """Resigned while the others play on, the screen said only `resigned`, nothing of the
    results to come nor of the way back to the lobby."""
    async with racing_app(server_url, alice) as (app, pilot, screen, race_id):
        me = PlayerId(alice.me or "")
        message = screen.query_one("#message", Static)
        await pilot.press("x", "x")
        said = "you resigned: the results show here when the race ends — l goes back to the lobby"
        await eventually(lambda: str(message.render()) == said, what="what comes next said")
        assert alice.state.races[race_id].racers[me].state == "resigned"
        await pilot.press("l")
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")


async def test_a_refusal_before_the_start_goes_when_the_race_starts(
    server_url: str, alice: Session
) -> None:
    """Before the start a key says the race has not started yet; once the board comes, that
    line goes (it was about the wait, not about the board the player now sees)."""
    async with waiting_app(server_url, alice) as (app, pilot, screen, race_id):
        await pilot.press("t")
        assert str(message(screen).render()) == EARLY_MOVE
        await pilot.press("d")
        assert str(message(screen).render()) == EARLY_MOVE
        await pilot.press("x")  # no resign asked before the start
        assert str(message(screen).render()) == EARLY_MOVE
        app.start_current()
        await eventually(lambda: alice.state.my_board(race_id) is not None, what="deal")
        await eventually(
            lambda: str(message(screen).render()) == "", what="the line of the wait gone"
        )
        await pilot.press("x")  # asks again: the one before the start is off
        assert screen.message.startswith("press x again to resign")
        assert alice.state.races[race_id].racers[PlayerId(alice.me or "")].state == "playing"


async def test_the_lobby_keeps_its_highlight_and_esc_leaves_a_field_not_the_app(
    server_url: str, alice: Session
) -> None:
    app = PlayApp(alice)
    makers = [
        Bot(server_url, f"maker{n}", make_strategy("greedy", seed=n), delay_s=60) for n in range(4)
    ]
    try:
        for maker in makers[:3]:
            await maker.connect()
            await maker.create("klondike", 2, 600)
        async with app.run_test(size=(120, 30)) as pilot:
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
            lobby = app.screen
            table = lobby.query_one("#races", DataTable)
            await eventually(lambda: table.row_count == 3, what="three races listed")
            table.focus()
            await pilot.press("down", "down")
            chosen = selected_key(table)
            assert chosen is not None and table.cursor_row == 2
            await makers[3].connect()
            await makers[3].create("klondike", 2, 600)  # the server pushes a new list
            await eventually(lambda: table.row_count == 4, what="the new race listed")
            assert selected_key(table) == chosen
            await pilot.press("enter")
            assert lobby.query_one("#join-id", Input).value == chosen
            # Esc in a field goes back to the list; Esc there quits.
            lobby.query_one("#invite", Input).focus()
            await pilot.press("a", "b", "c", "escape")
            assert app.is_running and isinstance(app.focused, DataTable)
            await pilot.press("escape")
            await eventually(lambda: not app.is_running, what="quit")
    finally:
        await asyncio.gather(*(maker.close() for maker in makers))


async def test_esc_on_a_button_goes_back_to_the_list_and_quitting_leaves_the_open_race(
    alice: Session,
) -> None:
    """Esc on the Create button just clicked (or the rated checkbox) quit the app, and the
    race created stayed open on the server (a bot joined it later: its creator ended `gone`).
    Esc there goes back to the list; quitting from the list leaves the race, and says so."""
    app = PlayApp(alice)
    async with app.run_test(size=(120, 30)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        lobby = app.screen
        table = lobby.query_one("#races", DataTable)
        await pilot.click("#create")
        await eventually(lambda: app.race_id is not None, what="race created")
        race_id = app.race_id
        assert race_id is not None
        me = PlayerId(alice.me or "")
        await eventually(
            lambda: race_id in alice.state.races and me in alice.state.races[race_id].racers,
            what="seated in the race",
        )

        def focused() -> object:
            return app.focused

        assert focused() is lobby.query_one("#create", Button)
        await pilot.press("escape")
        assert app.is_running and focused() is table
        lobby.query_one("#rated", Checkbox).focus()
        await pilot.press("escape")
        assert app.is_running and focused() is table
        await pilot.press("escape")
        await eventually(lambda: not app.is_running, what="quit")
    await eventually(
        lambda: (
            alice.state.races[race_id].status == "cancelled"
            or me not in alice.state.races[race_id].racers
        ),
        what="the race left",
    )
    assert app.farewell == [f"left race {race_id}: it had not started"]


async def test_quitting_with_the_server_gone_does_not_wait_for_it(
    server_app: App, alice: Session
) -> None:
    """With the link down, quitting sent the leave anyway and waited for its answer (10 s,
    the screen frozen), then said `cannot leave race R: ` with no reason. It now says why at
    once and sends nothing."""
    app = PlayApp(alice)
    async with app.run_test(size=(120, 30)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        await pilot.click("#create")
        await eventually(lambda: app.race_id is not None, what="race created")
        race_id = app.race_id
        me = PlayerId(alice.me or "")
        await eventually(
            lambda: race_id in alice.state.races and me in alice.state.races[race_id].racers,
            what="seated in the race",
        )
        app.screen.query_one("#races", DataTable).focus()
        await server_app.stop()
        await eventually(lambda: alice.link is not LinkStatus.CONNECTED, what="link down")
        await pilot.press("escape")
        await eventually(lambda: not app.is_running, what="quit")
    assert app.farewell == [
        f"cannot leave race {race_id}: the server is not reachable (it gives the seat up "
        "after its grace period)"
    ]


#: Klondike deal 1 after these moves: t4 ends K♠ Q♥ (three backs under them), t0 is empty.
RUN_MOVES = ("w-t2", "t6-f1", "deal", "t5-f2", "deal", "t4-t2", "deal", "t0-t4")


async def test_a_clicked_card_moves_exactly_the_cards_from_it_up(
    server_url: str, alice: Session
) -> None:
    """Clicking Q♥ (the top of K♠ Q♥) then the empty t0 sent `t4-t0:2`, the nearest count
    that could go: a click picks the run from the clicked card, so Q♥ alone is refused."""
    app = PlayApp(alice)
    bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=60)
    await bot.connect()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen, race_id = await racing(app, alice, bot, game_number="1")
            me = PlayerId(alice.me or "")

            def plies() -> int:
                return alice.state.races[race_id].plies[me]

            for move in RUN_MOVES:
                before = plies()
                app.send_move(race_id, move, screen)
                await eventually(lambda: plies() > before, what=move)  # noqa: B023
            board = alice.state.my_board(race_id)
            assert board is not None and board.piles["tableau[4]"].cards == ("KS", "QH")
            widget = screen.query_one("#board", BoardWidget)

            def cell(pile: str, depth: int) -> tuple[int, int]:
                rendered = widget._rendered
                assert rendered is not None
                return next(xy for xy, hit in rendered.hits.items() if hit == Hit(pile, depth))

            def drawn() -> bool:  # the board after the last move: K♠ Q♥ on t4, t0 empty
                rendered = widget._rendered
                hits = set(rendered.hits.values()) if rendered is not None else set()
                return Hit("t4", 2) in hits and Hit("t0", 1) not in hits

            await eventually(drawn, what="the last move drawn")
            await pilot.click(widget, offset=cell("t4", 1))  # Q♥
            await eventually(lambda: screen.source == ("t4", 1), what="Q♥ picked")
            await pilot.click(widget, offset=cell("t0", 0))
            await eventually(lambda: screen.source is None, what="refused")
            assert screen.message.startswith("refused t4-t0"), screen.message
            assert plies() == len(RUN_MOVES)
            await pilot.click(widget, offset=cell("t4", 2))  # K♠ and Q♥ on it
            await eventually(lambda: screen.source == ("t4", 2), what="K♠ picked")
            await pilot.click(widget, offset=cell("t0", 0))
            await eventually(lambda: plies() == len(RUN_MOVES) + 1, what="the run moved")
            board = alice.state.my_board(race_id)
            assert board is not None and board.piles["tableau[0]"].cards == ("KS", "QH")
    finally:
        await bot.close()


async def test_the_create_form_refuses_a_number_it_cannot_read(alice: Session) -> None:
    app = PlayApp(alice)

    def said(text: str) -> bool:
        return any(text in note.message for note in app._notifications)

    async with app.run_test(size=(120, 30)):
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        lobby = app.screen
        create = lobby.query_one("#create", Button)
        lobby.query_one("#time", Input).value = "1e3"
        create.press()
        await eventually(lambda: said("seconds: '1e3' is not a whole number"), what="refused")
        lobby.query_one("#time", Input).value = "-5"  # a number: the server says its bounds
        create.press()
        await eventually(
            lambda: said("time limit: "),
            what=f"the server's refusal in {[n.message for n in app._notifications]}",
        )
        assert app.race_id is None  # nothing was created
        assert not alice.state.races


def test_long_names_get_an_ellipsis_not_a_cut_that_makes_two_alike() -> None:
    def racer(name: str) -> RacerStatus:
        return RacerStatus(player_id=PlayerId(name), name=name)

    racers = [racer("weekend-warrior-01"), racer("weekend-warrior-02"), racer("ann")]
    wide = [line.plain for line in racer_lines(racers, PlayerId("ann"), 120)]
    assert wide[0].startswith("  weekend-warrior-01 ") and wide[1].startswith(
        "  weekend-warrior-02"
    )
    assert wide[2].startswith("▶ ann ")
    ascii_lines = [line.plain for line in racer_lines(racers, PlayerId("ann"), 120, unicode=False)]
    assert ascii_lines[2].startswith("> ann ")
    longest = [racer("x" * 24), racer("y" * 30)]  # 24 is the longest name; wider is cut
    assert racer_lines(longest, None, 120)[1].plain.startswith("  " + "y" * 23 + "… ")


async def test_esc_clears_a_move_half_typed(server_url: str, alice: Session) -> None:
    async with racing_app(server_url, alice) as (app, pilot, screen, _):
        await pilot.press("colon", "t", "6")
        line = screen.query_one("#move", Input)
        assert line.value == "t6"
        await pilot.press("escape")
        assert line.value == "" and isinstance(app.focused, BoardWidget)


async def test_a_join_refused_for_its_invite_code_says_where_to_type_it(
    server_url: str, alice: Session
) -> None:
    """The one invite field stands in the create form; the refusal said only `this race needs
    its invite code (no invite code)`, not that Join reads that field."""
    host = Bot(server_url, "hana", make_strategy("greedy"))
    await host.connect()
    app = PlayApp(alice)

    def said(text: str) -> bool:
        return any(text in note.message for note in app._notifications)

    try:
        race_id = await host.create("klondike", 2, 300, invite_code="sekrit")
        async with app.run_test(size=(100, 30)):
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
            lobby = app.screen
            lobby.query_one("#join-id", Input).value = race_id
            lobby.query_one("#join", Button).press()
            await eventually(
                lambda: said("type the race's code in the invite code field, then Join"),
                what=f"the hint in {[n.message for n in app._notifications]}",
            )
            assert app.race_id is None
            lobby.query_one("#invite", Input).value = "sekrit"
            lobby.query_one("#join", Button).press()
            await eventually(lambda: app.race_id == race_id, what="joined with the code")
    finally:
        await host.close()


async def test_quitting_mid_race_says_what_becomes_of_the_race(
    server_url: str, tmp_path: Path
) -> None:
    """Ctrl+Q on the race screen ended the program without a word: the line mode says that
    the player forfeits after the grace period unless they come back, and now so does this,
    once the terminal is back. A race it created and left says only that it was left."""
    rival, pump = await open_session(server_url, "rival")
    try:
        race_id = await rival.create_race("klondike", 2, 300)
        argv = ["--server", server_url, "--name", "pat", "--race", race_id]
        player = await FullTerminal.start(tmp_path, "play", *argv)
        try:
            await player.expect(b"t6")  # the race started: the board is drawn
            player.type(b"\x11")  # Ctrl+Q
            assert await player.finish() == 0
        finally:
            await player.kill()
        said = player.output.decode(errors="replace")
        assert (
            f"solrace play: leaving race {race_id} while it is running: you forfeit (gone) "
            f"after 60 s away unless you come back with solrace play (Ctrl+R resumes {race_id})"
        ) in said, said[-500:]
        created = await FullTerminal.start(
            tmp_path, "play", "--server", server_url, "--name", "pat", "--create", "klondike"
        )
        try:
            await created.expect(b"Start when ready")  # the lobby says its race is open
            created.type(b"\x11")
            assert await created.finish() == 0
        finally:
            await created.kill()
        said = created.output.decode(errors="replace")
        assert ": it had not started" in said, said[-500:]
        assert "leaving race" not in said, said[-500:]
    finally:
        pump.cancel()
        await rival.conn.close()
