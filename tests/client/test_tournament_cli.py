"""`solrace tournament` commands against a real server on loopback (run in this process, with
the test's own config folder): read-only commands and admin acts never take over the
connection of a player who is racing (`create` does only when `--name` is that player's),
`profile` takes a name, `create` refuses bad options in one line before connecting, a
correction keeps the race's cards unless `--cards` gives them, and the help says what each
option is."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

import pytest

from solrace.client.bot_names import held_names
from solrace.client.bots import Bot
from solrace.client.identity import admin_name, connect_player, known_players, load_identity
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tournament_cli import _run, build_parser, main, render
from solrace.server.app import App
from solrace.server.protocol.competition_records import RatingOutcome
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.ratings import build_rating_update
from solrace.server.protocol.tournament_errors import MatchId
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    TournamentList,
    TournamentSummary,
    WatchTournament,
)
from solrace.server.protocol.vocab import PhaseName
from solrace.server.tournament_live import Live
from tests.waiting import eventually, eventually_async

from .conftest import TOKEN, Opened, url_of
from .process import Child
from .test_plain import Opponent, saved_token
from .test_tournament_screen import act, create, is_view, opened_id, register


async def cli(url: str, *argv: str) -> int:
    """`solrace tournament --server URL --admin-token TOKEN ARGV...` in this process."""
    args = build_parser().parse_args(["--server", url, "--admin-token", TOKEN, *argv])
    return await _run(args)


async def player_session(url: str, name: str) -> tuple[Session, asyncio.Task[None]]:
    """A player connected as `solrace play` does: its identity saved in the config folder."""
    conn = await connect_player(url, url, name)
    conn.recv_nowait()
    session = Session(conn)
    return session, asyncio.create_task(session.pump())


async def still_connected(session: Session) -> None:
    """The session's link is the same one and answers (a 4003 would have closed it)."""
    await session.list_races()
    assert session.closed is None and session.conn.status.value == "connected"


