"""Full-screen commands and terminals. Into a pipe: `play` falls back to its line mode,
`watch` says it needs a terminal. In a terminal (a pseudo-terminal here): `watch RACE` of a
race the server does not hold live says so instead of an empty screen."""

from __future__ import annotations

import asyncio
import os
import pty
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.client.bots import Bot
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from tests.server.test_verify import MOVES, sample
from tests.waiting import eventually

from .conftest import TOKEN, Opened, child_env, server_settings
from .process import Child
from .test_tournament_screen import create


async def test_replay_into_a_pipe_prints_the_text(tmp_path: Path) -> None:
    path = tmp_path / "race.json"
    path.write_text(sample(MOVES).model_dump_json())
    replay = await Child.start(tmp_path, "replay", str(path))
    try:
        assert await replay.finish() == 0
    finally:
        await replay.kill()
    assert replay.lines[0] == "solrace replay: output is not a terminal: text (--plain)"
    assert replay.lines[-1] == "replay verified"
    assert "\x1b[" not in replay.output


async def test_tournament_screens_into_a_pipe_print_text(
    tournament_server: App, tmp_path: Path
) -> None:
    url = f"ws://127.0.0.1:{tournament_server.port}"
    opened = Opened(url)
    try:
        tid = await create(await opened.open("director"), "single_elimination")
    finally:
        await opened.close()
    base = ("tournament", "--server", url, "--admin-token", TOKEN)
    show = await Child.start(tmp_path, *base, "show", tid, "--tui")
    try:
        assert await show.finish() == 0
    finally:
        await show.kill()
    assert show.lines[0] == "solrace tournament: output is not a terminal: text (without --tui)"
    assert any("single_elimination-cup" in line for line in show.lines)
    assert "\x1b[" not in show.output

    player = await Child.start(tmp_path, *base, "--name", "ann", "join", tid, "--play")
    try:
        await player.expect("output is not a terminal: line mode (--plain)")
        await player.expect(f"connected to {url} as ann; tournament {tid}")
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
    assert "\x1b[" not in player.output


async def run_in_a_terminal(tmp_path: Path, *args: str) -> tuple[int, str]:
    """`solrace ARGS` with its stdout on a pseudo-terminal; (exit status, stderr). A command
    that opens its full screen instead of exiting fails the test (timeout)."""
    master, slave = pty.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "solrace.cli",
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=slave,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(tmp_path),
        )
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.fixture
async def forgetful_server(tmp_path: Path) -> AsyncIterator[App]:
    """A server that drops a finished race from memory at once (its replay stays stored)."""
    app = App(server_settings(tmp_path / "forgetful", finished_kept_s=0.0))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


async def finished_race(app: App, url: str) -> str:
    """A race two bots played to its end, which the server no longer holds live."""
    bots = [
        Bot(url, f"w{i}", make_strategy("greedy", seed=i, max_moves=3), delay_s=0) for i in (1, 2)
    ]
    try:
        for bot in bots:
            await bot.connect()
        race_id = await bots[0].create("klondike", 2, 60)
        await bots[1].join(race_id)
        await bots[0].start()
        await asyncio.gather(*(bot.play() for bot in bots))
    finally:
        for bot in bots:
            await bot.close()
    await eventually(lambda: race_id not in app.hub.races, what="the race dropped")
    return race_id


async def test_watch_of_an_unknown_race_says_so(server_url: str, tmp_path: Path) -> None:
    status, err = await run_in_a_terminal(tmp_path, "watch", "--server", server_url, "nosuch")
    assert status == 2
    assert err == (
        "solrace watch: no live race 'nosuch' (unknown_race); "
        "'solrace watch' lists the live races\n"
    )


async def test_watch_of_a_finished_race_points_to_replay(
    forgetful_server: App, tmp_path: Path
) -> None:
    url = f"ws://127.0.0.1:{forgetful_server.port}"
    race_id = await finished_race(forgetful_server, url)
    status, err = await run_in_a_terminal(tmp_path, "watch", "--server", url, race_id)
    assert status == 2
    assert f"race {race_id} is finished" in err
    assert f"'solrace replay {race_id} --server {url}'" in err


async def test_play_into_a_pipe_uses_the_line_mode(server_url: str, tmp_path: Path) -> None:
    player = await Child.start(tmp_path, "play", "--server", server_url, "--name", "pip")
    try:
        await player.expect("output is not a terminal: line mode (--plain)")
        await player.expect(f"connected to {server_url} as pip")
        await player.send("quit")
        assert await player.finish() == 0
        assert "\x1b[" not in player.output  # no terminal control sequences
    finally:
        await player.kill()


async def test_watch_into_a_pipe_says_it_needs_a_terminal(tmp_path: Path) -> None:
    watcher = await Child.start(tmp_path, "watch", "--server", "ws://127.0.0.1:9")
    try:
        assert await watcher.finish() == 2
        assert "solrace watch: needs a terminal" in watcher.output
        assert "'solrace replay RACE --server ws://127.0.0.1:9 --plain'" in watcher.output
        assert "\x1b[" not in watcher.output and "Traceback" not in watcher.output
    finally:
        await watcher.kill()


async def test_watch_of_a_race_into_a_pipe_names_the_replay_command_to_paste(
    tmp_path: Path,
) -> None:
    """It said 'solrace replay RACE --plain', without the race or the server it was given."""
    watcher = await Child.start(tmp_path, "watch", "--server", "ws://127.0.0.1:9", "r1a2b3")
    try:
        assert await watcher.finish() == 2
        assert "'solrace replay r1a2b3 --server ws://127.0.0.1:9 --plain'" in watcher.output
    finally:
        await watcher.kill()
