"""The Textual apps driven by Textual's pilot against a real server on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from textual import events
from textual.app import App
from textual.message import Message
from textual.widgets import DataTable, Static

from solrace.client.app import build_play_parser, run_app
from solrace.client.bots import Bot
from solrace.client.link_status import LinkStatus
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.race_screen import RaceScreen
from solrace.client.result_screen import ResultScreen
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp, WatchApp
from solrace.client.watching import WatchScreen
from solrace.client.widgets import BoardWidget, RacersPanel, link_text
from solrace.server.app import App as ServerApp
from solrace.server.protocol.ids import PlayerId, RaceId
from tests.waiting import eventually

from .conftest import keys_reach, open_session, race_on_screen, server_settings, widget


async def test_lobby_create_join_and_race_to_the_end(server_url: str, alice: Session) -> None:
    app = PlayApp(alice)
    bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=0.02)
    await bot.connect()
    async with app.run_test(size=(100, 30)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        await pilot.click("#create")
        await eventually(lambda: app.race_id is not None, what="race created")
        race_id = app.race_id
        assert race_id is not None
        await eventually(lambda: race_id in alice.state.lobby, what="race listed")
        await bot.join(race_id)
        await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
        await eventually(lambda: alice.state.my_board(race_id) is not None, what="the deal")
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        board = await widget(screen, "#board", BoardWidget)
        await eventually(lambda: "t0" in board.text, what="board drawn")
        ply_before = alice.state.races[race_id].plies[PlayerId(alice.me or "")]
        await pilot.press("d")
        await eventually(
            lambda: alice.state.races[race_id].plies[PlayerId(alice.me or "")] == ply_before + 1,
            what="deal acknowledged",
        )
        # A typed illegal move is explained and changes nothing.
        await pilot.press("colon")
        for key in "t0-t0":
            await pilot.press(key)
        await pilot.press("enter")
        await eventually(lambda: "refused" in screen.message, what="refusal shown")
        await pilot.press("t", "9")  # klondike has no t9: said at once, not waited on
        await eventually(lambda: screen.message == "no pile t9 in this game", what="no t9")
        assert screen.keys == ""
        racers = screen.query_one("#racers", RacersPanel)
        await eventually(lambda: "bob" in racers.text and "alice" in racers.text, what="bars")
        bot_task = asyncio.create_task(bot.play())
        await pilot.press("x")
        await pilot.press("x")
        await eventually(
            lambda: isinstance(app.screen, ResultScreen), within=60, what="result screen"
        )
        result = app.screen
        assert isinstance(result, ResultScreen)
        await eventually(
            lambda: alice.state.races[race_id].commitment_ok is True, what="commitment check"
        )
        await bot_task
    await bot.close()


async def race_of_bots(url: str, game: str, names: tuple[str, ...], delay_s: float) -> list[Bot]:
    """Bots in one race of `game`, created and full (so it starts by itself)."""
    bots = [
        Bot(url, n, make_strategy("greedy", seed=i), delay_s=delay_s) for i, n in enumerate(names)
    ]
    for bot in bots:
        await bot.connect()
    race_id = await bots[0].create(game, len(bots), 600)
    for bot in bots[1:]:
        await bot.join(race_id)
    return bots


async def test_mouse_picks_stock_then_card_and_target(server_url: str, alice: Session) -> None:
    app = PlayApp(alice, args=None)
    bot = Bot(server_url, "carol", make_strategy("greedy"), delay_s=0.02)
    await bot.connect()
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        app.create_race("klondike", 2, 600)
        await eventually(lambda: app.race_id is not None, what="race created")
        race_id = app.race_id
        assert race_id is not None
        await bot.join(race_id)
        await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
        await eventually(lambda: alice.state.my_board(race_id) is not None, what="the deal")
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        board = await widget(screen, "#board", BoardWidget)
        await eventually(lambda: board.text.count("t6") == 1, what="board drawn")
        me = PlayerId(alice.me or "")
        # The stock's label row: clicking the stock deals.
        lines = board.text.splitlines()
        row = next(i for i, line in enumerate(lines) if line.startswith("s "))
        await pilot.click(board, offset=(0, row))
        await eventually(lambda: alice.state.races[race_id].plies[me] == 1, what="deal by click")
        # Click the waste's top card, then a tableau label: legal or refused, never a crash,
        # and a refusal leaves the board as it was.
        lines = board.text.splitlines()
        waste_x = lines[row].index("w ") + 2
        await pilot.click(board, offset=(waste_x, row))
        await eventually(lambda: screen.source is not None, what="source picked")
        assert screen.source is not None and screen.source[0] == "w"
        label_row = next(i for i, line in enumerate(lines) if line.startswith("t0"))
        await pilot.click(board, offset=(lines[label_row].index("t3"), label_row))
        await eventually(lambda: screen.source is None, what="move sent or refused")
        await eventually(
            lambda: alice.state.races[race_id].plies[me] == 2 or "refused" in screen.message,
            what="ack or refusal",
        )
    await bot.close()


@contextlib.asynccontextmanager
async def watching_dan_and_eve(url: str) -> AsyncIterator[tuple[WatchScreen, Session, list[Bot]]]:
    """A race of two bots (dan, eve) not playing yet, and a spectator's watch screen of it at
    120x40: the screen, the spectator's session and the bots, all closed after."""
    bots = await race_of_bots(url, "klondike", ("dan", "eve"), delay_s=0.05)
    spectator, pump = await open_session(url, None)
    app = WatchApp(spectator, race_id=bots[0].race_id)
    try:
        async with app.run_test(size=(120, 40)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            screen = app.screen
            assert isinstance(screen, WatchScreen)
            yield screen, spectator, bots
    finally:
        pump.cancel()
        await spectator.conn.close()
        for bot in bots:
            await bot.close()


async def test_watch_mode_shows_every_board_until_the_reveal(server_url: str) -> None:
    async with watching_dan_and_eve(server_url) as (screen, spectator, bots):
        tasks = [asyncio.create_task(bot.play()) for bot in bots]
        await eventually(
            lambda: (
                len(screen.query(BoardWidget)) == 2
                and all(w.board is not None for w in screen.query(BoardWidget))
            ),
            what="both boards",
        )

        # Each board is labelled with its racer once the widget has redrawn.
        def labelled(name: str) -> bool:
            return any(name in w.text for w in screen.query(BoardWidget))

        await eventually(lambda: labelled("dan") and labelled("eve"), what="board labels")
        await asyncio.gather(*tasks)
        race = spectator.state.races[RaceId(bots[0].race_id or "")]
        await eventually(lambda: race.commitment_ok is True, what="the reveal")
        racers = screen.query_one("#racers", RacersPanel)
        await eventually(lambda: "dan" in racers.text and "eve" in racers.text, what="bars")


async def test_watch_follow_mode_moves_on_to_the_next_race(server_url: str) -> None:
    first = await race_of_bots(server_url, "vegas-klondike", ("fay", "gus"), delay_s=0.0)
    spectator, pump = await open_session(server_url, None)
    app = WatchApp(spectator, race_id=first[0].race_id, follow=True)
    second: list[Bot] = []
    try:
        async with app.run_test(size=(100, 30)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            second = await race_of_bots(server_url, "klondike", ("hal", "ivy"), delay_s=0.2)
            await asyncio.gather(*(bot.play() for bot in first))
            second_id = second[0].race_id
            tasks = [asyncio.create_task(bot.play()) for bot in second]
            await eventually(
                lambda: isinstance(app.screen, WatchScreen) and app.screen.race_id == second_id,
                within=60,
                what="the next race on TV",
            )
            for task in tasks:
                task.cancel()
    finally:
        pump.cancel()
        await spectator.conn.close()
        for bot in first + second:
            await bot.close()


async def test_play_without_server_embeds_one_races_a_bot_and_rematches(
    tmp_path: Path,
) -> None:
    from solrace.client.app import Opponents
    from solrace.client.embedded import EmbeddedServer
    from solrace.client.identity import connect_player, embedded_key

    embedded = EmbeddedServer(tmp_path / "embedded", countdown_s=0.1)
    url = await embedded.start()
    # A move every 0.25 s keeps the bot inside the server's rate budget, as `play`'s default
    # does (faster, its link is closed over budget and comes back: test_opponent.py). Still
    # playing when the person resigns, it resigns too: alone.
    opponents = Opponents(
        url, "greedy", 0.25, identity_key=embedded_key(embedded.folder, "embedded-bot")
    )
    conn = await connect_player(url, embedded_key(embedded.folder), "newbie")
    session = Session(conn)
    conn.recv_nowait()
    pump = asyncio.create_task(session.pump())
    app = PlayApp(session, opponents=opponents, game="colorado")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await eventually(lambda: isinstance(app.screen, RaceScreen), what="race vs the bot")
            first = app.race_id
            screen = app.screen
            assert isinstance(screen, RaceScreen)
            board = await widget(screen, "#board", BoardWidget)
            await eventually(lambda: "t19" in board.text, what="Colorado's 20 piles")
            await pilot.press("x", "x")
            try:
                await eventually(
                    lambda: isinstance(app.screen, ResultScreen), within=60, what="result"
                )
            except AssertionError as exc:  # say where the race stood
                race = session.state.races.get(RaceId(first or ""))
                seen = None if race is None else {p: r.state for p, r in race.racers.items()}
                bots = [bot.result() for bot in opponents.bots]
                raise AssertionError(f"{exc}; racers: {seen}; bots: {bots}") from None
            await eventually(
                lambda: session.state.races[RaceId(first or "")].commitment_ok is True,
                what="reveal",
            )
            await pilot.press("r")
            await eventually(
                lambda: app.race_id not in (None, first) and isinstance(app.screen, RaceScreen),
                what="the rematch",
            )
    finally:
        pump.cancel()
        await opponents.close()
        await conn.close()
        await embedded.stop()


async def test_a_lobby_update_before_the_lobby_mounted_is_drawn_not_a_crash(
    server_url: str, alice: Session
) -> None:
    """A server message can reach the app while the lobby screen is composed (its table is in
    the DOM) but its `on_mount` has not run yet: the redraw it causes must not crash the app
    (it did: the rows were added before the table had columns)."""
    bob = Bot(server_url, "bob", make_strategy("greedy"))
    await bob.connect()
    race_id = await bob.create("klondike", 2, 600)
    await alice.list_races()
    assert race_id in alice.state.lobby
    app = PlayApp(alice)
    redrawn_early: list[bool] = []

    def hook(message: Message) -> None:
        # Before any mount handler of the lobby or its widgets has run: redraw as a server
        # message arriving now would.
        screen = app.screen_stack[-1] if app.screen_stack else None
        if (
            not redrawn_early
            and isinstance(message, events.Mount)
            and isinstance(screen, LobbyScreen)
            and screen.query("#races")
            and not screen.is_mounted
        ):
            redrawn_early.append(True)
            app.redraw()

    try:
        async with app.run_test(size=(80, 24), message_hook=hook):
            await eventually(lambda: bool(redrawn_early), what="a redraw before the mount")
            screen = app.screen
            assert isinstance(screen, LobbyScreen)
            table = await widget(screen, "#races", DataTable)
            await eventually(lambda: race_id in table.rows, what="the race listed")
            assert len(table.columns) == 6
        assert not app.return_code  # no crash (None: exited normally)
    finally:
        await bob.close()


async def test_a_crashed_app_gives_a_non_zero_exit_status() -> None:
    class Crashing(App[None]):
        def on_mount(self) -> None:
            raise ValueError("boom")

    assert await run_app(Crashing(), headless=True) == 1


async def test_watch_names_each_board_while_the_spectator_delay_holds_it(tmp_path: Path) -> None:
    """Boards reach spectators late (10 s in a rated race by default): until the first comes
    (the deal, at the start), each place says whose board it will be and why it waits (it used
    to say only "waiting for the deal…", names nowhere). The countdown is long so that the
    race cannot start, and its deal reach the screen, before the test looks."""
    settings = server_settings(tmp_path / "late", spectator_delay_casual_s=30.0, countdown_s=600.0)
    server = ServerApp(settings)
    await server.start()
    try:
        url = f"ws://127.0.0.1:{server.port}"
        async with watching_dan_and_eve(url) as (screen, spectator, bots):

            def waiting_with(name: str) -> bool:
                return any(
                    w.board is None and name in w.text and "30 s late" in w.text
                    for w in screen.query(BoardWidget)
                )

            await eventually(lambda: waiting_with("dan") and waiting_with("eve"), what="names")
            assert spectator.state.races[RaceId(bots[0].race_id or "")].status == "countdown"
    finally:
        await server.stop()


async def test_play_with_create_makes_that_race_at_the_start(
    server_url: str, alice: Session
) -> None:
    """`solrace play --server URL --create GAME --seats N` (full screen) used to open the
    lobby and create nothing; `--plain` did create it."""
    args = build_play_parser().parse_args(
        ["--server", server_url, "--create", "colorado", "--seats", "3", "--time-limit", "300"]
    )
    app = PlayApp(alice, args=args)
    async with app.run_test(size=(100, 30)):
        await eventually(lambda: app.race_id is not None, what="the race created")
        race = alice.state.races[RaceId(app.race_id or "")]
        await eventually(lambda: race.info is not None, what="its lobby entry")
        assert race.info is not None
        assert (race.info.game, race.info.seats, race.info.creator) == (
            "colorado",
            3,
            alice.state.player_id,
        )


async def test_a_race_whose_deal_was_chosen_says_so_in_the_lobby_and_on_its_screen(
    server_url: str, alice: Session
) -> None:
    """A casual race's creator may name the deal, and its racers are told so: the lobby's
    list said it (`chosen-deal`), the race screen did not."""
    creator, pump = await open_session(server_url, "cara")
    app = PlayApp(alice)
    try:
        race_id = await creator.create_race("klondike", 3, 600, game_number="12345")
        async with app.run_test(size=(120, 30)):
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
            app.join_race(race_id)
            await eventually(lambda: app.race_id == race_id, what="joined")
            status = await widget(app.screen, "#lobby-status", Static)
            await eventually(
                lambda: "the creator chose its deal" in str(status.render()), what="status"
            )
            await creator.start_race(race_id)
            await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
            head = await widget(app.screen, "#race-head", Static)
            await eventually(
                lambda: "deal chosen by its creator" in str(head.render()), what="the head"
            )
    finally:
        pump.cancel()
        await creator.conn.close()


async def test_l_leaves_a_race_screen_for_the_lobby_and_ctrl_r_comes_back(
    server_url: str, alice: Session
) -> None:
    """Out of a race others still play (resigned, finished), a player had no way back to the
    lobby but quitting; `l` goes there at any time, and the race goes on."""
    app = PlayApp(alice)
    bot = Bot(server_url, "bob", make_strategy("greedy"), delay_s=0.5)
    await bot.connect()
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            race_id, screen = await race_on_screen(app, [bot])
            await keys_reach(screen)
            await pilot.press("l")
            await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")
            assert race_id in alice.state.races_to_play()
            await pilot.press("ctrl+r")
            await eventually(lambda: isinstance(app.screen, RaceScreen), what="the race again")
    finally:
        await bot.close()


def test_a_screen_head_says_first_when_the_link_is_down_or_closed() -> None:
    class Link:
        link = LinkStatus.CONNECTED
        closed: str | None = None

    session = Link()
    assert link_text(session) == ""  # type: ignore[arg-type]
    session.link = LinkStatus.RECONNECTING
    assert link_text(session).startswith("reconnecting…")  # type: ignore[arg-type]
    session.link, session.closed = LinkStatus.CLOSED, "4001: bad token"
    assert link_text(session) == "DISCONNECTED (4001: bad token) — "  # type: ignore[arg-type]


async def test_ctrl_r_on_a_race_not_started_keeps_it_the_lobby_s_race(alice: Session) -> None:
    """Its race screen has no board before the start, and `l` from it used to drop the race
    from the lobby (Start and Leave then did nothing)."""
    app = PlayApp(alice)
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        app.create_race("klondike", 2, 600)
        await eventually(lambda: app.race_id is not None, what="race created")
        race_id = app.race_id
        app.race_id = None  # as after a restart of the client: only the server knows it
        await eventually(lambda: race_id in alice.state.races_to_play(), what="listed")
        await pilot.press("ctrl+r")
        await eventually(lambda: app.race_id == race_id, what="the lobby's race again")
        assert isinstance(app.screen, LobbyScreen)
