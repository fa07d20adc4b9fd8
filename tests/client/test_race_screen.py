"""The race screen before the player's board is there, driven by Textual's pilot against a
real server: what it says while the race counts down to its start, and once the race runs
but the board has not come yet."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

from textual.widgets import Static

from solrace.client.bots import Bot
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.server.app import App
from solrace.server.protocol.codec import unpack_map
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually

from .conftest import open_session, race_on_screen, server_settings, widget
from .spoiling import Data, Pipe

#: What a move's key says while the race counts down (the lobby's race: Leave is past).
COUNTDOWN_MOVE = (
    "the race has not started yet (counting down to its start): no moves before the start — "
    "l goes back to the lobby"
)


async def test_the_countdown_shows_the_time_to_the_start_and_a_key_says_the_wait(
    tmp_path: Path,
) -> None:
    """Counting down (a minute: the test's server, not the 0.2 s of the others, so that the
    race cannot start before the screen is looked at), the race screen's head says when it
    starts, its board waits for the deal, and a move's key says the race counts down to its
    start: nothing is sent."""
    server = App(server_settings(tmp_path / "server", countdown_s=60.0))
    await server.start()
    url = f"ws://127.0.0.1:{server.port}"
    alice, pump = await open_session(url, "alice")
    bot = Bot(url, "bob", make_strategy("greedy", seed=3), delay_s=60)
    await bot.connect()
    app = PlayApp(alice)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            race_id, screen = await race_on_screen(app, [bot])  # two seats: full, it counts
            await eventually(
                lambda: alice.state.races[race_id].status == "countdown", what="the countdown"
            )
            head = await widget(screen, "#race-head", Static)
            board = await widget(screen, "#board", BoardWidget)
            message = await widget(screen, "#message", Static)
            await eventually(lambda: isinstance(app.focused, BoardWidget), what="keys to it")
            counting = re.compile(r"starts in 0:[0-5]\d\b")
            await eventually(
                lambda: counting.search(str(head.render())) is not None, what="time to start"
            )
            assert f"race {race_id}" in str(head.render())
            await eventually(
                lambda: board.text == "waiting for the deal…", what="the board's place"
            )
            assert board.board is None
            assert str(message.render()) == ""  # nothing said until a key asks

            await app.workers.wait_for_complete()  # the race screen's sync is sent
            sent = alice.conn.next_seq
            await pilot.press("d")
            assert str(message.render()) == COUNTDOWN_MOVE
            await pilot.press("t", "1")
            await pilot.pause()
            assert str(message.render()) == COUNTDOWN_MOVE
            assert alice.conn.next_seq == sent, "a move was sent during the countdown"
            assert alice.state.races[race_id].status == "countdown"  # still counting
    finally:
        await bot.close()
        await cancel_and_wait([pump])
        await alice.conn.close()
        await server.stop()


@dataclass
class BoardHoldingRelay(Pipe):
    """Passes frames between a client and the real server at `upstream`, but the server's
    `board` frames (and all that follow them: order kept) wait until `released` is set;
    `holding` is set once one waits."""

    holding: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    async def from_server(self, data: Data) -> Data:
        if isinstance(data, bytes) and unpack_map(data).get("type") == "board":
            self.holding.set()
            await self.released.wait()
        return data


#: What the race screen says of a running race whose board has not come yet.
BOARD_ON_ITS_WAY = "race running: waiting for your board…"
#: What a pile's key (or a move) says then: not that the race has not started.
NO_BOARD_RUNNING = "the race is running but your board has not come yet: moves once it shows"


async def test_a_running_race_whose_board_has_not_come_says_so_not_that_it_has_not_started(
    server_url: str,
) -> None:
    """The race started (its news came) but the player's board had not (held here by a relay
    until the screen is looked at): the board's place said 'waiting for the deal…', a pile's
    key 'no board yet: the race has not started' and a move 'refused deal: no board yet: the
    race has not started', of a race that had. They say it runs and the board is on its way;
    once it comes, the line goes and the board shows."""
    relay = BoardHoldingRelay(server_url)
    async with relay.running() as url:
        alice, pump = await open_session(url, "alice")
        bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=60)
        await bot.connect()
        app = PlayApp(alice)
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                race_id, screen = await race_on_screen(app, [bot])
                await asyncio.wait_for(relay.holding.wait(), 20)
                await eventually(
                    lambda: alice.state.races[race_id].status == "running", what="the start"
                )
                board = await widget(screen, "#board", BoardWidget)
                message = await widget(screen, "#message", Static)
                await eventually(lambda: isinstance(app.focused, BoardWidget), what="keys")
                await eventually(lambda: board.text == BOARD_ON_ITS_WAY, what="the board's place")
                assert alice.state.my_board(race_id) is None

                await pilot.press("t")
                assert str(message.render()) == NO_BOARD_RUNNING
                await pilot.press("escape", "d")
                await eventually(
                    lambda: str(message.render()) == f"refused deal: {NO_BOARD_RUNNING}",
                    what="the deal not sent",
                )

                relay.released.set()
                await eventually(lambda: board.board is not None, what="the board shown")
                await eventually(lambda: str(message.render()) == "", what="the line gone")
                assert BOARD_ON_ITS_WAY not in board.text
        finally:
            relay.released.set()
            await bot.close()
            await cancel_and_wait([pump])
            await alice.conn.close()
