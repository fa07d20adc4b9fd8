"""`solrace watch`'s screen against a real node: its head line says how late the boards come
as the race says it (a delay of 2.5 s read "2s behind"), and for a tournament race whose deal
is held, that no board comes until the round ends (it read "boards 10s behind")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.widgets import Static

from solrace.client.session import Session
from solrace.client.tui import WatchApp
from solrace.client.watching import HELD_DEAL_PLACEHOLDER, WatchScreen
from solrace.client.widgets import BoardWidget
from solrace.server.app import App
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import RaceStarted
from tests.client.conftest import open_session
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race
from tests.integration.test_tournament_races import first_round_of_four
from tests.integration.test_tournaments import FAST, connect
from tests.waiting import eventually


@pytest.fixture(autouse=True)
def client_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The client keeps its files in the test's own folder."""
    monkeypatch.setenv("SOLRACE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOLRACE_USER_DATA_DIR", str(tmp_path / "data"))
    yield tmp_path


@asynccontextmanager
async def watch_screen(app: App, race_id: RaceId) -> AsyncIterator[tuple[WatchScreen, Session]]:
    """An anonymous spectator's watch screen of `race_id` (120 columns), and its session."""
    spectator, pump = await open_session(f"ws://127.0.0.1:{app.port}", None)
    watch = WatchApp(spectator, race_id=race_id)
    try:
        async with watch.run_test(size=(120, 40)):
            await eventually(lambda: isinstance(watch.screen, WatchScreen), what="watch screen")
            screen = watch.screen
            assert isinstance(screen, WatchScreen)
            yield screen, spectator
    finally:
        pump.cancel()
        await spectator.conn.close()


def head_of(screen: WatchScreen) -> str:
    return str(screen.query_one("#watch-head", Static).render())


async def test_the_head_says_a_delay_of_part_of_a_second_as_it_is(
    start_server: ServerFactory,
) -> None:
    app = await start_server(spectator_delay_casual_s=2.5, countdown_s=600.0)
    creator = await connect(app, "dan")
    race_id = await create_race(creator, seats=3)
    async with watch_screen(app, race_id) as (screen, spectator):
        race = spectator.state.races[race_id]
        await eventually(lambda: race.info is not None, what="the race's info")
        await eventually(lambda: "open" in head_of(screen), what="the head drawn")
        assert "boards 2.5s behind" in head_of(screen), head_of(screen)
        boards = screen.query(BoardWidget)
        await eventually(lambda: len(boards.nodes) == 1, what="dan's place")
        assert "spectators see each board 2.5 s late" in boards.nodes[0].placeholder
    await creator.close()


async def test_the_head_of_a_held_deal_says_no_board_comes_until_the_round_ends(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**{**FAST, "spectator_delay_rated_s": 10.0})
    admin, players, _, notices = await first_round_of_four(app)
    race_id = notices[players[0].player_id].race_id
    await players[0].expect(RaceStarted, lambda m: m.race_id == race_id)
    async with watch_screen(app, race_id) as (screen, spectator):
        race = spectator.state.races[race_id]
        await eventually(lambda: "running" in head_of(screen), what="the head drawn")
        assert race.info is not None and race.info.deal_held
        boards = screen.query(BoardWidget)
        await eventually(
            lambda: (
                bool(boards.nodes)
                and all(b.placeholder == HELD_DEAL_PLACEHOLDER for b in boards.nodes)
            ),
            what="the held boards said",
        )
        head = head_of(screen)
        assert "boards once the round ends" in head and "behind" not in head, head
    await asyncio.gather(*(each.close() for each in (admin, *players)))
