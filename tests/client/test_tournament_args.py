"""`solrace tournament`'s command line without a server: the request each command's arguments
make, and the options refused before connecting (the commands themselves, run against a real
server, are in test_tournament_cli.py)."""

from __future__ import annotations

import re

import pytest

from solrace.client.tournament_args import (
    admin_problem,
    build_parser,
    create_problem,
    parse_card_counts,
    request_of,
)
from solrace.server.protocol.messages import ClientMessage
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    GetLeaderboard,
    JoinTournament,
    LeaveTournament,
    ListTournaments,
    TournamentAdmin,
    WatchTournament,
)


def request(*argv: str) -> ClientMessage | None:
    return request_of(build_parser().parse_args(["--admin-token", "tok", *argv]))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["join", "t1"], JoinTournament(tournament_id="t1")),
        (["check-in", "t1"], CheckIn(tournament_id="t1")),
        (["leave", "t1"], LeaveTournament(tournament_id="t1")),
        (["show", "t1"], WatchTournament(tournament_id="t1")),
        (["watch", "t1"], WatchTournament(tournament_id="t1")),
        (["list", "--skip-finished", "3"], ListTournaments(skip_finished=3)),
        # One row more than shown: whether the board goes on.
        (["leaderboard", "colorado"], GetLeaderboard(game="colorado", limit=21)),
        (["leaderboard", "--limit", "5"], GetLeaderboard(game="klondike", limit=6)),
        (["leaderboard", "--limit", "100"], GetLeaderboard(game="klondike", limit=100)),
        (["pause", "t1"], TournamentAdmin(tournament_id="t1", admin_token="tok", act="pause")),
        (
            ["admin", "t1", "open-check-in"],
            TournamentAdmin(tournament_id="t1", admin_token="tok", act="open_check_in"),
        ),
        (["profile", "ann"], None),
        (["bots", "t1"], None),
        (["play", "t1"], None),
    ],
)
def test_each_command_makes_its_request(argv: list[str], expected: ClientMessage | None) -> None:
    assert request(*argv) == expected


def test_a_correction_s_placings_and_cards_become_the_request_s_fields() -> None:
    argv = ["admin", "t1", "correct", "--match", "W1-1", "--race", "2"]
    made = request(*argv, "--placings", "a,b=c", "--cards", "a=7,b=3", "--reason", "typo")
    assert made == TournamentAdmin(
        tournament_id="t1",
        admin_token="tok",
        act="correct_result",
        match_id="W1-1",
        race_number=2,
        placings=[["a"], ["b", "c"]],
        cards={"a": 7, "b": 3},
        reason="typo",
    )


def test_create_s_options_are_checked_before_connecting() -> None:
    parse = build_parser().parse_args
    assert create_problem(parse(["create", "cup", "--no-check-in"])) is None
    problem = create_problem(parse(["create", "cup", "--best-of", "2"]))
    assert problem is not None and problem.startswith("--best-of 2: ")
    assert create_problem(parse(["create", "x" * 65])) == "TITLE: at most 64 characters"


def test_an_admin_act_s_cards_must_be_name_equals_count() -> None:
    argv = ["admin", "t1", "correct", "--match", "W1-1", "--race", "1", "--placings", "a,b"]
    args = build_parser().parse_args([*argv, "--cards", "a=x"])
    assert admin_problem(args) == "--cards a=x: 'a=x' is not NAME=N (N cards, 0 or more)"
    with pytest.raises(ValueError, match="'a' is given twice"):
        parse_card_counts("a=1,a=2")


@pytest.mark.parametrize("command", ["bots", "join", "create"])
def test_name_says_whose_name_it_is(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`tournament bots --help` said its --name was "your player name": it names the bots;
    `create --help` said so too: it names the admin identity that creates."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    if command == "bots":
        assert "--name NAME the bots' name, numbered: NAME-1, NAME-2, ..." in text
        assert "your player name" not in text
    elif command == "create":
        assert "--name NAME the name of the admin identity that creates the tournament" in text
        assert "your player name" not in text
    else:
        assert "--name NAME your player name (kept with its token)" in text


def help_options(capsys: pytest.CaptureFixture[str], *argv: str) -> set[str]:
    """The options `solrace tournament ARGV --help` lists."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*argv, "--help"])
    assert stopped.value.code == 0
    return set(re.findall(r"^ {2}(--[a-z-]+)", capsys.readouterr().out, re.MULTILINE))


@pytest.mark.parametrize(
    ("argv", "name", "token"),
    [
        (["list"], False, False),
        (["show", "t1"], False, False),
        (["watch", "t1"], False, False),
        (["leaderboard"], False, False),
        (["profile"], True, False),
        (["join", "t1"], True, False),
        (["check-in", "t1"], True, False),
        (["leave", "t1"], True, False),
        (["play", "t1"], True, False),
        (["bots", "t1"], True, False),
        (["create", "cup"], True, True),
        (["admin", "t1", "pause"], False, True),
        (["start", "t1"], False, True),
        (["pause", "t1"], False, True),
        (["resume", "t1"], False, True),
    ],
)
def test_a_command_lists_and_takes_only_the_options_it_uses(
    argv: list[str], name: bool, token: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command's --help listed --admin-token, and the read-only ones --name, where
    they did nothing (and took them)."""
    listed = help_options(capsys, argv[0])
    assert "--server" in listed
    assert ("--name" in listed, "--admin-token" in listed) == (name, token)
    for option, used in (("--name", name), ("--admin-token", token)):
        given = [*argv, f"{option}=x"]
        if used:
            assert vars(build_parser().parse_args(given))[option[2:].replace("-", "_")] == "x"
            continue
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args(given)
        assert stopped.value.code == 2
        assert f"unrecognized arguments: {option}=x" in capsys.readouterr().err
    # Before the command, each is taken, as for any command.
    before = build_parser().parse_args(["--name", "ann", "--admin-token", "t", *argv])
    assert (before.name, before.admin_token) == ("ann", "t")


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["list", "--skip-finished", "-1"], "argument --skip-finished: -1: must be 0 or more"),
        (
            ["list", "--skip-finished", "2147483648"],
            "argument --skip-finished: 2147483648: at most 2147483647",
        ),
        (["admin", "t1", "correct", "--race", "0"], "argument --race: 0: must be 1 or more"),
        (
            ["admin", "t1", "correct", "--race", "99999999999"],
            "argument --race: 99999999999: at most 2147483647",
        ),
        (["admin", "t1", "correct", "--race", "x"], "argument --race: 'x' is not a whole number"),
    ],
)
def test_list_and_correction_numbers_out_of_range_are_refused_before_connecting(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`list --skip-finished -1` and `admin ... correct --race 0` connected, then said the
    request's field (`list: skip_finished: at least 0`, exit 1, or 'cannot reach' with no
    server); like `--limit` and `create`'s options, they are the command line's to refuse."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    assert complaint in capsys.readouterr().err
