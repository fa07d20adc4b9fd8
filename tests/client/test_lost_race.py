"""A race the server loses mid-play (its store restarted without its data): the server tells
its racers with an `unknown_race` error naming it, and the client says what happened and what
to do, in the play screen and in the line mode, against a real server on loopback."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
from textual.widgets import Static

from solrace.client.bot_args import build_parser, parse_noting_defaults
from solrace.client.bot_cli import run_bots
from solrace.client.bots import Bot
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.plain import PlainMode
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp, WatchApp
from solrace.client.watching import WatchScreen
from solrace.server.app import App
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import LeaveRace, Resign
from solrace.server.store.memory import MemoryStore
from tests.waiting import eventually

from .conftest import keys_reach, open_session, race_on_screen, widget

LOST = "the server lost this race (its store was restarted without its data)"


def lose_race(server: App, race_id: RaceId) -> None:
    """Make the server lose `race_id` as a Redis restarted without its data would: the store
    no longer has it, and the server's clock jumps past its time limit, so that the next tick
    has a change to store and finds it gone."""
    store = server.store
    assert isinstance(store, MemoryStore)
    del store._races[race_id]
    server.hub.clock = lambda: wall_clock_ms() + 3_600_000


@pytest.fixture
async def bob(server_url: str) -> AsyncIterator[Bot]:
    bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=0.5)
    await bot.connect()
    yield bot
    await bot.close()


async def racing_against(app: PlayApp, alice: Session, bob: Bot) -> tuple[RaceId, Static, Static]:
    """From the lobby of `app` (alice's), a race created and joined by `bob`, on its screen
    with alice's deal: the race and the screen's message line and head."""
    race_id, screen = await race_on_screen(app, [bob])
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="the deal")
    await keys_reach(screen)  # so that the keys a test presses are not lost, but refused
    message = await widget(screen, "#message", Static)
    return race_id, message, await widget(screen, "#race-head", Static)


async def test_the_play_screen_says_the_server_lost_the_race_and_what_to_do(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """The race screen went on showing the race, its clock running, and moves and resigns
    were sent; the lobby offered Ctrl+R back into it."""
    app = PlayApp(alice)
    async with app.run_test(size=(100, 30)) as pilot:
        race_id, message, head = await racing_against(app, alice, bob)

        lose_race(server_app, race_id)
        said = f"{LOST}: this race cannot go on and will have no result — l goes back to the lobby"
        await eventually(lambda: said in str(message.render()), what="the loss said")
        await eventually(lambda: "lost by the server" in str(head.render()), what="clock")
        race = alice.state.races[race_id]
        assert race.lost == LOST and not race.is_live

        plies = dict(race.plies)
        await pilot.press("d")  # not sent: the race is gone
        await pilot.press("x", "x")  # nothing to resign
        await pilot.pause()
        assert race.plies == plies and race.last_rejection is None
        assert said in str(message.render())

        await pilot.press("l")
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")
        assert race_id not in alice.state.races_to_play()  # no Ctrl+R back into it


async def line_mode_racing(alice: Session, bob: Bot) -> tuple[PlainMode, io.StringIO, RaceId]:
    """Alice's line mode (writing to the returned buffer) in a race it created and `bob`
    joined, with her deal in: the mode, its output and the race."""
    out = io.StringIO()
    mode = PlainMode(alice, out)
    await mode.create(["klondike", "2"])
    race_id = RaceId(mode.race_id or "")
    await bob.join(race_id)
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="the deal")
    return mode, out, race_id


async def test_the_line_mode_says_the_loss_and_ends_its_waits(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """`wait` on a race the server lost waited for good, a move was sent and refused with 'no
    such live race', and `quit` said the player would forfeit the race."""
    mode, out, race_id = await line_mode_racing(alice, bob)
    waiting = asyncio.create_task(mode.command("wait"))
    lose_race(server_app, race_id)
    await asyncio.wait_for(waiting, 10)
    said = f"race {race_id}: {LOST}: it cannot go on and will have no result"
    assert out.getvalue().count(said) == 1, out.getvalue()
    plies = dict(alice.state.races[race_id].plies)
    await mode.command("deal")  # not sent: said again
    assert out.getvalue().count(said) == 2, out.getvalue()
    assert alice.state.races[race_id].plies == plies
    await mode.quit()
    assert "forfeit" not in out.getvalue(), out.getvalue()


async def test_the_watch_screen_says_the_server_no_longer_has_the_race(
    server_app: App, server_url: str, alice: Session, bob: Bot
) -> None:
    race_id = await alice.create_race("klondike", 2, 600)
    await bob.join(race_id)
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="the start")
    spectator, pump = await open_session(server_url, None)
    app = WatchApp(spectator, race_id=race_id)
    try:
        async with app.run_test(size=(120, 40)):
            await eventually(lambda: isinstance(app.screen, WatchScreen), what="watch screen")
            head = await widget(app.screen, "#watch-head", Static)
            await eventually(lambda: "running" in str(head.render()), what="the race shown")
            lose_race(server_app, race_id)
            said = f"race {race_id}: the server no longer has it ({LOST})"
            await eventually(lambda: said in str(head.render()), what="the loss said")
    finally:
        pump.cancel()
        await spectator.conn.close()


