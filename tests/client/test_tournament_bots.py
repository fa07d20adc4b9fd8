"""`solrace tournament bots` against a real server on loopback, where it cannot join: an
unknown tournament or one that is no longer open is one line and exit status 1 (no bot made,
no old log replayed as news, no withdrawal claimed, no traceback); a join refused after that
check withdraws only the bots that did register.

The happy paths (the bots play to the champion, say what goes on, withdraw when stopped) are
in `test_tournament_play.py`."""

from __future__ import annotations

import argparse
import io
import logging
from pathlib import Path

import pytest

from solrace.client.bots import BotError
from solrace.client.tournament_bots import Progress, _play_all, make_bots, withdraw
from solrace.client.tournament_cli import build_parser
from solrace.server.app import App
from solrace.server.protocol.tournament_messages import CreateTournament, TournamentView

from .conftest import TOKEN, Opened, url_of
from .process import Child
from .test_tournament_screen import act, create, is_view, opened_id, register


async def bots_child(tmp_path: Path, app: App, tid: str) -> list[str]:
    """`solrace tournament bots TID --count 2` run to its end: every line it printed (stdout
    and stderr), once it exited with status 1."""
    child = await Child.start(
        tmp_path, "tournament", "--server", url_of(app), "bots", tid, "--count", "2"
    )
    try:
        assert await child.finish(30) == 1, child.output
    finally:
        await child.kill()
    return child.lines


async def finished_tournament(opened: Opened) -> str:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "bob"))
    return tid


async def test_bots_on_a_finished_tournament_say_so_in_one_line(
    tournament_server: App, opened: Opened, tmp_path: Path
) -> None:
    tid = await finished_tournament(opened)
    players = len(tournament_server.hub.players)
    assert await bots_child(tmp_path, tournament_server, tid) == [
        f"solrace tournament: tournament {tid} is finished: bots can only join one that is "
        "open (registration or check-in)"
    ]
    assert len(tournament_server.hub.players) <= players  # no bot connected


async def test_bots_on_a_running_tournament_say_so_in_one_line(
    tournament_server: App, opened: Opened, tmp_path: Path
) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    assert await bots_child(tmp_path, tournament_server, tid) == [
        f"solrace tournament: tournament {tid} is running: bots can only join one that is "
        "open (registration or check-in)"
    ]
    assert [p.name for p in (await act(admin, tid, "pause")).players] == ["ann", "bob"]


async def test_bots_on_an_unknown_tournament_say_so_in_one_line(
    tournament_server: App, tmp_path: Path
) -> None:
    assert await bots_child(tmp_path, tournament_server, "tnope") == [
        "solrace tournament: no tournament tnope"
    ]


def bots_args(url: str, tid: str, count: int) -> argparse.Namespace:
    return build_parser().parse_args(
        ["--server", url, "--admin-token", TOKEN, "bots", tid, "--count", str(count)]
    )


async def test_a_refused_join_replays_nothing_and_withdraws_nobody(
    tournament_server: App, opened: Opened, caplog: pytest.LogCaptureFixture
) -> None:
    """The tournament finished between the check and the joins (the bots are run past the
    check here): no old progress as news, no withdrawal line, no logged traceback."""
    tid = await finished_tournament(opened)
    bots = make_bots(bots_args(url_of(tournament_server), tid, 2))
    out = io.StringIO()
    progress = Progress(tid, bots, out)
    for bot in bots:
        bot.on_message = progress.seen
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(BotError, match="phase finished"):
            await _play_all(bots, tid)
        await withdraw(bots, progress)
    finally:
        for bot in bots:
            await bot.close()
    assert out.getvalue() == ""
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_join_refused_for_one_bot_withdraws_the_other_only(
    tournament_server: App, opened: Opened
) -> None:
    """Room for one more player, two bots: one registers, the other is refused; the run
    withdraws the one that registered and counts only it."""
    admin = await opened.open("director")
    reply = await admin.request(
        CreateTournament(
            admin_token=TOKEN,
            name="small-cup",
            game="klondike",
            format="single_elimination",
            max_players=2,
            check_in_required=False,
            rated=False,
        ),
        is_view(),
    )
    assert isinstance(reply, TournamentView)
    tid = reply.tournament.tournament_id
    await register(opened, tid, ["ann"])
    bots = make_bots(bots_args(url_of(tournament_server), tid, 2))
    out = io.StringIO()
    progress = Progress(tid, bots, out)
    for bot in bots:
        bot.on_message = progress.seen
    try:
        with pytest.raises(BotError, match="is full"):
            await _play_all(bots, tid)
        await withdraw(bots, progress)
    finally:
        for bot in bots:
            await bot.close()
    assert out.getvalue().splitlines()[-1] == (
        f"withdrew 1 of 1 bots from {tid} (it had not started)"
    )
    assert tournament_server.tournaments.live[tid].tournament.registered == [
        opened_id(opened, "ann")
    ]


async def test_a_second_run_at_once_plays_as_the_next_free_numbers() -> None:
    """A name is one program's at a time: bots made while others hold `tbot-1` and `tbot-2`
    are `tbot-3` and `tbot-4` (they were new players with random suffixes, saved nowhere)."""
    args = bots_args("ws://127.0.0.1:9", "t1", 2)
    first = make_bots(args)
    second = make_bots(args)
    try:
        assert [bot.asked for bot in [*first, *second]] == ["tbot-1", "tbot-2", "tbot-3", "tbot-4"]
        assert all(bot.held is not None for bot in [*first, *second])
    finally:
        for bot in [*first, *second]:
            await bot.close()
    again = make_bots(args)  # released: the same players again
    try:
        assert [bot.asked for bot in again] == ["tbot-1", "tbot-2"]
    finally:
        for bot in again:
            await bot.close()


async def test_a_bot_whose_name_is_taken_says_what_it_plays_as(
    tournament_server: App, opened: Opened, capsys: pytest.CaptureFixture[str]
) -> None:
    await opened.open("tbot-1")  # the name is someone else's on the server
    tid = await finished_tournament(opened)  # the bot connects, then its join is refused
    url = url_of(tournament_server)
    bots = make_bots(bots_args(url, tid, 1))
    try:
        with pytest.raises(BotError, match="phase finished"):
            await _play_all(bots, tid)
    finally:
        for bot in bots:
            await bot.close()
    name = bots[0].name
    assert name.startswith("tbot-1-")
    assert capsys.readouterr().err.splitlines() == [
        f"solrace tournament: the name 'tbot-1' is taken on {url}: this bot plays as {name!r}"
    ]
