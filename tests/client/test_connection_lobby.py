"""The lobby follow (`list_races` with `follow`) across a lost link, against a real server on
loopback: the server forgets a closed session's follow, so the connection asks again after
the reconnect, as it resyncs followed races."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from textual.widgets import DataTable

from solrace.client.link_status import LinkStatus, StatusChange
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.session import Session
from solrace.client.tui import PlayApp
from solrace.server.protocol.messages import RaceList
from tests.waiting import eventually

from .conftest import widget
from .test_connection import session_for


@pytest.fixture
async def bob(server_url: str) -> AsyncIterator[Session]:
    session = await session_for(server_url, "bob")
    pump = asyncio.create_task(session.pump())
    yield session
    pump.cancel()
    await session.conn.close()


def counting(session: Session) -> Callable[[LinkStatus], int]:
    """How many times the link reached each status from now on."""
    seen: list[LinkStatus] = []
    session.listeners.append(
        lambda m: seen.append(m.status) if isinstance(m, StatusChange) else None
    )
    return seen.count


async def drop_link(session: Session) -> None:
    """The link drops (as far as the client can tell); returns once it is back."""
    count = counting(session)
    ws = session.conn._ws
    assert ws is not None
    await ws.close(code=1011)
    await eventually(lambda: count(LinkStatus.CONNECTED) == 1, what="reconnected")


async def test_a_followed_lobby_is_followed_again_after_a_reconnect(
    alice: Session, bob: Session
) -> None:
    await alice.list_races(follow=True)
    await drop_link(alice)
    race_id = await bob.create_race("klondike", 2, 300)
    await eventually(lambda: race_id in alice.state.lobby, within=5, what="the pushed list")


async def test_a_lobby_no_longer_followed_is_not_followed_again(
    alice: Session, bob: Session
) -> None:
    lists: list[RaceList] = []
    await alice.list_races(follow=True)
    await alice.list_races(follow=False)
    alice.listeners.append(lambda m: lists.append(m) if isinstance(m, RaceList) else None)
    await drop_link(alice)
    await bob.create_race("klondike", 2, 300)
    await alice.list_races()  # answered after any list the reconnect would have asked for
    assert len(lists) == 1


async def test_the_lobby_screen_shows_races_created_after_a_reconnect(
    alice: Session, bob: Session
) -> None:
    """The reviewer's case: the lobby on screen, the link lost and back, a new race never
    showed until F5."""
    app = PlayApp(alice)
    async with app.run_test(size=(80, 24)):
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        table = await widget(app.screen, "#races", DataTable)
        before = await bob.create_race("klondike", 2, 300)
        await eventually(lambda: before in table.rows, what="the lobby followed")
        await drop_link(alice)
        race_id = await bob.create_race("klondike", 2, 300)
        await eventually(lambda: race_id in table.rows, within=5, what="the new race listed")
