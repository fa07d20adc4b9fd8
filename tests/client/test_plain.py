"""`solrace play --plain` in a child process against a real server (and the embedded one)."""

from __future__ import annotations

from pathlib import Path

from .process import Child


async def test_plain_mode_races_a_bot_to_the_reveal(server_url: str, tmp_path: Path) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    bot: Child | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 120")
        line = await player.expect("created")
        race_id = line.split()[1]
        bot = await Child.start(
            tmp_path, "bot", "--server", server_url, "--race", race_id, "--delay", "0.01"
        )
        await player.send("deal")
        await player.expect("race started")
        await player.expect("ok deal")
        await player.expect("t6")  # the board is printed after the ack
        await player.send("t0-t0")
        await player.expect("refused t0-t0")
        await player.send("nonsense")
        await player.expect("cannot read move")
        await player.send("moves")
        await player.expect("legal moves:")
        await player.send("resign")
        await player.expect("resigned")
        await player.send("wait")
        await player.expect("race finished", 60)
        await player.expect("commitment verified")
        await player.send("quit")
        assert await player.finish() == 0
        assert await bot.finish(60) == 0
        assert "commitment verified" in bot.output
    finally:
        await player.kill()
        if bot is not None:
            await bot.kill()


async def test_plain_mode_without_server_embeds_one_and_seats_a_bot(tmp_path: Path) -> None:
    player = await Child.start(
        tmp_path,
        "play",
        "--plain",
        "--name",
        "newcomer",
        "--bot-delay",
        "0.01",
        "--data-dir",
        str(tmp_path / "embedded"),
    )
    try:
        await player.expect("you against a greedy bot")
        await player.send("deal")
        await player.expect("ok deal", 60)
        await player.send("resign")
        await player.send("wait")
        await player.expect("commitment verified", 60)
        await player.send("quit")
        assert await player.finish() == 0
        identity = tmp_path / "child-config" / "identity.json"
        assert identity.exists() and "newcomer" in identity.read_text()
        assert oct(identity.stat().st_mode & 0o777) == "0o600"
    finally:
        await player.kill()
