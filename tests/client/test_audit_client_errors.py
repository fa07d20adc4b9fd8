"""The line mode prints a refusal no command waited for that names no race (`error: why
(code)`, as docs/client.md's table says), once, in a tournament's line mode too; a refusal a
command waited for is said by the command alone. Such a refusal was never printed."""

from __future__ import annotations

import io

from solrace.client.plain import PlainMode
from solrace.client.session import Session
from solrace.client.tournament_play import TournamentPlain
from solrace.server.protocol.messages import CreateRace
from solrace.server.protocol.tournament_messages import CheckIn
from tests.waiting import eventually

from .test_plain import Opponent


async def refused_unawaited(session: Session, out: io.StringIO, line: str) -> list[str]:
    """Wait until `line` is printed, then for one more answer of the server (anything it
    would print twice has come by then); the lines printed."""
    await eventually(lambda: line in out.getvalue().splitlines(), what=line)
    await session.list_races()
    return out.getvalue().splitlines()


async def test_the_line_mode_prints_a_refusal_that_names_no_race(server_url: str) -> None:
    player = await Opponent.open(server_url, "ria")
    out = io.StringIO()
    mode = PlainMode(player.session, out)
    try:
        # Waited for by `create`: said by it, as `refused create: ...`, and not again.
        await mode.command("create klondike 99")
        waited = out.getvalue().splitlines()
        assert len(waited) == 1 and waited[0].startswith("refused create: ")
        assert waited[0].endswith("(invalid_settings)")
        # A create nobody waits for (as one whose wait ran out) refused the same way.
        message = waited[0].removeprefix("refused create: ")
        await player.session.conn.send(CreateRace(game="klondike", seats=99, time_limit_s=60))
        lines = await refused_unawaited(player.session, out, f"error: {message}")
        assert lines == [*waited, f"error: {message}"]
    finally:
        await player.close()


async def test_the_tournament_line_mode_prints_it_once(server_url: str) -> None:
    """A check-in the tournament's line mode sends without waiting, refused."""
    player = await Opponent.open(server_url, "tia")
    out = io.StringIO()
    TournamentPlain(player.session, "tnosuch", out)
    try:
        await player.session.conn.send(CheckIn(tournament_id="tnosuch"))
        await eventually(lambda: "error:" in out.getvalue(), what="the refusal printed")
        lines = await refused_unawaited(player.session, out, out.getvalue().splitlines()[0])
    finally:
        await player.close()
    assert len(lines) == 1
    assert lines[0].startswith("error: ") and lines[0].endswith("(unknown_tournament)")
