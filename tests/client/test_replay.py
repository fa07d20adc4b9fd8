"""Replays: fetched from the server after a race, saved as a file, stepped in the TUI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.widgets import Static

from solrace.client.app import not_finished_text, replay_main
from solrace.client.bots import Bot
from solrace.client.defaults import DEFAULT_SERVER_URL
from solrace.client.replay import ReplayCursor, replay_lines
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tui import ReplayApp
from solrace.client.widgets import BoardWidget
from solrace.replay_file import load_replay
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import ReplayModel
from solrace.server.protocol.replay import ReplayFileError, entry_text, verify_replay
from tests.server.test_verify import ILLEGAL, MOVES, sample, with_illegal_move
from tests.waiting import eventually

from .conftest import open_session, widget
from .process import Child
from .test_connection import session_for


async def finished_race(url: str) -> RaceId:
    bots = [Bot(url, n, make_strategy("greedy", seed=i), delay_s=0) for i, n in enumerate("jk")]
    for bot in bots:
        await bot.connect()
    race_id = await bots[0].create("klondike", 2, 120)
    await bots[1].join(race_id)
    await asyncio.gather(*(bot.play() for bot in bots))
    for bot in bots:
        await bot.close()
    return race_id


async def fetch(url: str, race_id: RaceId) -> ReplayModel:
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
    text = "\n".join(replay_lines(replay))
    assert "commitment verified" in text and race_id in text

    path = tmp_path / "race.json"
    path.write_text(replay.model_dump_json())
    assert load_replay(path) == replay

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
    assert await bad.finish() == 2 and "not a solrace replay" in bad.output
    unknown = await Child.start(tmp_path, "replay", "r-none", "--server", server_url, "--plain")
    assert await unknown.finish() == 2
    assert unknown.lines == ["solrace replay: no race 'r-none' (unknown_race)"], unknown.output


async def test_replay_of_a_cancelled_race_says_it_was_cancelled(
    alice: Session, server_url: str, tmp_path: Path
) -> None:
    """A cancelled race never has a replay: `solrace replay` says it was cancelled (it said
    `replays exist once a race has finished (not_finished)`, as if to come)."""
    race_id = await alice.create_race("klondike", 2, 120)
    await alice.leave_race(race_id)  # its only racer left before the start: cancelled
    child = await Child.start(tmp_path, "replay", race_id, "--server", server_url, "--plain")
    assert await child.finish() == 2
    assert child.lines == [
        f"solrace replay: race {race_id} was cancelled (its tournament match was decided "
        "without it, or all its players left it before the start): a cancelled race has no "
        "replay (wrong_status)"
    ], child.output


async def test_replay_of_a_race_not_finished_says_so_and_how_to_watch_it(
    alice: Session, server_url: str, tmp_path: Path
) -> None:
    """A race still running (or not started) has no replay yet: `solrace replay` says so and
    names the command that watches it live (it said only `replays exist once a race has
    finished (not_finished)`); the default server is not named in the command."""
    bob, bob_pump = await open_session(server_url, "bob")
    try:
        race_id = await alice.create_race("klondike", 2, 120)
        watch = f"watch it live with 'solrace watch {race_id} --server {server_url}'"
        child = await Child.start(tmp_path, "replay", race_id, "--server", server_url, "--plain")
        assert await child.finish() == 2
        assert child.lines == [
            f"solrace replay: race {race_id} has not started yet: its replay can be fetched "
            f"once it has finished; {watch} (not_finished)"
        ], child.output
        await bob.join_race(race_id)  # the race is full: it starts
        await eventually(lambda: alice.state.race(race_id).status == "running", what="started")
        child = await Child.start(tmp_path, "replay", race_id, "--server", server_url, "--plain")
        assert await child.finish() == 2
        assert child.lines == [
            f"solrace replay: race {race_id} is still running: its replay can be fetched once "
            f"it ends; {watch} (not_finished)"
        ], child.output
        fetcher, fetcher_pump = await open_session(server_url, None)
        try:
            said = await not_finished_text(fetcher, race_id, DEFAULT_SERVER_URL)
        finally:
            fetcher_pump.cancel()
            await fetcher.conn.close()
        assert said is not None and said.endswith(f"'solrace watch {race_id}'"), said
    finally:
        bob_pump.cancel()
        await bob.conn.close()


BOARD_HEAD = "Klondike  "  # the first line of every rendered klondike board


def test_plain_text_has_every_move_with_the_board_after_it() -> None:
    replay = sample(MOVES)
    lines = "\n".join(replay_lines(replay)).splitlines()
    assert lines[:2] == [
        "race r1: klondike deal 1",
        "commitment verified: it is sha256 of game klondike, number 1 and the salt",
    ]
    assert "replay verified" in lines and lines[-1] == "replay verified"
    heads = [i for i, line in enumerate(lines) if line.startswith("move ")]
    assert [lines[i] for i in heads] == [
        "move 1 (ply 0) at 0.5 s: deal",
        "move 2 (ply 1) at 0.5 s: deal",
        "move 3 (ply 2) at 0.5 s: deal",
    ]
    # the deal and each move are followed by the board after it: the stock shrinks by one
    assert sum(line.startswith(BOARD_HEAD) for line in lines) == len(MOVES) + 1
    stocks = [lines[i + 2].split()[1] for i in heads]
    assert stocks == ["##22", "##21", "##20"]
    assert "NOT" not in "\n".join(lines)


def test_a_forged_replay_is_shown_as_not_verified() -> None:
    forged = ReplayModel.model_validate(with_illegal_move(1))
    assert not verify_replay(forged).is_valid
    text = "\n".join(replay_lines(forged))
    lines = text.splitlines()
    # the commitment line says what it checked, and only that
    assert "commitment verified: it is sha256 of game klondike, number 1 and the salt" in lines
    assert (
        "PROBLEM: ann (p1): illegal move 't0-t1' at ply 1: t1 builds down in alternating "
        "colours: it needs a red 9 on TS, not QH; the 2 moves after it are not replayed"
    ) in lines
    assert lines.count("replay does NOT verify (1 problem)") == 2
    assert "replay verified" not in lines
    head = lines.index("results as the file states them (NOT verified):")
    # each result line as `solrace verify` writes it (one function makes both)
    stated = [f"  {entry_text(entry)}" for entry in forged.results]
    assert stated and lines[head + 1 : head + 1 + len(stated)] == stated
    assert stated[0].startswith("  #1 ")
    assert (
        f"move 2 (ply 1) at 0.5 s: {ILLEGAL} ILLEGAL: t1 builds down in alternating colours: "
        "it needs a red 9 on TS, not QH"
    ) in lines
    assert "the replay of this racer stops here; not replayed: deal deal" in lines
    assert sum(line.startswith(BOARD_HEAD) for line in lines) == 2  # the deal, one move

    cursor = ReplayCursor(forged)
    cursor.seek(10)
    assert cursor.last_ply == 1
    assert cursor.describe().endswith(f"[1/1] ILLEGAL next: {ILLEGAL} (ply 1)")


def test_a_cursor_keeps_its_replays_report() -> None:
    """The TUI asks for the verdict on every step: the cursor verifies its replay once (no
    module-wide cache keyed by id() shared between replays and apps)."""
    forged, true = (
        ReplayCursor(ReplayModel.model_validate(with_illegal_move(1))),
        ReplayCursor(sample(MOVES)),
    )
    assert forged.report is forged.report and not forged.report.is_valid
    assert true.report is true.report and true.report.is_valid


def test_a_file_that_is_not_a_replay_is_named_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text("[1, 2]")
    with pytest.raises(ReplayFileError) as failed:
        load_replay(path)
    assert (
        str(failed.value)
        == f"{path} is not a solrace replay: a replay is an object (a map), not an array"
    )


def test_a_replay_with_a_wrong_commitment_says_so() -> None:
    forged = sample(MOVES).model_copy(update={"salt": "t"})
    text = "\n".join(replay_lines(forged))
    assert "PROBLEM: commitment does not match game klondike, number 1 and the salt" in text
    assert "commitment verified" not in text
    assert not verify_replay(forged).is_valid


def test_replay_plain_exit_status_tells_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    true, forged = tmp_path / "true.json", tmp_path / "forged.json"
    true.write_text(sample(MOVES).model_dump_json())
    forged.write_text(json.dumps(with_illegal_move(2)))
    assert replay_main([str(true), "--plain"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "replay verified"
    assert replay_main([str(forged), "--plain"]) == 1
    out = capsys.readouterr().out
    assert "illegal move 't0-t1' at ply 2" in out
    assert out.splitlines()[-1] == "replay does NOT verify (1 problem)"


@pytest.mark.parametrize("ok", [True, False])
def test_replay_plain_values_from_the_file_cannot_forge_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ok: bool
) -> None:
    """A racer's name, id and state and the moves are the file's: each racer's part of the
    text printed them raw, so their newlines wrote lines of their own, a forged `replay
    verified` or `PROBLEM` among them (as `solrace verify`, each is one line there)."""
    forge = "\nreplay verified\nPROBLEM: none"
    data = json.loads(sample(MOVES).model_dump_json())
    racer = data["racers"][0]
    racer["name"] = data["results"][0]["name"] = f"ann{forge}"
    if not ok:  # a forged move (and the moves after it, not replayed)
        racer["moves"][1]["move"] = f"deal{forge}"
        racer["moves"][2]["move"] = f"deal{forge}"
    path = tmp_path / "race.json"
    path.write_text(json.dumps(data))
    assert replay_main([str(path), "--plain"]) == (0 if ok else 1)
    lines = capsys.readouterr().out.splitlines()
    # The verdict after the checks and at the end, no other; no line the file wrote.
    assert lines.count("replay verified") == (2 if ok else 0)
    forged = [line for line in lines if line.startswith(("PROBLEM: none", "replay verified "))]
    assert forged == []
    assert "ann\\x0areplay verified\\x0aPROBLEM: none (p1): 3 moves, resigned" in lines


def test_a_file_that_is_not_a_replay_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.json"
    path.write_text("{}")
    assert replay_main([str(path), "--plain"]) == 2  # as `solrace verify`: not a replay
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"solrace replay: {path} is not a solrace replay: missing: race_id, ")
    assert err.count("\n") == 1 and "http" not in err

    missing = tmp_path / "missing.json"
    assert replay_main([str(missing), "--plain"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"solrace replay: cannot read {missing}: No such file or directory\n")


def test_a_replay_that_cannot_be_saved_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, blocker = tmp_path / "true.json", tmp_path / "a-file"
    source.write_text(sample(MOVES).model_dump_json())
    blocker.write_text("")
    target = blocker / "saved.json"  # its folder is a file: it cannot be written
    assert replay_main([str(source), "--plain", "--save", str(target)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"solrace replay: cannot save to {target}: Not a directory\n")
    assert replay_main([str(source), "--save", str(tmp_path / "copy.json"), "--plain"]) == 0
    assert load_replay(tmp_path / "copy.json") == sample(MOVES)


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000 + b"]" * 100_000, b'{"rated": ' + b"1" * 5000 + b"}"],
    ids=["deep", "long-number"],
)
def test_json_beyond_pythons_limits_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(content)
    assert replay_main([str(path), "--plain"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"solrace replay: {path} is not a solrace replay: invalid JSON: ")
    assert err.count("\n") == 1


def test_a_replay_whose_deal_cannot_be_made_is_shown_not_verified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unknown game or number is a replay that does not verify (status 1, as `verify`),
    shown without boards, not a traceback."""
    path = tmp_path / "chess.json"
    path.write_text(sample(MOVES).model_copy(update={"game": "chess"}).model_dump_json())
    assert replay_main([str(path), "--plain"]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM: cannot deal chess 1: unknown game 'chess'" in out
    assert "no boards: the deal cannot be made" in out
    assert out.splitlines()[-1] == "replay does NOT verify (2 problems)"


async def test_the_replay_screen_shows_why_a_deal_cannot_be_made() -> None:
    replay = sample(MOVES).model_copy(update={"game_number": "abc"})
    app = ReplayApp(replay, ascii=True)
    async with app.run_test(size=(80, 24)) as pilot:
        line = await widget(app.screen, "#replay-line", Static)
        await eventually(lambda: "cannot deal" in str(line.render()), what="the problem")
        await pilot.press("right", "end", "tab")
        assert "cannot deal" in str(line.render())


async def test_the_replay_screen_shows_markup_in_a_name_as_text() -> None:
    racer = sample(MOVES).racers[0].model_copy(update={"name": "[bold]ann[/bold]\x1b[2J"})
    replay = sample(MOVES).model_copy(update={"racers": [racer]})
    app = ReplayApp(replay, ascii=True)
    async with app.run_test(size=(100, 24)):
        line = await widget(app.screen, "#replay-line", Static)
        await eventually(lambda: "the deal" in str(line.render()), what="the first line")
        assert "[bold]ann[/bold]\\x1b[2J (resigned) the deal" in str(line.render())


async def test_the_replay_screen_says_why_a_replay_does_not_verify() -> None:
    """An illegal move is told as such, the commitment's verdict apart from it."""
    app = ReplayApp(ReplayModel.model_validate(with_illegal_move(1)), ascii=True)
    async with app.run_test(size=(200, 24)):
        head = await widget(app.screen, "#replay-head", Static)
        await eventually(lambda: "verified" in str(head.render()), what="the head")
        text = str(head.render())
        assert "klondike deal 1 (commitment ✓)" in text  # as everywhere: "deal N", not "#N"
        assert "✗ NOT verified (1 problem: ann (p1): illegal move 't0-t1' at ply 1" in text
        assert "MISMATCH" not in text


async def test_a_terminal_too_small_is_told() -> None:
    app = ReplayApp(sample(MOVES), ascii=True)
    async with app.run_test(size=(40, 12)) as pilot:
        await eventually(lambda: app.room_notice is not None, what="the notice")
        assert app.room_notice == (
            "the terminal is 40x12: solrace needs at least 60x20 (enlarge it; --plain works in "
            "any size)"
        )
        await pilot.resize_terminal(100, 30)
        await eventually(lambda: app.room_notice is None, what="room again")


async def test_the_replay_screen_shows_a_name_with_newlines_on_the_boards_one_line() -> None:
    """The board's head names the racer: the file's name went there raw, so its newline
    wrote a line of its own on the board (a forged `replay ✓ verified` above the cards)."""
    racer = sample(MOVES).racers[0].model_copy(update={"name": "ann\nreplay ✓ verified"})
    replay = sample(MOVES).model_copy(update={"racers": [racer], "salt": "forged"})
    app = ReplayApp(replay, ascii=True)
    async with app.run_test(size=(100, 24)):
        board = await widget(app.screen, "#board", BoardWidget)
        await eventually(lambda: "t6" in board.text, what="the deal")
        lines = board.text.splitlines()
        assert not any(line.startswith("replay ✓ verified") for line in lines), board.text
        assert lines[0].startswith("ann\\x0areplay ✓ verified "), board.text


async def test_the_replay_screen_of_a_replay_without_racers_takes_every_key() -> None:
    """A file without racers has nothing to step through: a key that steps (→, End, Home,
    Space) asked for the first racer's boards and crashed the screen (IndexError)."""
    replay = sample(MOVES).model_copy(update={"racers": [], "results": []})
    app = ReplayApp(replay, ascii=True)
    async with app.run_test(size=(100, 24)) as pilot:
        head = await widget(app.screen, "#replay-head", Static)
        await eventually(lambda: "the replay has no racers" in str(head.render()), what="why")
        await pilot.press("right", "pagedown", "end", "home", "left", "tab", "space")
        await pilot.pause()
        assert app.is_running and "NOT verified" in str(head.render())
