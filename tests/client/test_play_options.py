"""`solrace play` and `solrace bot` options: one that would change nothing in the combination
given is refused before connecting (exit status 2, naming it), and `--help` says the defaults
(the server every command talks to without `--server` too)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from solrace.client import bot_args, bot_cli
from solrace.client.app import (
    PLAY_DEFAULTED,
    build_play_parser,
    build_replay_parser,
    build_watch_parser,
    play_main,
    play_problems,
)
from solrace.client.bot_args import parse_noting_defaults
from solrace.client.defaults import DEFAULT_SERVER_URL
from solrace.client.session import Session
from solrace.client.tournament_cli import build_parser as build_tournament_parser
from solrace.client.tournament_cli import main as tournament_main

from .conftest import open_session
from .process import Child

#: No server listens there: a refused option must be said before any connection is tried.
NOWHERE = "ws://127.0.0.1:9"


def play_errors(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The lines `solrace play --plain ARGV` says on stderr; it must exit with status 2."""
    assert play_main(["--plain", *argv]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    lines = said.err.strip().splitlines()
    assert all(line.startswith("solrace play: ") for line in lines), lines
    return [line.removeprefix("solrace play: ") for line in lines]


@pytest.mark.parametrize(
    ("argv", "errors"),
    [
        # Only the embedded server has a bot opponent and a data folder.
        (
            ["--server", NOWHERE, "--bot", "random", "--bot-delay", "0.2"],
            ["--bot and --bot-delay go with the embedded server: not with --server"],
        ),
        (
            ["--server", NOWHERE, "--bot-d=0.2", "--data-dir", "/tmp/x"],  # abbreviated too
            ["--bot-delay and --data-dir go with the embedded server: not with --server"],
        ),
        (
            ["--server", NOWHERE, "--bot", "greedy"],  # the default, but given
            ["--bot goes with the embedded server: not with --server"],
        ),
        (
            ["--bot", "none", "--bot-delay", "1"],
            ["--bot-delay is the bot opponent's: not with --bot none"],
        ),
        # Seats are for --create with a server; the race against the embedded bot has 2.
        (
            ["--server", NOWHERE, "--seats", "3"],
            [
                "--seats goes with --server and --create GAME (the race against the embedded "
                "bot has 2 seats)"
            ],
        ),
        (
            ["--seats", "2"],
            [
                "--seats goes with --server and --create GAME (the race against the embedded "
                "bot has 2 seats)"
            ],
        ),
        (
            ["--server", NOWHERE, "--create", "klondike", "--seats", "1"],
            ["--seats 1: a race has 2 seats or more (the server refuses fewer)"],
        ),
        # The time limit is the created race's.
        (
            ["--server", NOWHERE, "--time-limit", "60"],
            [
                "--time-limit goes with the race created at the start (--create GAME with "
                "--server, else the race against the embedded bot; not with --race)"
            ],
        ),
        (
            ["--race", "r1a2b3c4d5", "--time-limit", "60", "--rated"],
            [
                "--rated and --game-number go with the race created at the start (--create "
                "GAME with --server, else the race against the embedded bot; not with --race)",
                "--time-limit goes with the race created at the start (--create GAME with "
                "--server, else the race against the embedded bot; not with --race)",
            ],
        ),
        # An invite code joins a private race, or makes the created one private.
        (
            ["--server", NOWHERE, "--invite", "sesame"],
            [
                "--invite goes with --race RACE (the private race's code) or with --server and "
                "--create GAME (makes that race private)"
            ],
        ),
        (
            ["--invite", "sesame"],
            [
                "--invite goes with --race RACE (the private race's code) or with --server and "
                "--create GAME (makes that race private)"
            ],
        ),
        # The embedded server's race is --game's: --create GAME played klondike anyway.
        (
            ["--create", "colorado"],
            ["--create goes with --server; the embedded server's game is --game GAME"],
        ),
    ],
)
def test_play_refuses_an_option_that_changes_nothing(
    capsys: pytest.CaptureFixture[str], argv: list[str], errors: list[str]
) -> None:
    assert play_errors(capsys, *argv) == errors


@pytest.mark.parametrize(
    "argv",
    [
        ["--server", NOWHERE, "--create", "klondike", "--seats", "3", "--time-limit", "60"],
        ["--server", NOWHERE, "--create", "klondike", "--invite", "sesame", "--game-number", "5"],
        ["--server", NOWHERE, "--race", "r1a2b3c4d5", "--invite", "sesame"],
        ["--race", "r1a2b3c4d5", "--invite", "sesame", "--bot", "random", "--game", "colorado"],
        ["--game", "colorado", "--time-limit", "60", "--rated", "--bot-delay", "0.1"],
        ["--bot", "none", "--data-dir", "/tmp/x", "--game-number", "5"],
    ],
)
def test_play_takes_options_that_act(argv: list[str]) -> None:
    args, given = parse_noting_defaults(build_play_parser(), argv, PLAY_DEFAULTED)
    assert play_problems(args, given) == []


def test_play_fills_in_the_defaults_of_options_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[argparse.Namespace] = []

    async def fake_play(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    monkeypatch.setattr("solrace.client.app._play", fake_play)
    assert play_main(["--plain", "--bot", "random"]) == 0
    [args] = seen
    assert (args.seats, args.time_limit, args.bot, args.bot_delay) == (2, 600, "random", 1.5)


def help_text(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_help().split())


def test_play_help_says_the_bot_s_defaults() -> None:
    text = help_text(build_play_parser())
    assert "--bot {random,greedy,none} the embedded server's bot opponent" in text
    assert "(default greedy; not with --server)" in text
    assert "the bot opponent's seconds per move (default 1.5; not with --server)" in text


def test_bot_help_says_what_the_strategy_is_and_its_default() -> None:
    text = help_text(bot_args.build_parser())
    assert "--strategy {random,greedy} how the bots pick moves:" in text
    assert "or random (any legal move) (default greedy)" in text
    assert "--start start the race once every bot has joined (needs --create:" in text
    assert "--max-moves MAX_MOVES a bot resigns after this many moves (default 1000)" in text
    assert "bot i (0, 1, ...) picks its moves with SEED+i" in text


def test_every_help_says_what_server_it_talks_to_without_server() -> None:
    """`bot --help` said the default server; `watch`, `replay` and `tournament` did not, and
    `play` gave an example, not what it does without one (an embedded server)."""
    default = f"--server SERVER server URL (default {DEFAULT_SERVER_URL})"
    assert default in help_text(bot_args.build_parser())
    assert default in help_text(build_watch_parser())
    assert default in help_text(build_replay_parser())
    assert default in help_text(build_tournament_parser())
    play = help_text(build_play_parser())
    assert f"--server SERVER server URL, e.g. {DEFAULT_SERVER_URL} (default: none: an " in play
    assert "embedded server runs in this process, the --bot opponent in the second seat)" in play


async def test_play_creates_a_private_race_with_invite_in_line_mode(
    server_url: str, tmp_path: Path
) -> None:
    """`--create GAME --invite CODE` made the race private on the full screen, but the line
    mode dropped the code: its race was public."""
    argv = ["--plain", "--server", server_url, "--name", "host", "--create", "klondike"]
    player = await Child.start(tmp_path, "play", *argv, "--invite", "sesame")
    lister: Session | None = None
    pump = None
    try:
        line = await player.expect("created (klondike, 2 seats, 600s, casual")
        assert line.endswith(", private: invite code sesame)"), line
        race_id = line.split()[1]
        lister, pump = await open_session(server_url, "lister")
        [info] = [i for i in await lister.list_races() if i.race_id == race_id]
        assert info.private
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
        if lister is not None:
            await lister.conn.close()


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (bot_cli.main, ["--delay", "-1"], "argument --delay: -1: must be a number of seconds"),
        (bot_cli.main, ["--delay", "nan"], "argument --delay: nan: must be a number of seconds"),
        (play_main, ["--plain", "--bot-delay", "inf"], "argument --bot-delay: inf: must be a"),
        (
            tournament_main,
            ["bots", "T1", "--delay", "-0.5"],
            "argument --delay: -0.5: must be a number of seconds",
        ),
        (tournament_main, ["bots", "T1", "--count", "0"], "argument --count: 0: must be 1 or more"),
        # `solrace bot --count 0` said it otherwise ("--count must be at least 1").
        (bot_cli.main, ["--count", "0"], "argument --count: 0: must be 1 or more"),
        (bot_cli.main, ["--count", "x"], "argument --count: 'x' is not a whole number"),
        (play_main, ["--plain", "--seats", "x"], "argument --seats: 'x' is not a whole number"),
        (
            play_main,
            ["--plain", "--create", "klondike", "--game-number", "0"],
            "argument --game-number: invalid game number '0': game numbers start at 1",
        ),
        (
            bot_cli.main,
            ["--create", "klondike", "--game-number", "ms0"],
            "argument --game-number: invalid game number 'ms0': ms numbers run from ms1 to ms",
        ),
        (bot_cli.main, ["--max-moves", "-5"], "argument --max-moves: -5: must be 1 or more"),
        (bot_cli.main, ["--max-moves", "0"], "argument --max-moves: 0: must be 1 or more"),
    ],
)
def test_a_delay_below_zero_or_no_number_and_no_bots_at_all_are_refused_by_the_command_line(
    capsys: pytest.CaptureFixture[str],
    main: Callable[[list[str]], int],
    argv: list[str],
    said: str,
) -> None:
    """A negative or infinite delay between a bot's moves was taken (a bot moved at once, or
    never), `tournament bots --count 0` connected to register nobody, and a game number the
    server refuses (`invalid_game_number`, in the same words) was sent to it."""
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--server", NOWHERE])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err
