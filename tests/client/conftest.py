"""Fixtures of the client tests: a real server on a loopback port the OS picks."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.screen import Screen
from textual.widget import Widget

from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.race_screen import RaceScreen
from solrace.client.session import Session
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.server.app import App
from solrace.server.protocol.ids import RaceId
from solrace.server.settings import Settings
from tests.waiting import eventually

W = TypeVar("W", bound=Widget)


async def open_session(
    url: str, name: str | None, **options: Any
) -> tuple[Session, asyncio.Task[None]]:
    """A connected session of `name` (None: an anonymous spectator) and its pump; `options`
    go to its `Connection`."""
    conn = Connection(url, name=name, **options)
    await conn.connect()
    conn.recv_nowait()
    session = Session(conn)
    return session, asyncio.create_task(session.pump())


#: The test servers' rate budget (capacity and refill per second): no test floods it.
RATE_BUDGET = 10_000.0


def server_settings(data_dir: Path, **overrides: object) -> Settings:
    options: dict[str, object] = {
        "host": "127.0.0.1",
        "port": 0,
        "data_dir": data_dir,
        "store": "memory:",
        "secret": "client-tests-secret",
        "log_level": "WARNING",
        "countdown_s": 0.2,
        "rate_capacity": RATE_BUDGET,
        "rate_refill_per_s": RATE_BUDGET,
        "spectator_batch_s": 0.05,
    }
    options.update(overrides)
    return Settings(**options)  # type: ignore[arg-type]


@pytest.fixture
async def server_app(tmp_path: Path) -> AsyncIterator[App]:
    app = App(server_settings(tmp_path / "server"))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
def server_url(server_app: App) -> str:
    return f"ws://127.0.0.1:{server_app.port}"


@pytest.fixture
async def alice(server_url: str) -> AsyncIterator[Session]:
    """alice's session on the test server (pumped), closed at the end."""
    session, pump = await open_session(server_url, "alice")
    yield session
    pump.cancel()
    await session.conn.close()


@pytest.fixture(autouse=True)
def client_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Keep tokens and logs of every test in its own folder."""
    monkeypatch.setenv("SOLRACE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOLRACE_USER_DATA_DIR", str(tmp_path / "data"))
    # The rate budget of `server_settings`, for the servers children embed too (`solrace play`
    # without --server reads the server's settings from the environment).
    monkeypatch.setenv("SOLRACE_RATE_CAPACITY", str(RATE_BUDGET))
    monkeypatch.setenv("SOLRACE_RATE_REFILL_PER_S", str(RATE_BUDGET))
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield tmp_path


async def widget(screen: Screen[Any], selector: str, kind: type[W]) -> W:
    """The widget `selector` of `screen` once mounted (a screen just pushed composes later)."""
    await eventually(lambda: bool(screen.query(selector)), what=f"{selector} mounted")
    return screen.query_one(selector, kind)


async def race_on_screen(
    app: PlayApp, bots: Sequence[Bot], game: str = "klondike", game_number: str | None = None
) -> tuple[RaceId, RaceScreen]:
    """From the lobby of `app`: a race of `game` (on deal `game_number`, if named; 600 s) with
    a seat for each of `bots`, created on the app and joined by the bots: its id and its race
    screen, once shown (`keys_reach` waits for the deal drawn)."""
    await eventually(lambda: isinstance(app.screen, LobbyScreen), what="the lobby")
    app.create_race(game, len(bots) + 1, 600, game_number=game_number)
    await eventually(lambda: app.race_id is not None, what="race created")
    race_id = RaceId(app.race_id or "")
    for bot in bots:
        await bot.join(race_id)
    await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
    screen = app.screen
    assert isinstance(screen, RaceScreen)
    return race_id, screen


async def keys_reach(screen: RaceScreen) -> BoardWidget:
    """The race screen's board once the screen has mounted, drawn the deal and focused the
    board: a key pressed from then on reaches the race (one pressed before may be lost)."""
    board = await widget(screen, "#board", BoardWidget)
    await eventually(
        lambda: (
            screen.focused is board
            and board.board is not None
            and bool(board.text)
            and board.placeholder not in board.text
        ),
        what="the board drawn and focused",
    )
    return board


def child_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SOLRACE_CONFIG_DIR"] = str(tmp_path / "child-config")
    env["SOLRACE_USER_DATA_DIR"] = str(tmp_path / "child-data")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("NO_COLOR", None)
    return env


#: The admin token of the tournament tests' server.
TOKEN = "screen-admin-token"


@pytest.fixture
async def tournament_server(tmp_path: Path) -> AsyncIterator[App]:
    app = App(
        server_settings(
            tmp_path / "server",
            admin_token=TOKEN,
            tournament_tick_s=0.02,
            spectator_delay_rated_s=0.0,
            min_time_limit_s=1,
        )
    )
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


class Opened:
    """Sessions the test opens (each with its pump), closed at the end."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.items: list[tuple[Session, asyncio.Task[None]]] = []

    async def open(self, name: str | None) -> Session:
        conn = Connection(self.url, name=name)
        await conn.connect()
        conn.recv_nowait()
        session = Session(conn)
        self.items.append((session, asyncio.create_task(session.pump())))
        return session

    async def close(self) -> None:
        for session, pump in self.items:
            pump.cancel()
            await session.conn.close()


@pytest.fixture
async def opened(tournament_server: App) -> AsyncIterator[Opened]:
    """Sessions on the tournament server, closed at the end."""
    sessions = Opened(url_of(tournament_server))
    yield sessions
    await sessions.close()
