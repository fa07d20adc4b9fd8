"""The line modes' words: a line read as a move (`d` in either case is a deal) and the help
text's layout (in this process, against a real server)."""

from __future__ import annotations

import io

from solrace.client.plain import PlainMode
from solrace.client.plain_words import acts_after_start, move_text

from .test_plain import Opponent


def test_d_deals_in_either_case_as_every_move_reads() -> None:
    """`Deal` and `W-T3` were moves, `d` a deal, but `D` could not be read as a move."""
    assert [move_text(line) for line in ("d", "D", "Deal", "W-T3")] == [
        "deal",
        "deal",
        "Deal",
        "W-T3",
    ]
    assert acts_after_start("D")  # typed before the start, it waits for it as `d` does


async def test_help_gives_each_command_its_own_lines(server_url: str) -> None:
    """The note on lines typed while a start is awaited stood indented under `resign`, as if
    it were part of what resign does."""
    player = await Opponent.open(server_url, "hal")
    out = io.StringIO()
    mode = PlainMode(player.session, out)
    try:
        await mode.command("help")
    finally:
        await player.close()
    lines = out.getvalue().splitlines()
    resign = next(i for i, line in enumerate(lines) if line.startswith("  resign "))
    assert lines[resign + 1].startswith("  wait "), lines
    note = next(i for i, line in enumerate(lines) if "open race's start" in line)
    assert note > next(i for i, line in enumerate(lines) if line.startswith("  quit "))
    assert not lines[note].startswith(" "), lines


async def test_a_typo_of_a_command_says_which_command_it_looks_like(server_url: str) -> None:
    """`resing` said only that it is no move (`expected 'deal', 'SRC-DST' ...`): a newcomer
    who meant `resign` was not told."""
    player = await Opponent.open(server_url, "tyra")
    out = io.StringIO()
    mode = PlainMode(player.session, out)
    try:
        for line in ("resing", "borad", "dael", "w t3", "xyzzy"):
            await mode.command(line)
    finally:
        await player.close()
    said = out.getvalue().splitlines()
    assert len(said) == 5, said
    assert all(line.startswith("cannot read move '") for line in said), said
    assert said[0].endswith("(did you mean 'resign'? type 'help')"), said
    assert said[1].endswith("(did you mean 'board'? type 'help')"), said
    assert said[2].endswith("(did you mean 'deal'? type 'help')"), said
    assert said[3].endswith("(type 'help')") and "did you mean" not in said[3], said
    assert said[4].endswith("(type 'help')") and "did you mean" not in said[4], said