async def test_a_wait_ends_when_the_sync_after_a_reconnect_finds_the_race_gone(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """`wait` waited for good when the server answered the race's sync after a reconnect
    with `unknown_race` (it no longer had the race: lost unnoticed, or finished and forgotten
    while the link was down)."""
    mode, out, race_id = await line_mode_racing(alice, bob)
    waiting = asyncio.create_task(mode.command("wait"))
    await eventually(lambda: bool(alice._waiters), what="the wait for the race's news")
    await forget_and_reconnect(server_app, alice, race_id)
    await asyncio.wait_for(waiting, 20)
    said = (
        f"race {race_id}: the server no longer has it (no live race '{race_id}'); if it has "
        f"finished, 'solrace replay {race_id} --server {alice.conn.url}' shows it"
    )
    assert out.getvalue().count(said) == 1, out.getvalue()
    race = alice.state.races[race_id]
    assert not race.is_live
    plies = dict(race.plies)
    await mode.command("deal")  # not sent: said again
    assert out.getvalue().count(said) == 2, out.getvalue()
    assert race.plies == plies
    await mode.quit()
    assert "forfeit" not in out.getvalue(), out.getvalue()


async def forget_and_reconnect(server: App, session: Session | Bot, race_id: RaceId) -> None:
    """The server forgets `race_id` without a word, then the link of `session` (or of a bot)
    drops: the sync of the reconnect is answered `unknown_race`."""
    store = server.store
    assert isinstance(store, MemoryStore)
    del store._races[race_id]
    server.hub.keeper._drop(server.hub.races[race_id])
    ws = session.conn._ws
    assert ws is not None
    await ws.close(code=1011)


async def test_the_play_screen_says_a_race_gone_after_a_reconnect(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """After a reconnect whose sync found the race gone, the play screen said nothing of it:
    its clock ran on, moves were sent, and Ctrl+R offered the race again."""
    app = PlayApp(alice)
    async with app.run_test(size=(100, 30)) as pilot:
        race_id, message, head = await racing_against(app, alice, bob)

        await forget_and_reconnect(server_app, alice, race_id)
        said = (
            f"the server no longer has this race (no live race '{race_id}'): if it has "
            f"finished, solrace replay {race_id} --server {alice.conn.url} shows it — l goes "
            "back to the lobby"
        )
        await eventually(lambda: said in str(message.render()), what="the race gone said")
        await eventually(lambda: "gone from the server" in str(head.render()), what="clock")
        race = alice.state.races[race_id]
        plies = dict(race.plies)
        await pilot.press("d")  # not sent
        await pilot.pause()
        assert race.plies == plies and race.last_rejection is None
        await pilot.press("l")
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="back in the lobby")
        assert race_id not in alice.state.races_to_play()


async def test_a_wait_goes_on_past_another_error_naming_the_race(alice: Session, bob: Bot) -> None:
    """An error of another code naming the race (here the answer to a `leave` sent aside
    the line mode, as a late answer comes) ended the `wait` with `the server no longer has
    it`, at the next news of the race."""
    mode, out, race_id = await line_mode_racing(alice, bob)
    waiting = asyncio.create_task(mode.command("wait"))
    await eventually(lambda: bool(alice._waiters), what="the wait for the race's news")
    race = alice.state.races[race_id]
    await alice.conn.send(LeaveRace(race_id=race_id))  # refused: the race runs
    await eventually(
        lambda: race.last_error is not None and race.last_error.code == ErrorCode.WRONG_STATUS,
        what="the refusal",
    )
    await alice.conn.send(Resign(race_id=race_id))  # news of the race, then its end
    await bob.conn.send(Resign(race_id=race_id))
    await asyncio.wait_for(waiting, 10)
    assert race.is_finished
    assert "no longer has it" not in out.getvalue(), out.getvalue()


async def test_a_bot_stops_playing_a_race_the_server_lost(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """A bot's `play` (`solrace bot`, `tournament bots`) waited for the end of a race the
    server had lost, for good: its move's answer never came."""
    race_id = await alice.create_race("klondike", 2, 600)
    await bob.join(race_id)
    playing = asyncio.create_task(bob.play())
    await eventually(lambda: bob.state.my_board(race_id) is not None, what="the start")
    lose_race(server_app, race_id)
    result = await asyncio.wait_for(playing, 10)
    assert result.race_id == race_id
    assert result.reason == f"{LOST}: the race has no result"


async def test_solrace_bot_ends_with_status_1_saying_the_race_is_lost(
    server_app: App, server_url: str, alice: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """`solrace bot` in a race the server lost never ended; it ends, saying so, with status 1:
    the race has no result."""
    race_id = await alice.create_race("klondike", 2, 600)
    argv = ["--server", server_url, "--race", race_id, "--count", "1", "--delay", "0.5"]
    args, _ = parse_noting_defaults(build_parser(), argv, ("seats", "time_limit"))
    running = asyncio.create_task(run_bots(args))
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="the start")
    lose_race(server_app, race_id)
    assert await asyncio.wait_for(running, 10) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"race {race_id}", lines
    assert lines[-1].endswith(f": {LOST}: the race has no result"), lines


async def test_the_line_mode_says_a_race_gone_after_a_reconnect_outside_a_wait(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """With no command waiting, the sync found the race gone and the line mode said only
    `error: no live race 'R' (unknown_race)`."""
    _mode, out, race_id = await line_mode_racing(alice, bob)
    await forget_and_reconnect(server_app, alice, race_id)
    said = f"race {race_id}: the server no longer has it (no live race '{race_id}'); if it has"
    await eventually(lambda: said in out.getvalue(), what="the race gone said")
    assert "error: no live race" not in out.getvalue(), out.getvalue()


async def test_a_bot_stops_playing_a_race_gone_after_a_reconnect(
    server_app: App, alice: Session, bob: Bot
) -> None:
    """A bot whose sync after a reconnect found its race gone played on for good."""
    race_id = await alice.create_race("klondike", 2, 600)
    await bob.join(race_id)
    playing = asyncio.create_task(bob.play())
    await eventually(lambda: bob.state.my_board(race_id) is not None, what="the start")
    await forget_and_reconnect(server_app, bob, race_id)
    result = await asyncio.wait_for(playing, 10)
    assert result.reason == f"the server no longer has the race (no live race '{race_id}')"
