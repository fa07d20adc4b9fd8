"""`solrace bot`'s command line: options that change nothing, or cannot be, are refused before
anything connects (exit status 2), each said."""

from __future__ import annotations

import pytest

from solrace.client.bot_cli import main as bot_main


@pytest.mark.parametrize(
    ("argv", "errors"),
    [
        # --start was ignored without --create: only a race's creator may start it.
        (
            ["--race", "r1a2b3c4d5", "--invite", "sesame", "--start"],
            [
                "--start needs --create GAME: only a race's creator may start it (the bots "
                "start the race they create)"
            ],
        ),
        (
            ["--race", "r1a2b3c4d5", "--seats", "3", "--time-limit", "60"],
            ["--seats and --time-limit go with --create GAME (the race the bots make)"],
        ),
        (
            ["--game-number", "5"],
            ["--game-number goes with --create GAME (the race the bots make)"],
        ),
        # The server refuses fewer than 2 seats: `--seats 1` was the advice for one bot.
        (
            ["--create", "klondike", "--seats", "0"],
            ["--seats 0: a race has 2 seats or more (the server refuses fewer)"],
        ),
        (
            ["--create", "klondike", "--seats", "1", "--count", "2"],
            ["--seats 1: a race has 2 seats or more (the server refuses fewer)"],
        ),
        (
            ["--count", "3", "--start", "--seats", "3"],
            [
                "--seats goes with --create GAME (the race the bots make)",
                "--start needs --create GAME: only a race's creator may start it (the bots "
                "start the race they create)",
            ],
        ),
    ],
)
def test_bot_options_that_change_nothing_or_cannot_be_are_refused(
    capsys: pytest.CaptureFixture[str], argv: list[str], errors: list[str]
) -> None:
    # No server listens there: each is refused before connecting.
    assert bot_main(["--server", "ws://127.0.0.1:9", *argv]) == 2
    said = capsys.readouterr()
    lines = said.err.strip().splitlines()
    assert all(line.startswith("solrace bot: ") for line in lines), lines
    assert [line.removeprefix("solrace bot: ") for line in lines] == errors
    assert said.out == ""
