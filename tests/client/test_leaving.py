"""What the program's end says of each race a player still holds: `solrace play --plain`'s
`quit` in a child process against a real server."""

from __future__ import annotations

from pathlib import Path

from solrace.server.protocol.ids import RaceId

from .process import Child
from .test_plain import Opponent


async def test_quit_says_what_becomes_of_every_race_held(server_url: str, tmp_path: Path) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "ivo")
    rival = await Opponent.open(server_url, "rival")
    try:
        joined = await rival.session.create_race("klondike", 3, 600)
        await player.expect("connected to")
        await player.send(f"join {joined}")
        await player.expect(f"joined race {joined}")
        await player.send("create klondike 2 600")
        created = RaceId((await player.expect("created")).split()[1])
        await rival.session.join_race(created)
        await player.send("start")
        await player.expect("race started")
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
        await rival.close()
    leaving = [line for line in player.lines if line.startswith("leaving race")]
    assert len(leaving) == 2, player.output
    assert leaving[0].startswith(f"leaving race {joined} before its start: your seat is given up")
    assert leaving[1].startswith(f"leaving race {created} while it is running: you forfeit")
