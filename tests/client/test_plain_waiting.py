"""`solrace play --plain` waiting for a start, and back in a race it is out of.

A command that waits for the start of an open race (which only a `start` or more players
will start) no longer stops the input: at a terminal, `start`, `leave`, `board` and `quit`
typed meanwhile act at once, other lines keep their place and run once the race has started;
a script (a pipe) keeps its lines in order but for a `start`, which would otherwise wait for
good. A racer back in
a race it is already out of (gone, resigned) is told so, not that its seat was kept. An error
that comes while `wait` waits for the end is printed (in this process)."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.client.connection import Connection
from solrace.client.plain import PlainMode
from solrace.client.session import Session
from solrace.server.app import App
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Watch
from tests.waiting import eventually

from .conftest import Opened, server_settings
from .process import Child
from .test_plain import Opponent

#: What a wait that never ends gets before the test says so (a line comes at once).
AT_ONCE_S = 10.0


async def start_plain(
    tmp_path: Path, url: str, name: str, *options: str, terminal: bool = False
) -> Child:
    """`solrace play --plain` as NAME; with `terminal`, typed at a terminal (not a script)."""
    return await Child.start(
        tmp_path, "play", "--plain", "--server", url, "--name", name, *options, terminal=terminal
    )


async def test_the_creator_waiting_in_an_open_race_can_still_start_it(
    server_url: str, tmp_path: Path
) -> None:
    """`board`, then `start`: `board` waited for a start only `start` could bring, and
    `start` was never read (only Ctrl-C got out)."""
    creating = ("--create", "klondike", "--seats", "3", "--time-limit", "30")
    player = await start_plain(tmp_path, server_url, "gina", *creating, terminal=True)
    try:
        race_id = (await player.expect("created")).split()[1]
        await player.send("board")
        line = await player.expect("no board yet", AT_ONCE_S)
        assert line.startswith("no board yet: the race has not started"), line
        assert "'start' starts it" in line, line
        await player.send("moves")  # waits for the start, without stopping the input
        waiting = await player.expect("waiting for the start…", AT_ONCE_S)
        assert f"race {race_id} is open, 1/3 seated" in waiting, waiting
        await player.send("start")
        await player.expect("countdown:", AT_ONCE_S)
        await player.expect("race started")
        await player.expect("legal moves:")  # the `moves` typed before the start
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()


async def test_a_script_typed_before_the_start_runs_in_order(
    server_url: str, tmp_path: Path
) -> None:
    """The whole input at once, as a pipe gives it: `moves` waits for the start that the
    `start` after it brings; what follows `start` runs after the start, in order."""
    player = await start_plain(tmp_path, server_url, "hugo")
    try:
        assert player.proc.stdin is not None
        player.proc.stdin.write(
            b"create klondike 3 20\nboard\nmoves\nstart\nmoves\nresign\nwait\nquit\n"
        )
        assert await player.finish() == 0, player.output
    finally:
        await player.kill()
    lines = player.lines

    def first(start: str) -> int:
        found = [i for i, line in enumerate(lines) if line.startswith(start)]
        assert found, f"no line starts with {start!r}:\n{player.output}"
        return found[0]

    assert first("no board yet: the race has not started") < first("waiting for the start…")
    assert first("countdown:") < first("race started") < first("legal moves:")
    assert sum(line.startswith("legal moves:") for line in lines) == 2, player.output
    assert first("legal moves:") < first("resigned from race") < first("race finished")
    assert "refused" not in player.output


async def test_a_bare_join_or_create_in_a_script_does_not_hold_back_its_start(
    server_url: str, tmp_path: Path
) -> None:
    """`join` or `create` without a word prints its usage and is about no other race: the
    `start` after it was held back all the same (as after a `join R`), so `moves`, typed
    before them, waited for good."""
    player = await start_plain(tmp_path, server_url, "hedy")
    try:
        assert player.proc.stdin is not None
        player.proc.stdin.write(b"create klondike 3 20\nmoves\njoin\ncreate\nstart\nquit\n")
        await player.expect("countdown:", AT_ONCE_S)
        assert await player.finish() == 0, player.output
    finally:
        await player.kill()
    assert any(line.startswith("legal moves:") for line in player.lines), player.output
    assert any(line.startswith("join RACE [INVITE]:") for line in player.lines), player.output


async def test_a_script_ending_in_quit_waits_for_the_start_it_does_not_bring(
    server_url: str, tmp_path: Path
) -> None:
    """A script (a pipe, not a terminal) runs its lines in order: its last `quit` came
    before the start (another player's join) and gave up every move before it."""
    creator = await start_plain(tmp_path, server_url, "kim", "--create", "klondike")
    joiner: Child | None = None
    try:
        race_id = (await creator.expect("created")).split()[1]
        assert creator.proc.stdin is not None
        creator.proc.stdin.write(b"moves\nboard\nresign\nwait\nquit\n")
        await creator.proc.stdin.drain()
        waiting = await creator.expect("waiting for the start…", AT_ONCE_S)
        # It says what a script's `quit` does here (it said "'quit' quits").
        assert waiting.endswith(
            "'start' starts it; the script's next lines run once it starts (Ctrl-C quits))"
        ), waiting
        joiner = await start_plain(tmp_path, server_url, "lou", "--race", race_id)
        await joiner.expect(f"joined race {race_id}")
        await creator.expect("resigned from race")
        await joiner.send("resign")  # the race ends: the script's `wait` returns
        assert await creator.finish() == 0, creator.output
        await joiner.finish()
    finally:
        await creator.kill()
        if joiner is not None:
            await joiner.kill()
    lines = creator.lines
    assert "quit before the start" not in creator.output and "no board yet" not in creator.output

    def first(start: str) -> int:
        found = [i for i, line in enumerate(lines) if line.startswith(start)]
        assert found, f"no line starts with {start!r}:\n{creator.output}"
        return found[0]

    assert first("race started") < first("legal moves:") < first("resigned from race")
    assert first("resigned from race") < first("race finished")


async def test_quit_typed_while_waiting_for_an_open_race_quits(
    server_url: str, tmp_path: Path
) -> None:
    player = await start_plain(tmp_path, server_url, "ivan", "--create", "klondike", terminal=True)
    try:
        race_id = (await player.expect("created")).split()[1]
        await player.send("deal")
        await player.expect("waiting for the start…", AT_ONCE_S)
        await player.send("moves")  # keeps its place, after the start: says so
        await player.expect("waiting for the start… ('moves' runs then)", AT_ONCE_S)
        await player.send("quit")
        await player.expect("quit before the start: not run: deal, moves", AT_ONCE_S)
        await player.expect(f"left race {race_id}")  # a race it created, still open
        assert await player.finish() == 0
    finally:
        await player.kill()


async def test_ctrl_d_typed_while_waiting_for_an_open_race_quits(
    server_url: str, tmp_path: Path
) -> None:
    """At a terminal the end of the input (Ctrl-D) is a `quit` typed: it waited, without a
    word, for a start nobody would bring."""
    player = await start_plain(tmp_path, server_url, "ivy", "--create", "klondike", terminal=True)
    try:
        race_id = (await player.expect("created")).split()[1]
        await player.send("deal")
        await player.expect("waiting for the start…", AT_ONCE_S)
        assert await player.finish(AT_ONCE_S) == 0  # Ctrl-D, then the rest of the output
    finally:
        await player.kill()
    done = player.lines[player.lines.index("quit before the start: not run: deal") :]
    assert f"left race {race_id}" in done, player.output  # a race it created, still open


async def test_leave_typed_while_waiting_leaves_and_ends_the_wait(
    server_url: str, tmp_path: Path
) -> None:
    player = await start_plain(tmp_path, server_url, "jo", "--create", "klondike", terminal=True)
    try:
        race_id = (await player.expect("created")).split()[1]
        await player.send("resign")  # before the start: waits for it
        await player.expect("waiting for the start…", AT_ONCE_S)
        await player.send("leave")
        await player.expect(f"left race {race_id}", AT_ONCE_S)
        await player.send("board")
        await player.expect("no current race", AT_ONCE_S)
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
    assert "refused" not in player.output and "resigned" not in player.output


# --- back in a race one is out of ------------------------------------------------------


@pytest.fixture
async def quick_grace(tmp_path: Path) -> AsyncIterator[Opened]:
    """Sessions on a server whose racers are `gone` 0.2 s after their link went away."""
    app = App(server_settings(tmp_path / "server", grace_s=0.2))
    await app.start()
    sessions = Opened(f"ws://127.0.0.1:{app.port}")
    try:
        yield sessions
    finally:
        await sessions.close()
        await app.stop()


async def running_race(hank: Session, rival: Session) -> RaceId:
    """A race of hank's that rival joined (two seats: it starts), once hank has its board."""
    race_id = await hank.create_race("klondike", 2, 300)
    mode = PlainMode(hank, io.StringIO())
    mode.race_id = race_id
    await rival.join_race(race_id)
    assert await mode.wait_start()
    return race_id


async def back_as(opened: Opened, hank: Session, active: list[RaceId]) -> Session:
    """hank connects again (its token); its welcome is taken to list `active`, as a server
    listing the races one is out of did: the client must see for itself."""
    token = hank.state.token
    assert token is not None
    conn = Connection(opened.url, token=token)
    await conn.connect()
    conn.recv_nowait()
    back = Session(conn)
    opened.items.append((back, asyncio.create_task(back.pump())))
    back.state.active_races = list(active)
    return back


async def drop(opened: Opened, session: Session) -> None:
    """The link of `session` goes away (its program killed)."""
    for item in [i for i in opened.items if i[0] is session]:
        opened.items.remove(item)
        item[1].cancel()
    await session.conn.close()


async def test_back_in_a_race_one_is_gone_from_is_not_a_seat_kept(
    quick_grace: Opened,
) -> None:
    hank = await quick_grace.open("hank")
    rival = await quick_grace.open("rival")
    race_id = await running_race(hank, rival)
    hank_id = hank.me
    assert hank_id is not None
    await drop(quick_grace, hank)
    racers = rival.state.races[race_id].racers
    await eventually(lambda: racers[hank_id].state == "gone", what="hank gone")

    back = await back_as(quick_grace, hank, [race_id])
    out = io.StringIO()
    mode = PlainMode(back, out)
    await mode.take_back_seat()
    said = out.getvalue()
    assert f"race {race_id}: you are out of it (gone)" in said, said
    assert "seat was kept" not in said and "back in race" not in said, said
    assert mode.race_id is None  # nothing resumed: the prompt, as with no race at all
    # `join` of it (or --race) says the same, and does not make it the current race.
    await mode.command(f"join {race_id}")
    assert out.getvalue().count(f"race {race_id}: you are out of it (gone)") == 2
    assert mode.race_id is None
    await mode.command("deal")
    assert out.getvalue().splitlines()[-1].startswith("no current race")


async def test_a_race_one_resigned_from_is_skipped_for_the_next_one_still_on(
    quick_grace: Opened,
) -> None:
    hank = await quick_grace.open("hank")
    rival = await quick_grace.open("rival")
    resigned = await running_race(hank, rival)
    still_on = await running_race(hank, rival)
    await hank.resign(resigned)
    await drop(quick_grace, hank)

    back = await back_as(quick_grace, hank, [resigned, still_on])  # back at once: seated
    out = io.StringIO()
    mode = PlainMode(back, out)
    await mode.take_back_seat()
    said = out.getvalue()
    assert f"race {resigned}: you are out of it (resigned)" in said, said
    assert f"back in race {resigned}" not in said, said
    assert f"back in race {still_on} (running" in said, said
    assert mode.race_id == still_on
    assert "your races in progress" not in said  # the resigned one is not offered either


async def test_an_error_that_comes_during_wait_is_printed(server_url: str) -> None:
    racer = await Opponent.open(server_url, "erin")
    out = io.StringIO()
    mode = PlainMode(racer.session, out)
    waiting: asyncio.Task[None] | None = None
    try:
        await mode.command("create klondike 2 60")
        race_id = mode.race_id
        assert race_id is not None
        waiting = asyncio.create_task(mode.command("wait"))
        await eventually(lambda: bool(racer.session._waiters), what="the wait registered")
        # An error about the race that no request of the plain mode waits for.
        await racer.session.conn.send(Watch(race_id=race_id))
        await eventually(lambda: "error:" in out.getvalue(), what="the error printed")
        assert "error: racers cannot watch their own race (not_allowed)" in out.getvalue()
        assert not waiting.done()  # still waiting for the end
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        await racer.close()


async def test_a_wait_while_still_playing_says_that_only_the_time_limit_ends_the_race(
    server_url: str,
) -> None:
    """`wait` typed while the player still plays the race waited without a word: nothing
    typed after it runs before the race ends, and with the player in it and making no move,
    only the time limit ends it. It says so; a wait once out of the race does not."""
    racer = await Opponent.open(server_url, "erin")
    olga = await Opponent.open(server_url, "olga")
    out = io.StringIO()
    mode = PlainMode(racer.session, out)
    waiting: asyncio.Task[None] | None = None
    try:
        await mode.command("create klondike 2 60")
        race_id = mode.race_id
        assert race_id is not None
        await olga.session.join_race(race_id)
        await mode.command("board")  # waits for the start
        waiting = asyncio.create_task(mode.command("wait"))
        await eventually(lambda: "still playing" in out.getvalue(), what="the wait explained")
        said = [line for line in out.getvalue().splitlines() if "still playing" in line]
        assert len(said) == 1 and said[0].startswith(
            f"waiting for race {race_id} to end: you are still playing it, so it ends at its "
            "time limit ("
        ), said
        assert said[0].endswith("s left); lines typed meanwhile run after it (Ctrl-C quits)"), said
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await mode.command("resign")
        waiting = asyncio.create_task(mode.command("wait"))
        await olga.session.resign(race_id)
        await asyncio.wait_for(waiting, AT_ONCE_S)
        assert "race finished" in out.getvalue()
        assert out.getvalue().count("still playing") == 1, out.getvalue()
    finally:
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        await racer.close()
        await olga.close()
