"""A board or a move's ack from the server that the client has to ignore (no board of its
game) is followed by one `sync` of its race, whose answer brings the server's board back: the
board is good again without a reconnect. A server that keeps sending such boards is asked a few
times in a row (`MAX_BOARD_SYNCS`), not forever."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

from textual.widgets import Static

from solrace.client.boards import board_from_model
from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.plain import PlainMode
from solrace.client.render import render_plain
from solrace.client.session import MAX_BOARD_SYNCS, Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.engine import BoardView
from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.race_changes import own_board
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually

from .conftest import race_on_screen, widget
from .spoiling import Player, Relay, junk_ack, junk_board


def servers_board(server_app: App, race_id: RaceId, me: PlayerId) -> BoardView:
    """The player's board as the server holds it."""
    return board_from_model(own_board(server_app.hub.races[race_id], me).board)


async def test_an_ignored_ack_is_followed_by_a_sync_and_the_line_mode_prints_the_board_again(
    server_app: App, server_url: str
) -> None:
    relay = Relay(server_url, junk_ack)
    async with relay.running() as url, Player.racing(url, server_url) as (player, bot):
        out = io.StringIO()
        mode = PlainMode(player.session, out)
        await mode.command("create klondike 2 120")
        race_id = mode.race_id
        assert race_id is not None
        await bot.join(race_id)
        await eventually(lambda: player.board(race_id) is not None, what="the deal")
        before = len(out.getvalue().splitlines())
        await mode.command("deal")
        race = player.session.state.races[race_id]
        await eventually(lambda: race.plies.get(player.me) == 1, what="the board synced")
        assert player.board(race_id) == servers_board(server_app, race_id, player.me)
        assert race.unusable is None
        assert relay.sent["sync"] == 1
        assert player.links() == []  # no reconnect
        synced = render_plain(servers_board(server_app, race_id, player.me), mode.width)
        await eventually(lambda: synced in out.getvalue(), what="the synced board printed")
        lines = [ln for ln in out.getvalue().splitlines()[before:] if "progress" not in ln]
        said = "error: ignored the ack of deal from the server: klondike has no pile 't0'"
        # The move was made: `ok deal`; the board kept is not printed, the sync's board is.
        assert lines[lines.index(said) + 1] == "ok deal"
        assert "\n".join(lines[lines.index("ok deal") + 1 :]) == synced
        await mode.command("deal")  # on the synced board
        assert race.plies[player.me] == 2
        after = servers_board(server_app, race_id, player.me)
        assert player.board(race_id) == after
        assert out.getvalue().endswith(f"ok deal\n{render_plain(after, mode.width)}\n")
    assert len(relay.spoiled) == 1


async def test_the_play_screen_gets_the_board_back_after_one_it_ignored(
    server_app: App, server_url: str
) -> None:
    """The first board of the race is spoiled: the screen says so, then draws the server's
    board the sync brought, with no reconnect, and moves go on."""
    relay = Relay(server_url, junk_board)
    async with relay.running() as url, Player.racing(url, server_url) as (player, bot):
        app = PlayApp(player.session)
        async with app.run_test(size=(100, 30)) as pilot:
            race_id, screen = await race_on_screen(app, [bot])
            board = await widget(screen, "#board", BoardWidget)
            message = await widget(screen, "#message", Static)
            await eventually(lambda: relay.spoiled != [], what="the board spoiled")
            await eventually(lambda: "t6" in board.text, what="the synced deal drawn")
            assert player.board(race_id) == servers_board(server_app, race_id, player.me)
            await eventually(lambda: str(message.render()) == "", what="the message cleared")
            assert relay.sent["sync"] == 1
            await pilot.press("d")
            race = player.session.state.races[race_id]
            await eventually(lambda: race.plies.get(player.me) == 1, what="a deal")
            assert player.board(race_id) == servers_board(server_app, race_id, player.me)
            assert player.links() == []
    assert app.return_code in (None, 0)


async def test_a_server_that_keeps_sending_bad_boards_is_synced_a_few_times_only(
    server_url: str,
) -> None:
    """Every board spoiled: the first and the answers to `MAX_BOARD_SYNCS` syncs are ignored,
    and no further sync goes; one sync asked afterwards by hand, answered with a bad board
    too, brings none either."""
    relay = Relay(server_url, junk_board, times=None)
    async with relay.running() as url, Player.racing(url, server_url) as (player, bot):
        session = player.session
        race_id = await session.create_race("klondike", 2, 120)
        await bot.join(race_id)
        boards = MAX_BOARD_SYNCS + 1
        await eventually(lambda: player.boards_heard(race_id) == boards, what="the boards")
        await session.list_races()  # answered after any sync sent meanwhile
        assert relay.sent["sync"] == MAX_BOARD_SYNCS
        assert session.state.races[race_id].unusable is not None
        assert player.board(race_id) is None
        await session.resume(race_id)  # a sync by hand: its board is bad too
        await eventually(lambda: player.boards_heard(race_id) == boards + 1, what="one more")
        await session.list_races()
        assert relay.sent["sync"] == MAX_BOARD_SYNCS + 1
        assert player.board(race_id) is None
        assert player.links() == []


async def test_a_bot_gets_the_board_back_after_an_ack_it_ignored(
    server_app: App, server_url: str
) -> None:
    """A bot reads its own connection (no session's pump): it syncs the race the same way."""
    relay = Relay(server_url, junk_ack)
    async with relay.running() as url:
        bot = Bot(url, "carl", make_strategy("greedy", seed=1), delay_s=5)
        rival = Bot(server_url, "dora", make_strategy("greedy", seed=2), delay_s=5)
        await bot.connect()
        await rival.connect()
        try:
            race_id = await bot.create("klondike", 2, 120)
            await rival.join(race_id)
            me = PlayerId(bot.state.player_id or "")
            race = bot.state.race(race_id)

            async def read_until(done: Callable[[], bool]) -> None:
                while not done():
                    await bot.next_message(None)

            await asyncio.wait_for(read_until(lambda: me in race.boards), 20)
            await bot.conn.send_move(race_id, "deal")
            await asyncio.wait_for(read_until(lambda: race.plies.get(me) == 1), 20)
            assert race.boards[me] == servers_board(server_app, race_id, me)
            assert race.unusable is None
            assert relay.sent["sync"] == 1
            assert bot.reconnects == 0
        finally:
            await bot.close()
            await rival.close()
    assert len(relay.spoiled) == 1


async def test_a_spectator_gets_a_racer_s_board_back_after_one_it_ignored(
    server_url: str,
) -> None:
    """A watcher's sync makes it a spectator again: the answer brings every racer's board."""
    relay = Relay(server_url, junk_board)
    ann = Bot(server_url, "ann", make_strategy("greedy", seed=1), delay_s=5)
    bob = Bot(server_url, "bob", make_strategy("greedy", seed=2), delay_s=5)
    await ann.connect()
    await bob.connect()
    async with relay.running() as url:
        conn = Connection(url, name=None)
        await conn.connect()
        conn.recv_nowait()
        watcher = Session(conn)
        pump = asyncio.create_task(watcher.pump())
        try:
            race_id = await ann.create("klondike", 2, 120)
            await watcher.watch(race_id)
            await bob.join(race_id)
            racers = {PlayerId(p.state.player_id or "") for p in (ann, bob)}
            race = watcher.state.race(race_id)
            await eventually(lambda: set(race.boards) == racers, what="both boards")
            assert relay.spoiled
            assert relay.sent["sync"] == 1
            assert race.unusable is None
        finally:
            await cancel_and_wait([pump])
            await conn.close()
            await ann.close()
            await bob.close()
