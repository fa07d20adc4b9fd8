"""Full-screen commands when their output is not a terminal (a pipe, as here): `play` falls
back to its line mode, `watch` says it needs a terminal."""

from __future__ import annotations

from pathlib import Path

from .process import Child


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
        assert "\x1b[" not in watcher.output and "Traceback" not in watcher.output
    finally:
        await watcher.kill()
