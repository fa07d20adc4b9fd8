"""The race screen before the player's board is there, driven by Textual's pilot against a
real server: what it says while the race counts down to its start, and once the race runs
but the board has not come yet."""

from __future__ import annotations

import re
from pathlib import Path

from textual.widgets import Static

from solrace.client.bots import Bot
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.server.app import App
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually

from .conftest import open_session, race_on_screen, server_settings, widget

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
            assert board.board is None and board.text == "waiting for the deal…"
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
