"""Replays: fetched from the server after a race, saved as a file, stepped in the TUI."""

from __future__ import annotations

import asyncio
from pathlib import Path

from solrace.client.bots import Bot
from solrace.client.replay import ReplayCursor, load_replay_file, replay_text
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import ReplayApp
from solrace.client.widgets import BoardWidget
from solrace.server.protocol.messages import ReplayModel

from .conftest import eventually, widget
from .process import Child
from .test_connection import session_for


async def finished_race(url: str) -> str:
    bots = [Bot(url, n, make_strategy("greedy", seed=i), delay_s=0) for i, n in enumerate("jk")]
    for bot in bots:
        await bot.connect()
    race_id = await bots[0].create("klondike", 2, 120)
    await bots[1].join(race_id)
    await asyncio.gather(*(bot.play() for bot in bots))
    for bot in bots:
        await bot.close()
    return race_id


async def fetch(url: str, race_id: str) -> ReplayModel:
    session: Session = await session_for(url)
    pump = asyncio.create_task(session.pump())
    try:
        return await session.get_replay(race_id)
    finally:
        pump.cancel()
        await session.conn.close()


async def test_replay_steps_every_racer_move_by_move(server_url: str, tmp_path: Path) -> None:
    race_id = await finished_race(server_url)
    replay = await fetch(server_url, race_id)
    cursor = ReplayCursor(replay)
    assert cursor.ply == 0 and "the deal" in cursor.describe()
    cursor.seek(cursor.last_ply)
    assert cursor.last_ply == len(cursor.racer.moves)
    final = cursor.board
    assert final.progress[0] == next(
        e.on_foundations for e in replay.results if e.player_id == cursor.racer.player_id
    )
    cursor.next_racer()
    assert cursor.racer_index == 1
    text = replay_text(replay)
    assert "commitment verified" in text and race_id in text

    path = tmp_path / "race.json"
    path.write_text(replay.model_dump_json())
    assert load_replay_file(path) == replay

    app = ReplayApp(replay, ascii=True)
    async with app.run_test(size=(80, 24)) as pilot:
        board = await widget(app.screen, "#board", BoardWidget)
        await eventually(lambda: "t6" in board.text, what="first board")
        first = board.text
        await pilot.press("end")
        await eventually(lambda: board.text != first, what="last board")
        await pilot.press("home")
        await eventually(lambda: board.text == first, what="back to the deal")
        await pilot.press("tab")
        await pilot.press("right")
        await eventually(
            lambda: "[1/" in str(app.screen.query_one("#replay-line").render()), what="one step"
        )


async def test_replay_command_prints_a_file_and_fetches_from_a_server(
    server_url: str, tmp_path: Path
) -> None:
    race_id = await finished_race(server_url)
    saved = tmp_path / "saved.json"
    fetched = await Child.start(
        tmp_path, "replay", race_id, "--server", server_url, "--plain", "--save", str(saved)
    )
    assert await fetched.finish() == 0, fetched.output
    assert "commitment verified" in fetched.output
    from_file = await Child.start(tmp_path, "replay", str(saved), "--plain")
    assert await from_file.finish() == 0
    assert from_file.output == fetched.output
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    bad = await Child.start(tmp_path, "replay", str(broken), "--plain")
    assert await bad.finish() == 1 and "not a solrace replay" in bad.output
