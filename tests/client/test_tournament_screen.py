"""The tournament screen driven by Textual's pilot against a real server on loopback: redrawn
on every pushed view, bracket tree or standings table, Enter on a live match watches its race.

Nobody plays: the seated players stay idle and the admin decides matches by forfeit, so every
step waits on a pushed view, never on a race's pace."""

from __future__ import annotations

from typing import Any

import pytest

from solrace.client.session import Session
from solrace.client.tournament_screen import TournamentApp, TournamentScreen
from solrace.client.tui import PlayApp
from solrace.client.watching import HELD_DEAL_PLACEHOLDER, WatchScreen
from solrace.client.widgets import BoardWidget
from solrace.server.app import App
from solrace.server.protocol.messages import ServerMessage
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    JoinTournament,
    TournamentAdmin,
    TournamentModel,
    TournamentView,
)
from tests.waiting import eventually

from .conftest import TOKEN, Opened


def is_view(tid: str | None = None) -> Any:
    def check(message: ServerMessage) -> bool:
        if not isinstance(message, TournamentView):
            return False
        return tid is None or message.tournament.tournament_id == tid

    return check


async def create(admin: Session, fmt: str) -> str:
    reply = await admin.request(
        CreateTournament(
            admin_token=TOKEN,
            name=f"{fmt}-cup",
            game="klondike",
            format=fmt,  # type: ignore[arg-type]
            time_limit_s=300,
            check_in_required=False,
            no_show_grace_s=None,
            rated=False,
        ),
        is_view(),
    )
    assert isinstance(reply, TournamentView)
    return reply.tournament.tournament_id


async def act(admin: Session, tid: str, what: str, **fields: Any) -> TournamentModel:
    message = TournamentAdmin(tournament_id=tid, admin_token=TOKEN, act=what, **fields)  # type: ignore[arg-type]
    reply = await admin.request(message, is_view(tid))
    assert isinstance(reply, TournamentView)
    return reply.tournament


async def register(opened: Opened, tid: str, names: list[str]) -> list[Session]:
    players = [await opened.open(name) for name in names]
    for player in players:
        await player.request(JoinTournament(tournament_id=tid), is_view(tid))
    return players


def tournament_screen(app: TournamentApp) -> TournamentScreen:
    screen = app.screen
    assert isinstance(screen, TournamentScreen)
    return screen


async def test_the_bracket_redraws_live_and_enter_watches_a_match(opened: Opened) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    app = TournamentApp(await opened.open(None), tid)
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = tournament_screen(app)
        await eventually(lambda: "registered: nobody yet" in screen.body_text, what="empty")
        assert "single_elimination-cup" in screen.title_text
        await register(opened, tid, ["ann", "bob", "cid", "dee"])
        await eventually(
            lambda: "registered: ann, bob, cid, dee" in screen.body_text, what="pushed joins"
        )

        await act(admin, tid, "start")
        await eventually(lambda: len(screen.live_race_ids) == 2, what="two live matches")
        tree = screen.body_text.splitlines()
        first, second = screen.live_race_ids
        assert tree == [
            "W2-1 ? vs ? [waiting]",
            "├─ W1-1 ann vs dee [playing]",  # each race is on (the view's live matches)
            "└─ W1-2 bob vs cid [playing]",
            "",
            "round 1 (under way):",
            f"  W1-1 ann vs dee: race 1 on {first}",
            f"  W1-2 bob vs cid: race 1 on {second}",
        ]
        assert "running, round 1" in screen.title_text
        assert max(len(line) for line in screen.title_text.splitlines() + tree) <= 80
        table = screen.query_one("#t-live")
        assert table.region.bottom <= 23 and table.region.right <= 80  # above the footer

        # Enter on the second live match watches its race; Esc comes back.
        await pilot.press("down", "enter")
        watched = screen.live_race_ids[1]
        await eventually(
            lambda: isinstance(app.screen, WatchScreen) and app.screen.race_id == watched,
            what="the watch screen",
        )
        # The round's matches share its deal: no board until the round ends, and it says so.
        boards = app.screen.query(BoardWidget)
        await eventually(
            lambda: len(boards.nodes) == 2 and all(b.title for b in boards.nodes),
            what="both boards",
        )
        assert {b.title for b in boards.nodes} == {"bob", "cid"}
        assert all(b.board is None for b in boards.nodes)
        await eventually(
            lambda: all(b.placeholder == HELD_DEAL_PLACEHOLDER for b in boards.nodes),
            what="the held deal said",
        )
        await pilot.press("escape")
        await eventually(lambda: app.screen is screen, what="back on the tournament")

        # Each decision the server pushes is redrawn: a forfeit, the next round, the champion.
        await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "dee"))
        await eventually(lambda: "W1-1 ann* vs dee [forfeit: dee]" in screen.body_text, what="W1-1")
        assert "  W1-1 ann vs dee: dee forfeited, winner ann" in screen.body_text
        assert screen.body_text.splitlines()[0] == "W2-1 ann vs ? [waiting]"  # ann goes through
        assert screen.live_race_ids == [watched]
        await act(admin, tid, "forfeit", match_id="W1-2", player_id=opened_id(opened, "cid"))
        await eventually(lambda: "W2-1 ann vs bob [playing]" in screen.body_text, what="final")
        assert len(screen.live_race_ids) == 1 and "round 2" in screen.title_text
        await act(admin, tid, "forfeit", match_id="W2-1", player_id=opened_id(opened, "ann"))
        await eventually(lambda: "champion: bob" in screen.title_text, what="the champion")
        assert screen.live_race_ids == [] and "finished" in screen.title_text


