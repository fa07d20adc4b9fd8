"""The Textual apps driven by Textual's pilot against a real server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.screens import LobbyScreen, RaceScreen, ResultScreen
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp, WatchApp
from solrace.client.watching import WatchScreen
from solrace.client.widgets import BoardWidget, RacersPanel

from .conftest import eventually


async def open_session(url: str, name: str | None) -> tuple[Session, asyncio.Task[None]]:
    conn = Connection(url, name=name)
    await conn.connect()
    conn.recv_nowait()
    session = Session(conn)
    return session, asyncio.create_task(session.pump())


@pytest.fixture
async def alice(server_url: str) -> AsyncIterator[Session]:
    session, pump = await open_session(server_url, "alice")
    yield session
    pump.cancel()
    await session.conn.close()


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
        board = screen.query_one("#board", BoardWidget)
        await eventually(lambda: "t0" in board.text, what="board drawn")
        ply_before = alice.state.races[race_id].plies[alice.me or ""]
        await pilot.press("d")
        await eventually(
            lambda: alice.state.races[race_id].plies[alice.me or ""] == ply_before + 1,
            what="deal acknowledged",
        )
        # A typed illegal move is explained and changes nothing.
        await pilot.press("colon")
        for key in "t0-t0":
            await pilot.press(key)
        await pilot.press("enter")
        await eventually(lambda: "refused" in screen.message, what="refusal shown")
        racers = screen.query_one("#racers", RacersPanel)
        assert "bob" in racers.text and "alice" in racers.text
        bot_task = asyncio.create_task(bot.play())
        await pilot.press("x")
        await pilot.press("x")
        await eventually(lambda: isinstance(app.screen, ResultScreen), 60, "result screen")
        result = app.screen
        assert isinstance(result, ResultScreen)
        await eventually(
            lambda: alice.state.races[race_id].commitment_ok is True, what="commitment check"
        )
        await bot_task
    await bot.close()