async def test_reads_and_admin_acts_leave_a_racing_player_connected(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    alice, pump = await player_session(url, "alice")
    try:
        # `create` connects as the separate admin identity, not as alice (the last used).
        assert await cli(url, "create", "friday", "--no-check-in", "--casual") == 0
        found = re.search(r"\[(t[0-9a-f]+)\]", capsys.readouterr().out)
        assert found is not None
        tid = found[1]
        assert admin_name(url) == "alice-admin"
        await still_connected(alice)
        await alice.request(JoinTournament(tournament_id=tid), is_view(tid))
        bob = await opened.open("bob")
        await bob.request(JoinTournament(tournament_id=tid), is_view(tid))

        # An admin act: the admin token is enough, no identity is used.
        assert await cli(url, "start", tid) == 0
        await eventually(lambda: bool(alice.state.tournament_races), what="alice seated")
        notice = next(iter(alice.state.tournament_races.values()))
        await still_connected(alice)

        # Reads while alice's race is on, in another terminal with her saved identity.
        capsys.readouterr()
        for argv in (["profile"], ["profile", "alice"]):  # the saved player's, then by name
            assert await cli(url, *argv) == 0, argv
            assert capsys.readouterr().out.splitlines() == ["alice: no rated races yet"], argv
            await still_connected(alice)
        for argv in (["show", tid], ["list"]):
            assert await cli(url, *argv) == 0, argv
            await still_connected(alice)
        assert await cli(url, "leaderboard") == 0
        assert await cli(url, "admin", tid, "pause") == 0
        assert await cli(url, "resume", tid) == 0
        await still_connected(alice)
        out = capsys.readouterr().out
        assert "paused" in out
        race = alice.state.races.get(notice.race_id)
        assert race is None or all(r.state != "gone" for r in race.racers.values())
    finally:
        pump.cancel()
        await alice.conn.close()


async def test_create_named_as_a_racing_player_acts_as_that_player(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exception docs/client.md states ("Identity"): `--name` of the player itself makes
    `create` use that player's token, which closes the player's live connection (4003)."""
    url = url_of(tournament_server)
    alice, pump = await player_session(url, "alice")
    try:
        assert await cli(url, "--name", "alice", "create", "own-name", "--casual") == 0
        assert "own-name" in capsys.readouterr().out
        await eventually(lambda: alice.closed is not None, what="alice's link closed")
        assert "(4003" in (alice.closed or ""), alice.closed
        assert admin_name(url) == "alice"  # kept: the next create acts as alice too
    finally:
        pump.cancel()
        await alice.conn.close()


async def test_profile_takes_a_name_found_where_the_server_lists_names(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    director = await opened.open("director")
    tid_reply = await cli(url, "--name", "director2", "create", "names-cup", "--casual")
    assert tid_reply == 0
    found = re.search(r"\[(t[0-9a-f]+)\]", capsys.readouterr().out)
    assert found is not None
    tid = found[1]
    # bob is only in a tournament, dan only in an open race: neither is saved here.
    bob = await opened.open("bob")
    await bob.request(JoinTournament(tournament_id=tid), is_view(tid))
    dan = await opened.open("dan")
    await dan.create_race("klondike", 2, 60)
    await director.request(WatchTournament(tournament_id=tid), is_view(tid))

    assert await cli(url, "profile", "bob") == 0
    assert capsys.readouterr().out.splitlines() == ["bob: no rated races yet"]
    assert await cli(url, "profile", "dan") == 0
    assert capsys.readouterr().out.splitlines() == ["dan: no rated races yet"]
    assert await cli(url, "profile", bob.me or "") == 0  # an id still works
    assert capsys.readouterr().out.splitlines() == ["bob: no rated races yet"]

    assert await cli(url, "profile", "nobody") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown_player" in err[0] and "'nobody'" in err[0]


async def test_profile_finds_any_player_the_server_registered_by_name(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name is the server's to resolve: carl, in no race, board or tournament and not
    saved here, is found (his name in any case), and only a name nobody has is unknown."""
    url = url_of(tournament_server)
    carl = await opened.open("carl")
    await carl.conn.close()
    for asked in ("carl", "CARL"):
        assert await cli(url, "profile", asked) == 0, asked
        assert capsys.readouterr().out.splitlines() == ["carl: no rated races yet"], asked
    assert await cli(url, "profile", "carla") == 1
    said = f"unknown_player: no player named 'carla' (or with that id) on {url}"
    assert capsys.readouterr().err.strip() == f"solrace tournament: {said}"


async def test_profile_of_an_id_is_that_players_even_if_a_name_copies_it(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stored name may have the shape of a player id (a new one is refused at the hello,
    but a registered name is never taken away): mallory's name is carl's id, put in the
    store as registered. `profile <carl's id>` is carl's profile, not mallory's (the id is
    asked for first)."""
    url = url_of(tournament_server)
    carl = await opened.open("carl")
    carl_id = carl.me or ""
    await carl.conn.close()
    mallory = PlayerId("p" + "0" * 16)
    await tournament_server.store.create_player(mallory, carl_id, 1_700_000_000_000)
    assert (await tournament_server.store.get_player_by_name(carl_id)) is not None
    assert await cli(url, "profile", carl_id) == 0
    assert capsys.readouterr().out.splitlines() == ["carl: no rated races yet"]


async def test_profile_finds_a_bot_this_machine_ran_by_its_name(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bot `solrace bot` ran here, out of every race, was `no player named 'bot-1'`: its
    token is in bots.json, not among the player's identities."""
    url = url_of(tournament_server)
    [(name, held)] = held_names(url, None, 1)
    bot = Bot(url, name, make_strategy("greedy"), held=held)
    await bot.connect()
    await bot.close()
    assert await cli(url, "profile", "bot-1") == 0
    assert capsys.readouterr().out.splitlines() == ["bot-1: no rated races yet"]


async def test_profile_without_a_player_is_the_saved_one_or_a_clear_error(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    assert await cli(url, "profile") == 1
    assert "no identity saved" in capsys.readouterr().err
    conn = await connect_player(url, url, "erin")
    await conn.close()
    assert await cli(url, "profile") == 0
    assert capsys.readouterr().out.splitlines() == ["erin: no rated races yet"]


async def rated_players(app: App, count: int) -> None:
    """`count` players, r-01 first, each with a klondike rating from one rated race of them
    all, straight into the server's store."""
    players = [PlayerId(f"p{n:02d}") for n in range(1, count + 1)]
    for n, player in enumerate(players, 1):
        await app.store.create_player(player, f"r-{n:02d}", 1_000)
    update = build_rating_update(RaceId("seeded"), "klondike", [[p] for p in players], {}, 2_000)
    assert await app.store.apply_rating_update(update) is RatingOutcome.APPLIED


async def test_the_leaderboard_lists_limit_rows_and_says_when_more_are_left_out(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    await rated_players(tournament_server, 25)
    more = (
        f"more players not listed: solrace tournament --server {url} leaderboard klondike "
        "--limit 100"
    )
    cases = [([], 20, True), (["--limit", "24"], 24, True), (["--limit", "25"], 25, False)]
    for argv, rows, cut in cases:
        assert await cli(url, "leaderboard", *argv) == 0, argv
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == "klondike leaderboard", argv
        assert [line.split()[1] for line in lines[1 : rows + 1]] == [
            f"r-{n:02d}" for n in range(1, rows + 1)
        ], argv
        assert lines[rows + 1 :] == ([f"{more} lists up to 100"] if cut else []), argv


@pytest.mark.parametrize(
    ("limit", "complaint"),
    [("0", "0: must be 1 or more"), ("101", "101: at most 100"), ("ten", "'ten' is not a whole")],
)
def test_the_leaderboard_limit_is_1_to_100(
    limit: str, complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["leaderboard", "--limit", limit])
    assert stopped.value.code == 2
    assert f"argument --limit: {complaint}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        (["", "--casual"], "TITLE: a tournament's name must not be empty or only spaces"),
        (["   "], "TITLE: a tournament's name must not be empty"),
        (["x" * 65], "TITLE: at most 64 characters"),
        (["cup", "--best-of", "2"], "--best-of 2: a head-to-head match needs an odd number"),
        (["cup", "--best-of", "11"], "--best-of 11: at most 9"),
        (["cup", "--format", "heats", "--heat-size", "1"], "--heat-size 1: at least 2"),
        (["cup", "--format", "heats", "--advance", "0"], "--advance 0: at least 1"),
        (["cup", "--max-players", "1"], "--max-players 1: at least 2"),
        (["cup", "--rounds", "0", "--format", "swiss"], "--rounds 0: at least 1"),
        (["cup", "--grace", "-1"], "--grace -1: at least 0"),
    ],
)
async def test_create_refuses_bad_options_in_one_line(
    tournament_server: App,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    complaint: str,
) -> None:
    assert await cli(url_of(tournament_server), "create", *options) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("solrace tournament create: ") and complaint in lines[0]
    assert tournament_server.tournaments.live == {}  # nothing was created


async def test_heats_may_play_an_even_number_of_races(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    assert await cli(url, "create", "heats-cup", "--format", "heats", "--best-of", "2") == 0
    assert "best of 2" in capsys.readouterr().out


async def test_a_field_the_protocol_refuses_is_one_line_not_a_traceback(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    argv = ["admin", "t000000", "forfeit", "--match", "M" * 65, "--player", "p1"]
    assert await cli(url, *argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("solrace tournament: admin: match_id")


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_every_subcommand_s_help_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`solrace tournament join --help` (and check-in, play...) showed only the usage and the
    arguments: each now opens with a line that says what the command does."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) == 15  # a new command needs a description too
    for command, sub in commands.choices.items():
        assert sub.description, command
        text = help_of(capsys, command)
        assert " ".join(sub.description.split()) in text, command
    assert "Check in to a tournament you registered in" in help_of(capsys, "check-in")
    assert "Register in a tournament" in help_of(capsys, "join")


def test_the_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    play = help_of(capsys, "play")
    assert "--plain play in line mode instead of the play screen" in play
    assert "implies --play" not in play
    assert "implies --play" in help_of(capsys, "join")
    for command in ("join", "play", "check-in", "leave", "show", "watch", "start", "bots"):
        assert "tournament the tournament's id" in help_of(capsys, command), command
    bots = help_of(capsys, "bots")
    assert "--count COUNT how many bots" in bots and "--delay DELAY seconds between" in bots
    admin = help_of(capsys, "admin")
    for option in ("--match MATCH the match id", "--race N the race number", "--reason"):
        assert option in admin, option
    assert "--reason REASON why" in admin
    assert "--cards NAME=N,... cards on foundations per id or name" in admin
    assert "GAME the game (default klondike)" in help_of(capsys, "leaderboard")
    create = help_of(capsys, "create")
    for option, text in [
        ("--game GAME", "the game every race deals"),
        ("--best-of N", "races per match"),
        ("--max-players N", "registration closes at N players"),
        ("--heat-size N", "heats: players per heat race"),
        ("--third-place", "single elimination: the semi-final losers play for third place"),
    ]:
        assert f"{option} {text}" in create, option


async def test_unknown_ids_still_answer_in_one_line(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli(url_of(tournament_server), "show", "tnothere") == 1
    assert "unknown_tournament" in capsys.readouterr().err


async def test_watch_exits_once_the_tournament_has_finished(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    watching = asyncio.create_task(cli(url, "watch", tid))
    try:
        await eventually(lambda: "running" in capsys.readouterr().out, what="a running view")
        await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "bob"))
        assert await asyncio.wait_for(watching, 30) == 0
    finally:
        watching.cancel()
    # Watched after its end: the final view, then exit.
    capsys.readouterr()
    assert await asyncio.wait_for(cli(url, "watch", tid), 30) == 0
    assert "champion: ann" in capsys.readouterr().out


async def test_joining_a_finished_tournament_names_its_phase(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "bob"))
    assert await cli(url, "--name", "cat", "join", tid) == 1
    assert capsys.readouterr().err == (
        "solrace tournament: wrong_status: cannot register while the tournament is in phase "
        "finished (needs phase registration or check_in)\n"
    )


async def test_leaderboard_refuses_an_unknown_game_and_says_an_empty_one(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--server", url_of(tournament_server), "leaderboard", "nosuch"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nosuch'" in err and "klondike" in err and "colorado" in err
    assert await cli(url_of(tournament_server), "leaderboard", "colorado") == 0
    assert capsys.readouterr().out.splitlines() == ["colorado leaderboard", "no rated races yet"]


async def test_not_admin_says_where_the_token_may_be_missing(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli(server_url, "create", "cup") == 1  # a server without --admin-token
    err = capsys.readouterr().err
    assert err.startswith("solrace tournament: not_admin: ")
    assert "a server started without --admin-token has tournament administration" in err


async def created(url: str, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    """`create` through the CLI; the new tournament's id."""
    assert await cli(url, "create", "cup", *options) == 0
    found = re.search(r"\[(t[0-9a-f]+)\]", capsys.readouterr().out)
    assert found is not None
    return found[1]


@pytest.mark.parametrize("command", ["check-in", "leave", "play"])
async def test_a_registered_players_command_without_an_identity_says_so(
    tournament_server: App, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A fresh config folder: one line, and no player made up from the login name."""
    url = url_of(tournament_server)
    tid = await created(url, capsys, "--casual")
    argv = [command, tid, "--plain"] if command == "play" else [command, tid]
    assert await cli(url, *argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"solrace tournament: no saved identity for this server ({url}): join first, "
        "or pass --name\n"
    )
    # Only the admin identity `create` used is saved: no player was made.
    assert load_identity(url) is None
    assert list(known_players(url)) == [admin_name(url)]


async def test_unknown_player_names_the_player(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    tid = await created(url, capsys, "--casual")
    await register(opened, tid, ["ann"])
    assert await cli(url, "--name", "hugh", "leave", tid) == 1
    hugh = known_players(url)["hugh"]
    assert capsys.readouterr().err == (
        "solrace tournament: unknown_player: hugh is not registered in this tournament "
        f"(player id {hugh})\n"
    )
    assert await cli(url, "admin", tid, "open-check-in") == 0
    capsys.readouterr()
    assert await cli(url, "check-in", tid) == 1  # hugh is the saved identity now
    assert capsys.readouterr().err == (
        "solrace tournament: unknown_player: hugh is not registered in this tournament "
        f"(player id {hugh})\n"
    )


async def test_show_prints_the_audit_log(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every admin act, oldest first, with who did it (the creator, by name) and when."""
    url = url_of(tournament_server)
    assert await cli(url, "--name", "director", "create", "cup", "--no-check-in") == 0
    found = re.search(r"\[(t[0-9a-f]+)\]", capsys.readouterr().out)
    assert found is not None
    tid = found[1]
    await register(opened, tid, ["ann", "bob"])
    for argv in (["start"], ["pause"], ["admin", "forfeit", "--match", "W1-1", "--player", "bob"]):
        assert await cli(url, *argv[:1], tid, *argv[1:]) == 0, argv
    capsys.readouterr()
    assert await cli(url, "show", tid) == 0
    _, audit = capsys.readouterr().out.split("\n\naudit:\n")
    stamp = r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  "
    assert all(re.match(stamp, line) for line in audit.splitlines()), audit
    assert [re.sub(stamp, "", line) for line in audit.splitlines()] == [
        "director  create  single_elimination of klondike",
        "director  start  2 players",
        "director  pause",
        "director  forfeit  bob in W1-1",
    ]


async def tie_race_one(opened: Opened, admin: Session, tid: str) -> None:
    """ann and bob register in `tid`, the admin starts it, both resign race 1 of W1-1 (a tie
    at 0 cards: it is recorded, a sudden death follows)."""
    players = await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    await eventually(lambda: all(p.state.tournament_races for p in players), what="seated")
    (race_id,) = {rid for p in players for rid in p.state.tournament_races}
    await eventually(
        lambda: all(p.state.races[race_id].status == "running" for p in players),
        what="the race running",
    )
    for player in players:
        await player.resign(race_id)


async def test_a_correction_keeps_the_race_s_cards_unless_cards_are_given(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """`admin correct` changes the order; cards on foundations (they feed tie-breaks) stay as
    recorded unless `--cards NAME=N,...` gives them, and the server checks what is given."""
    url = url_of(tournament_server)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await tie_race_one(opened, admin, tid)
    ann, bob = opened_id(opened, "ann"), opened_id(opened, "bob")

    async def race_1_cards() -> dict[str, int] | None:
        """The stored cards on foundations of W1-1's race 1 (None: not recorded yet)."""
        record = await tournament_server.store.get_tournament(tid)
        assert record is not None
        live = Live.from_record(record, tournament_server.tournaments._deal)
        races = live.tournament.find_match(MatchId("W1-1"))[1].races
        return {str(p): n for p, n in races[0].cards.items()} if races else None

    async def is_recorded() -> bool:
        return await race_1_cards() is not None

    await eventually_async(is_recorded, what="race 1 recorded")
    assert await race_1_cards() == {ann: 0, bob: 0}  # a tie
    correct = ["admin", tid, "correct", "--match", "W1-1", "--race", "1", "--reason", "scorer"]
    assert await cli(url, *correct, "--placings", "bob,ann", "--cards", "ann=7,bob=3") == 0
    assert "champion: bob" in capsys.readouterr().out
    assert await race_1_cards() == {ann: 7, bob: 3}
    assert await cli(url, *correct, "--placings", "ann,bob") == 0  # the order alone
    assert "champion: ann" in capsys.readouterr().out
    assert await race_1_cards() == {ann: 7, bob: 3}  # kept

    assert await cli(url, *correct, "--placings", "ann,bob", "--cards", "ann=99") == 1
    err = capsys.readouterr().err
    assert "invalid_result: " in err and "99; a klondike game has 0 to 52" in err
    assert await race_1_cards() == {ann: 7, bob: 3}  # refused: nothing changed
    assert await cli(url, *correct, "--placings", "ann,bob", "--cards", "ann:7") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "solrace tournament admin: --cards ann:7: 'ann:7' is not NAME=N (N cards, 0 or more)"
    ]


@pytest.mark.parametrize("rated", [True, False])
async def test_a_correction_in_a_rated_tournament_says_ratings_stay(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str], rated: bool
) -> None:
    """Each race was rated once, as it ended: a correction changes the standings, and its
    output says that ratings stay as they were (a casual tournament's says nothing of it)."""
    url = url_of(tournament_server)
    kind = [] if rated else ["--casual"]
    assert await cli(url, "--name", "director", "create", "cup", "--no-check-in", *kind) == 0
    found = re.search(r"\[(t[0-9a-f]+)\]", capsys.readouterr().out)
    assert found is not None
    tid = found[1]
    watcher = await opened.open(None)
    await watcher.request(WatchTournament(tournament_id=tid), is_view(tid))
    await tie_race_one(opened, watcher, tid)

    def recorded() -> bool:
        view = watcher.state.tournaments.get(tid)
        return view is not None and any(m.races for r in view.rounds for m in r.matches)

    await eventually(recorded, what="race 1 recorded")
    correct = ["admin", tid, "correct", "--match", "W1-1", "--race", "1"]
    assert await cli(url, *correct, "--placings", "bob,ann") == 0
    out = capsys.readouterr().out
    assert "champion: bob" in out
    said = "ratings stay as the race was rated: a correction changes the tournament's result"
    assert (said in out) is rated, out


async def test_a_refused_correction_names_the_players_by_name(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server's refusal of a finishing order that is not the match's names the missing
    player as everything else does (it showed bob's player id)."""
    url = url_of(tournament_server)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await admin.request(WatchTournament(tournament_id=tid), is_view(tid))
    await tie_race_one(opened, admin, tid)
    await eventually(
        lambda: bool(admin.state.tournaments[tid].rounds[0].matches[0].races),
        what="race 1 recorded",
    )
    capsys.readouterr()
    correct = ["admin", tid, "correct", "--match", "W1-1", "--race", "1"]
    assert await cli(url, *correct, "--placings", "ann,adm-9") == 1
    assert capsys.readouterr().err == (
        "solrace tournament: invalid_result: the finishing order must list exactly the "
        "match's players; missing ['bob'], not in the match ['adm-9']\n"
    )


async def test_show_lists_the_field_list_counts_and_who_did_not_check_in(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    """A player registered but not checked in is not in the field: `show` says so apart,
    and its `players:` agree with the count `list` prints."""
    url = url_of(tournament_server)
    tid = await created(url, capsys, "--casual")
    ann, bob, _ = await register(opened, tid, ["ann", "bob", "cid"])
    assert await cli(url, "admin", tid, "open-check-in") == 0
    for player in (ann, bob):
        await player.request(CheckIn(tournament_id=tid), is_view(tid))
    assert await cli(url, "start", tid) == 0
    capsys.readouterr()
    assert await cli(url, "show", tid) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == ["players: ann, bob", "did not check in: cid"]
    assert await cli(url, "list") == 0
    assert f"{tid}  cup  single_elimination of klondike  running  2 players  round 1" in (
        capsys.readouterr().out.splitlines()
    )


def test_a_list_that_left_finished_ones_out_says_how_to_see_them() -> None:
    def summary(tid: str, phase: PhaseName) -> TournamentSummary:
        return TournamentSummary(
            tournament_id=tid,
            name="cup",
            game="klondike",
            format="swiss",
            phase=phase,
            players=4,
            round=1,
            champion=None,
        )

    page = [summary("t1", "finished"), summary("t2", "running"), summary("t3", "finished")]
    first = render(TournamentList(tournaments=page, more=7))
    assert first is not None and first.splitlines()[-1] == (
        "7 older finished tournaments not listed: solrace tournament list --skip-finished 2"
    )
    later = render(TournamentList(tournaments=[summary("t0", "finished")], more=6), 2)
    assert later is not None and later.endswith("list --skip-finished 3")
    last = render(TournamentList(tournaments=[summary("t0", "finished")]), 2)
    assert last is not None and "not listed" not in last
    assert build_parser().parse_args(["list", "--skip-finished", "3"]).skip_finished == 3


async def test_a_double_elimination_may_be_created_without_a_bracket_reset(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    url = url_of(tournament_server)
    argv = ["create", "one-final", "--format", "double_elimination", "--no-bracket-reset"]
    assert await cli(url, *argv) == 0
    capsys.readouterr()
    assert await cli(url, "create", "two-finals", "--format", "double_elimination") == 0
    resets = {
        live.name: live.tournament.settings.rules.bracket_reset
        for live in tournament_server.tournaments.live.values()
    }
    assert resets == {"one-final": False, "two-finals": True}


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["forfeit", "--match", "W1-1"], "--player"),
        (["forfeit", "--player", "ann"], "--match"),
        (["forfeit"], "--match, --player"),
        (["drop"], "--player"),
        (["drop", "--player", " "], "--player"),
        (["correct", "--match", "W1-1", "--placings", "ann,bob"], "--race"),
        (["correct", "--match", "W1-1", "--race", "1", "--placings", ","], "--placings"),
        (["correct"], "--match, --race, --placings"),
    ],
)
async def test_an_admin_act_without_what_it_needs_is_refused_before_asking(
    tournament_server: App, capsys: pytest.CaptureFixture[str], argv: list[str], missing: str
) -> None:
    """Exit 2 and one line naming the options (not the server's `forfeit needs player_id`)."""
    url = url_of(tournament_server)
    tid = await created(url, capsys, "--casual")
    assert await cli(url, "admin", tid, *argv) == 2
    captured = capsys.readouterr()
    needs = {
        "forfeit": "--match MATCH and --player NAME",
        "drop": "--player NAME",
        "correct": "--match MATCH and --race N and --placings NAMES",
    }[argv[0]]
    assert (captured.out, captured.err) == (
        "",
        f"solrace tournament admin: {argv[0]} needs {needs} (missing {missing})\n",
    )


async def test_create_grace_null_means_no_no_show_forfeit(
    tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/tournaments.md: the no-show grace is `--grace`, `null` for never (argparse refused
    'null': only an int was accepted)."""
    parser = build_parser()
    for word in ("null", "never"):
        assert parser.parse_args(["create", "cup", "--grace", word]).grace is None
    assert parser.parse_args(["create", "cup", "--grace", "30"]).grace == 30
    assert parser.parse_args(["create", "cup"]).grace == 120
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["create", "cup", "--grace", "soon"])
    assert refused.value.code == 2
    assert "--grace: 'soon' is neither seconds nor null" in capsys.readouterr().err
    assert "--grace SECONDS no-show grace, seconds (default 120; null or never: no" in (
        help_of(capsys, "create")
    )
    url = url_of(tournament_server)
    tid = await created(url, capsys, "--casual", "--grace", "null")
    assert tournament_server.tournaments.live[tid].tournament.settings.no_show_grace is None
    other = await created(url, capsys, "--casual", "--grace", "45")
    assert tournament_server.tournaments.live[other].tournament.settings.no_show_grace == 45


def test_the_common_options_come_before_or_after_the_subcommand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`solrace tournament list --server URL` was refused (`unrecognized arguments`), though
    `play` and `bot` take their options anywhere."""
    monkeypatch.setenv("SOLRACE_ADMIN_TOKEN", "from-the-environment")
    parse = build_parser().parse_args
    after = parse(["join", "t1", "--server", "ws://h:1", "--name", "ann"])
    assert (after.server, after.name) == ("ws://h:1", "ann")
    before = parse(["--server", "ws://h:1", "--admin-token", "t", "create", "cup"])
    assert (before.server, before.admin_token, before.title) == ("ws://h:1", "t", "cup")
    both = parse(["--server", "ws://h:1", "show", "t1", "--server", "ws://h:2"])
    assert both.server == "ws://h:2"  # the later one, as for any option given twice
    neither = parse(["create", "cup", "--admin-token", "t"])
    assert (neither.server, neither.name, neither.admin_token) == (
        "ws://127.0.0.1:8765",
        None,
        "t",
    )
    assert parse(["leaderboard"]).admin_token == "from-the-environment"


async def test_a_link_closed_for_good_is_said_as_what_closed_it(
    tournament_server: App, opened: Opened, tmp_path: Path
) -> None:
    """`solrace tournament check-in` whose player connects again elsewhere while it waits for
    the answer: the close is said as `play --plain` says it (it was `no answer from the
    server`, the close's meaning thrown away)."""
    url = url_of(tournament_server)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    joining = await Child.start(
        tmp_path, "tournament", "--server", url, "--name", "pat", "join", tid
    )
    try:
        assert await joining.finish(30) == 0, joining.output
    finally:
        await joining.kill()
    locks = tournament_server.tournaments._locks
    async with locks.hold(tid):  # the check-in waits for it: no answer until the close
        child = await Child.start(tmp_path, "tournament", "--server", url, "check-in", tid)
        try:
            await eventually(lambda: locks._locks[tid][1] == 2, what="the check-in waiting")
            elsewhere = await Opponent.open(url, token=saved_token(tmp_path, url))
            try:
                assert await child.finish(30) == 1, child.output
            finally:
                await elsewhere.close()
        finally:
            await child.kill()
    assert child.lines == [
        "solrace tournament: connection closed: this player connected again elsewhere (4003: "
        "connected again elsewhere); another program uses the same identity, this one stops"
    ]