async def test_a_round_robin_shows_its_standings_table(opened: Opened) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "round_robin")
    app = TournamentApp(await opened.open(None), tid)
    async with app.run_test(size=(80, 24)):
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = tournament_screen(app)
        await register(opened, tid, ["eve", "fay", "gus"])
        started = await act(admin, tid, "start")
        await eventually(lambda: len(screen.live_race_ids) == 1, what="one live match, one bye")
        head = screen.body_text.splitlines()[0]
        assert head.split() == ["#", "player", "pts", "tb", "cards", "W-D-L"]
        live = started.live[0]
        await act(admin, tid, "forfeit", match_id=live.match_id, player_id=live.players[1])
        winner = next(p.name for p in started.players if p.player_id == live.players[0])

        def row_of(name: str) -> list[str]:
            lines = screen.body_text.splitlines()[2:]
            return next((line.split() for line in lines if line.split()[1] == name), [])

        await eventually(lambda: row_of(winner)[2:3] == ["1"], what="the win in the table")
        assert row_of(winner)[-1] == "1-0-0"
        assert sorted(row[2] for row in map(row_of, ("eve", "fay", "gus"))) == ["0", "1", "1"]
        await eventually(lambda: "round 2" in screen.title_text, what="the next round")


def opened_id(opened: Opened, name: str) -> str:
    player_id = next(s.state.player_id for s, _ in opened.items if s.state.name == name)
    assert player_id is not None
    return player_id


async def test_the_cli_admin_acts_take_player_names(
    opened: Opened, tournament_server: App, capsys: pytest.CaptureFixture[str]
) -> None:
    from solrace.client.tournament_cli import _run, build_parser

    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    url = f"ws://127.0.0.1:{tournament_server.port}"
    argv = ["--server", url, "--admin-token", TOKEN, "admin", tid, "forfeit", "--match", "W1-1"]
    assert await _run(build_parser().parse_args([*argv, "--player", "bob"])) == 0
    out = capsys.readouterr().out
    assert "champion: ann" in out and "W1-1 ann* vs bob [forfeit: bob]" in out


async def test_join_and_check_in_are_offered_only_while_they_can_do_something(
    opened: Opened,
) -> None:
    """A player out of a running tournament was still offered `j Join` and `c Check in`."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    joe = await opened.open("joe")
    app = PlayApp(joe, tournament_id=None)
    async with app.run_test(size=(100, 30)):
        app.open_tournament(tid)
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="the screen")
        screen = app.screen
        assert isinstance(screen, TournamentScreen)
        await eventually(lambda: tid in joe.state.tournaments, what="the view")
        assert screen.check_action("join", ()) and not screen.check_action("check_in", ())
        await register(opened, tid, ["ann", "bob", "cid"])
        # The footer is redrawn when what it offers changes, not on every view (it flickered
        # while a race of the player's ran).
        redrawn = 0

        def count() -> None:
            nonlocal redrawn
            redrawn += 1

        screen.refresh_bindings = count  # type: ignore[method-assign]
        app.play_tournament(tid)  # joe joins and plays here
        await eventually(lambda: screen.check_action("join", ()) is False, what="joined")
        await eventually(lambda: redrawn == 1, what="the footer redrawn: Join is gone")
        for _ in range(3):
            screen.update_view()
        assert redrawn == 1
        await act(admin, tid, "start")
        await eventually(lambda: joe.state.tournaments[tid].phase == "running", what="start")
        assert not screen.check_action("join", ()) and not screen.check_action("check_in", ())
