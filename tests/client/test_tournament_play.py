"""A person plays tournament races against a bot, on a real server on loopback: in line mode
through a child process (`solrace tournament join ID --plain`) and on the play screen driven by
Textual's pilot; and `solrace tournament bots` exits with the champion after reconnects.

The person's moves come from the deal the server drew (read from the in-process server), so
the person surely puts a card on a foundation; the bot resigns at once (no moves allowed), so
the person wins the race, the match and the tournament."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.pilot import Pilot

from solrace.client.bots import Bot
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.race_screen import RaceScreen
from solrace.client.result_screen import ResultScreen
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.client.tournament_bots import play_tournament
from solrace.client.tournament_lobby import TournamentListScreen
from solrace.client.tournament_screen import TournamentScreen
from solrace.client.tui import PlayApp
from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    CreateTournament,
    TournamentView,
    WatchTournament,
)
from tests.integration.solver import scoring_line
from tests.waiting import eventually

from .conftest import TOKEN, Opened, keys_reach, url_of
from .process import Child, FullTerminal
from .test_plain import ends_when_connected_elsewhere
from .test_tournament_screen import act, create, is_view, opened_id, register


@pytest.fixture
async def server(tournament_server: App) -> App:
    """The tournament tests' server, on a known deal on which `scoring_line` scores."""
    tournament_server.tournaments.rng = random.Random(4)
    return tournament_server


@pytest.fixture
async def opened(server: App) -> AsyncIterator[Opened]:
    """The tournament tests' sessions, on the server with its known deal."""
    sessions = Opened(url_of(server))
    yield sessions
    await sessions.close()


async def watching(admin: Session, tid: str) -> None:
    await admin.request(WatchTournament(tournament_id=tid), is_view(tid))


async def pat_joined(opened: Opened, url: str, tmp_path: Path) -> tuple[Session, str]:
    """A director's single elimination, watched, that `pat` joined with
    `solrace tournament join`: the director's session and the tournament's id."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    joining = await Child.start(
        tmp_path, "tournament", "--server", url, "--name", "pat", "join", tid
    )
    try:
        assert await joining.finish(30) == 0, joining.output
    finally:
        await joining.kill()
    return admin, tid


def registered(admin: Session, tid: str) -> int:
    view = admin.state.tournaments.get(tid)
    return 0 if view is None else len(view.players)


def resigning_bot(app: App) -> Bot:
    return Bot(url_of(app), "rob", make_strategy("greedy", max_moves=0), delay_s=0.0)


def played(session: Session, race_id: RaceId) -> int:
    return session.state.races[race_id].plies[PlayerId(session.me or "")]


def at_ply(session: Session, race_id: RaceId, ply: int) -> Callable[[], bool]:
    return lambda: played(session, race_id) == ply


def deal_of(app: App, race_id: RaceId) -> str:
    return app.hub.races[race_id].race.record.game_number


async def tournament_list(app: PlayApp, pilot: Pilot[None]) -> TournamentListScreen:
    """From the lobby, the tournament list (Ctrl+T) once it is on screen."""
    await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
    await pilot.press("ctrl+t")
    await eventually(lambda: isinstance(app.screen, TournamentListScreen), what="list")
    listing = app.screen
    assert isinstance(listing, TournamentListScreen)
    return listing


async def join_on_screen(app: PlayApp, pilot: Pilot[None]) -> TournamentScreen:
    """The app opens on the tournament's screen, which offers `j`: press it (join)."""
    await eventually(lambda: isinstance(app.screen, TournamentScreen), what="screen")
    screen = app.screen
    assert isinstance(screen, TournamentScreen)
    await eventually(lambda: "j joins" in screen.title_text, what="the join hint")
    await pilot.press("j")
    return screen


async def seated_race(app: PlayApp, session: Session) -> RaceId:
    """The race screen the server's seating opened by itself, once its deal is drawn and keys
    reach it."""
    await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
    race = app.screen
    assert isinstance(race, RaceScreen)
    race_id = race.race_id
    await eventually(lambda: session.state.my_board(race_id) is not None, what="the deal")
    await keys_reach(race)
    return race_id


async def play_scoring_line(
    pilot: Pilot[None], server: App, session: Session, race_id: RaceId
) -> None:
    """Key in the moves that put a card on a foundation, each acknowledged before the next."""
    for move in scoring_line("klondike", deal_of(server, race_id)):
        after = played(session, race_id) + 1
        if move == "deal":
            await pilot.press("d")
        else:
            await pilot.press("colon", *move, "enter")
        await eventually(at_ply(session, race_id, after), what=move)


async def best_of_n(admin: Session, best_of: int) -> str:
    """A casual single elimination whose matches are best of `best_of` races: its id."""
    request = CreateTournament(
        admin_token=TOKEN,
        name="best-of-cup",
        game="klondike",
        format="single_elimination",
        best_of=best_of,
        time_limit_s=300,
        check_in_required=False,
        no_show_grace_s=None,
        rated=False,
    )
    reply = await admin.request(request, is_view())
    assert isinstance(reply, TournamentView)
    return reply.tournament.tournament_id


@dataclass
class PlainRace:
    """A person in the tournament line mode (a child process) and its first race's notice,
    against a bot that resigns; `run` is the bot's play of the tournament."""

    player: Child
    line: str
    run: asyncio.Task[object]
    #: The director's session and the tournament's id, for admin acts.
    admin: Session
    tid: str

    @property
    def race_id(self) -> RaceId:
        return RaceId(self.line.split()[2].rstrip(":"))


@contextlib.asynccontextmanager
async def plain_tournament_race(
    server: App,
    opened: Opened,
    tmp_path: Path,
    name: str,
    typed_first: tuple[str, ...] = (),
    best_of: int = 1,
) -> AsyncIterator[PlainRace]:
    """`name` joins a single elimination (its match `best_of` races) with `tournament join ID
    --plain`, a bot joins, the director starts it: yields once the line mode has said the
    first race (everything stopped at the end). `typed_first`: lines piped before the start,
    then the end of the input."""
    admin = await opened.open("director")
    tid = (
        await create(admin, "single_elimination")
        if best_of == 1
        else await best_of_n(admin, best_of)
    )
    await watching(admin, tid)
    argv = ["--server", url_of(server), "--name", name, "join", tid, "--plain"]
    player = await Child.start(tmp_path, "tournament", *argv)
    bot = resigning_bot(server)
    run: asyncio.Task[object] | None = None
    try:
        # Only `name` has registered yet (the bot joins below): one player, singular.
        assert await player.expect("tournament registration") == "tournament registration: 1 player"
        if typed_first:
            for line in typed_first:
                await player.send(line)
            assert player.proc.stdin is not None
            player.proc.stdin.close()
        await bot.connect()
        run = asyncio.create_task(play_tournament(bot, tid))
        await eventually(lambda: registered(admin, tid) == 2, what="both registered")
        await act(admin, tid, "start")
        yield PlainRace(player, await player.expect("tournament race "), run, admin, tid)
    finally:
        await player.kill()
        if run is not None:
            run.cancel()
        await bot.close()


async def test_a_person_plays_a_tournament_race_in_plain_mode(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    async with plain_tournament_race(server, opened, tmp_path, "pat") as race:
        player, race_id = race.player, race.race_id
        assert "match W1-1, round 1, race 1: " in race.line
        for move in scoring_line("klondike", deal_of(server, race_id)):
            await player.send(move)
            await player.expect(f"ok {move}")
        await player.send("resign")
        await player.expect("resigned")
        await player.expect("race finished")
        await player.expect("1. pat")
        assert await player.expect("commitment verified") == (
            f"round 1, match W1-1, race 1 ({race_id}): deal klondike "
            f"{deal_of(server, race_id)}: commitment verified"
        )
        await player.expect("tournament finished: champion pat")
        # It ends by itself with the tournament (its input is still open).
        assert await asyncio.wait_for(player.proc.wait(), 30) == 0
        assert await player.finish() == 0
        assert "W1-1 pat* vs rob [played]" in player.output
        final = await asyncio.wait_for(race.run, 30)
        assert getattr(final, "champion", None) is not None


async def test_moves_piped_before_the_tournament_race_wait_for_it(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`printf 'start\\ndeal\\nmoves\\n' | solrace tournament join T --plain`: moves read
    before the race is seated wait for it, as plain mode's wait for a start (each was answered
    `no current race: create or join one` and dropped, and the race ran on without the
    player); `start`, which nobody gives in a tournament, says what to do instead."""
    typed_first = ("start", "deal", "moves")
    async with plain_tournament_race(server, opened, tmp_path, "pia", typed_first) as race:
        player = race.player
        await player.expect("ok deal")
        await player.expect("legal moves: ")
        assert "no tournament race yet: 'next' waits for it" in player.output
        assert "waiting for your tournament race… ('deal' runs then)" in player.output
        assert "no current race" not in player.output, player.output


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
async def test_a_stop_in_a_tournament_race_in_plain_mode_says_the_forfeit(
    server: App, opened: Opened, tmp_path: Path, signum: signal.Signals
) -> None:
    """The tournament's line mode is `play --plain`'s: Ctrl-C, a kill or a closed terminal
    during a race says what becomes of it before the program ends (a player would forfeit
    the match without a word; SIGTERM and SIGHUP ended it at once)."""
    async with plain_tournament_race(server, opened, tmp_path, "kit") as race:
        player = race.player
        await player.send("deal")
        await player.expect("ok deal")
        player.proc.send_signal(signum)
        line = await player.expect("forfeit")
        assert line.startswith(f"leaving race {race.race_id} while it is running: you forfeit")
        assert await player.finish() == 128 + signum


async def test_quit_ends_a_next_that_waits_for_the_start(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """At a terminal, `next` before the start waits for the first round (hours, maybe): a
    `quit` typed meanwhile was not read until it came (only Ctrl-C got out). It says what it
    leaves undone, as `play --plain`'s quit before a start does, and that the player is still
    registered (nothing said so: a player who just went away was a no-show later)."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    argv = ["--server", url_of(server), "--name", "nell", "join", tid, "--plain"]
    player = await Child.start(tmp_path, "tournament", *argv, terminal=True)
    try:
        await player.expect("tournament registration")
        await player.send("next")
        await player.send("deal")  # waits its turn, after `next`
        await player.send("quit")
        line = await player.expect("quit before")
        assert line == "quit before your tournament race: not run: next, deal"
        line = await player.expect("still registered")
        assert line == (
            f"you are still registered in {tid}: 'solrace tournament --server {url_of(server)} "
            f"leave {tid}' withdraws before the start"
        )
        assert await player.finish() == 0, player.output
    finally:
        await player.kill()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_a_stop_before_the_start_says_the_player_is_still_registered(
    server: App, opened: Opened, tmp_path: Path, signum: signal.Signals
) -> None:
    """`quit` said that the player is still registered and how to withdraw; Ctrl-C and a kill,
    which do what `quit` does, ended without a word of it."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    argv = ["--server", url_of(server), "--name", "sid", "join", tid, "--plain"]
    player = await Child.start(tmp_path, "tournament", *argv)
    try:
        await player.expect("tournament registration")
        player.proc.send_signal(signum)
        assert await player.finish() == 128 + signum
    finally:
        await player.kill()
    still = (
        f"you are still registered in {tid}: "
        f"'solrace tournament --server {url_of(server)} leave {tid}' withdraws"
    )
    assert sum(line.startswith(still) for line in player.lines) == 1, player.output


async def test_quitting_the_play_screen_says_the_player_is_still_registered(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`join T --play` quit with Ctrl+Q before the start: the line mode says the player is
    still registered and how to withdraw; the play screen ended without a word of it."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    argv = ["--server", url_of(server), "--name", "tia", "join", tid, "--play"]
    player = await FullTerminal.start(tmp_path, "tournament", *argv)
    try:
        await player.expect(b"registered")  # the play screen is on: `you: registered`
        player.type(b"\x11")  # Ctrl+Q
        assert await player.finish() == 0
    finally:
        await player.kill()
    still = (
        f"solrace tournament: you are still registered in {tid}: 'solrace tournament "
        f"--server {url_of(server)} leave {tid}' withdraws before the start"
    )
    assert still.encode() in player.output, player.output[-500:]


async def test_quitting_the_play_screen_of_a_tournament_one_is_not_in_says_nothing_of_it(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`tournament play T` by someone not registered in it (the screen says `you: not
    registered`) said on quitting that they were still registered and how to withdraw."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    argv = ["--server", url_of(server), "--name", "uma", "play", tid]
    player = await FullTerminal.start(tmp_path, "tournament", *argv)
    try:
        await player.expect(b"you: not registered")
        player.type(b"\x11")  # Ctrl+Q
        assert await player.finish() == 0
    finally:
        await player.kill()
    assert b"still registered" not in player.output, player.output[-500:]
    assert b"still playing" not in player.output, player.output[-500:]


async def test_what_only_reads_runs_at_once_while_a_move_waits_for_the_race(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """At a terminal, `show`, `list` and `help` typed while a move waits for the tournament's
    race run at once, as plain mode's `board`, `list` and `help` while a move waits for a
    start (they waited behind the move: until the tournament started, hours maybe); another
    move says that it waits its turn."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    argv = ["--server", url_of(server), "--name", "rhea", "join", tid, "--plain"]
    player = await Child.start(tmp_path, "tournament", *argv, terminal=True)
    try:
        await player.expect("tournament registration")
        await player.send("deal")
        await player.expect("waiting for your tournament race… ('deal' runs then)")
        await player.send("moves")
        await player.expect("waiting for your tournament race… ('moves' runs then)")
        await player.send("show")
        await player.expect("players: rhea")
        await player.send("list")
        await player.expect("no live races")
        await player.send("help")
        await player.expect("tournament commands:")
        said = await player.expect("works on the current race:")  # named 'moves' twice
        assert said.endswith("works on the current race: a move, board, moves,"), said
        await player.send("quit")
        line = await player.expect("quit before")
        assert line == "quit before your tournament race: not run: deal, moves"
        assert await player.finish() == 0, player.output
    finally:
        await player.kill()


async def test_a_move_typed_between_races_waits_for_the_next_race(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """A best of 3: a move typed once the player is out of race 1 (it resigned) and before
    race 2 comes (the director paused the tournament: no race is asked for) waits for race 2,
    as one typed before race 1 waits for it (only the first race waited: the move went to the
    race just played, was refused and dropped). A `resign` still acts on race 1."""
    async with plain_tournament_race(server, opened, tmp_path, "bea", best_of=3) as race:
        player, first = race.player, race.race_id
        await act(race.admin, race.tid, "pause")
        for move in scoring_line("klondike", deal_of(server, first)):
            await player.send(move)
            await player.expect(f"ok {move}")
        await player.send("resign")
        await player.expect(f"resigned from race {first}")
        await player.expect("race finished")
        # A resign typed now means the race just over, surely not the next: refused.
        await player.send("resign")
        assert (await player.expect("refused")).startswith("refused resign: ")
        await player.send("deal")  # for race 2, which comes once the tournament resumes
        await player.expect("waiting for your tournament race… ('deal' runs then)")
        await act(race.admin, race.tid, "resume")
        second = await player.expect("tournament race ")
        assert "match W1-1, round 1, race 2: " in second
        await player.expect("ok deal")
        assert "refused deal" not in player.output, player.output


async def test_a_player_out_of_a_running_tournament_is_told_and_next_does_not_wait(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """Out in round 1 (here a forfeit) while the tournament plays on, the line mode said
    nothing of it, and `next` (or a move) waited for a race until the tournament's end. (The
    server's standings say who is out once the round has ended.)"""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    argv = ["--server", url_of(server), "--name", "ozzy", "join", tid, "--plain"]
    player = await Child.start(tmp_path, "tournament", *argv, terminal=True)
    try:
        await player.expect("tournament registration")
        await register(opened, tid, ["ann", "bob", "cid"])  # they never move: their race goes on
        await eventually(lambda: registered(admin, tid) == 4, what="four registered")
        view = await act(admin, tid, "start")
        ozzy = next(p.player_id for p in view.players if p.name == "ozzy")
        line = await player.expect("tournament race ")
        match_id = line.split("match ")[1].split(",")[0]
        view = await act(admin, tid, "forfeit", match_id=match_id, player_id=ozzy)
        # The other match ends too (a forfeit): round 1 ends, and round 2 is under way.
        [other] = [m for m in view.rounds[-1].matches if m.match_id != match_id]
        await act(admin, tid, "forfeit", match_id=other.match_id, player_id=other.players[0])
        said = await player.expect("you are out of")
        assert said == (
            f"you are out of {tid} (eliminated): no race of it comes for you now; this follows "
            "it to its end ('show' prints it, 'quit' leaves)"
        )
        await player.send("next")
        await player.expect("no next race: you are out of the tournament (eliminated)")
        await player.send("deal")
        await player.expect("you are out of the tournament (eliminated): 'deal' not run")
        await player.send("quit")
        assert await player.finish() == 0, player.output
    finally:
        await player.kill()


async def test_a_script_s_quit_waits_for_the_moves_before_it(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`printf 'deal\nresign\nquit\n' | solrace tournament join T --plain` before the start:
    the script's `quit` waits its turn, as in `play --plain` (piped at once, it was taken for
    one typed while the moves waited: the program ended before the tournament started, the
    moves dropped without a word and the player left registered, a no-show later)."""
    typed_first = ("deal", "resign", "quit")
    async with plain_tournament_race(server, opened, tmp_path, "sid", typed_first) as race:
        player = race.player
        await player.expect("ok deal")
        await player.expect(f"resigned from race {race.race_id}")
        assert await asyncio.wait_for(player.proc.wait(), 30) == 0
        assert await player.finish() == 0
        assert "not run" not in player.output, player.output


async def test_quit_in_a_tournament_race_in_plain_mode_says_the_forfeit(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`quit` says what a stop signal says (it ended the program without a word), and how
    to come back: the tournament's command, not `play`'s `join R (or --race R)`."""
    async with plain_tournament_race(server, opened, tmp_path, "quin") as race:
        player = race.player
        await player.send("quit")
        line = await player.expect("forfeit")
        assert line.startswith(f"leaving race {race.race_id} while it is running: you forfeit")
        back = f"solrace tournament --server {url_of(server)} play {race.tid}"
        assert line.endswith(f"unless you come back with '{back}'")
        assert await player.finish() == 0


async def test_a_person_plays_a_tournament_race_on_the_play_screen(
    server: App, opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PlayApp, "RESULT_PAUSE_S", 0.2)
    results_shown: list[ResultScreen] = []  # the result is on screen briefly: record it
    mounted = ResultScreen.on_mount

    def record(screen: ResultScreen) -> None:
        mounted(screen)
        results_shown.append(screen)

    monkeypatch.setattr(ResultScreen, "on_mount", record)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    pat = await opened.open("pat")
    bot = resigning_bot(server)
    await bot.connect()
    run: asyncio.Task[object] | None = None
    app = PlayApp(pat, tournament_id=tid)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await join_on_screen(app, pilot)
            run = asyncio.create_task(play_tournament(bot, tid))
            await eventually(lambda: registered(admin, tid) == 2, what="both registered")
            await eventually(lambda: "you: registered" in screen.title_text, what="registered")
            await act(admin, tid, "start")

            # The server seats pat: the race screen opens by itself.
            race_id = await seated_race(app, pat)
            await play_scoring_line(pilot, server, pat, race_id)
            await pilot.press("x", "x")
            await eventually(lambda: bool(results_shown), what="the result")
            result = results_shown[0]
            assert result.race_id == race_id and result.tournament_id == tid
            results = pat.state.races[race_id].results or []
            assert [e.name for e in results][:1] == ["pat"]

            # Then the tournament comes back, decided.
            await eventually(lambda: app.screen is screen, what="back on the tournament")
            await eventually(lambda: "champion: pat" in screen.title_text, what="champion")
            assert "you: champion!" in screen.title_text
            assert "W1-1 pat* vs rob [played]" in screen.body_text
        if run is not None:
            await asyncio.wait_for(run, 30)
    finally:
        if run is not None:
            run.cancel()
        await bot.close()


async def test_the_result_screen_checks_the_held_deal_once_the_round_ends(
    server: App, opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four players: pat (on the play screen) wins a race while the round's other match still
    races on the same deal, so the result says the deal is held. The admin pauses (no next
    round opens over the result) and decides the other match: the round ends, and the result
    screen fetches the released deal and shows it checked against the start's commitment."""
    monkeypatch.setattr(PlayApp, "RESULT_PAUSE_S", 600.0)  # the result stays on screen
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    pat = await opened.open("pat")
    app = PlayApp(pat, tournament_id=tid)
    async with app.run_test(size=(100, 30)) as pilot:
        await join_on_screen(app, pilot)
        others = {s.me: s for s in await register(opened, tid, ["rob", "ida", "ivy"])}
        await eventually(lambda: registered(admin, tid) == 4, what="all registered")
        await act(admin, tid, "start")

        race_id = await seated_race(app, pat)
        notice = pat.state.tournament_races[race_id]
        (rival,) = [others[p] for p in notice.players if p != pat.me]
        await play_scoring_line(pilot, server, pat, race_id)
        await rival.resign(race_id)
        await pilot.press("x", "x")

        # pat won the race; the other match of round 1 races on: the deal is held.
        await eventually(lambda: isinstance(app.screen, ResultScreen), what="the result")
        result = app.screen
        assert isinstance(result, ResultScreen) and result.race_id == race_id
        await eventually(lambda: "deal held until" in result.reveal_text, what="held")
        race = pat.state.races[race_id]
        assert race.deal_held and race.game_number is None
        assert [e.name for e in race.results or []][:1] == ["pat"]

        # The admin decides the other match: round 1 ends, its deal is released.
        view = await act(admin, tid, "pause")
        (other,) = [live for live in view.live if pat.me not in live.players]
        await act(admin, tid, "forfeit", match_id=other.match_id, player_id=other.players[0])
        await eventually(lambda: "verified" in result.reveal_text, what="the deal checked")
        number = deal_of(server, race_id)
        assert f"deal klondike {number} (the round's deal): commitment " in result.reveal_text
        assert "✓ verified" in result.reveal_text
        assert app.screen is result  # still on screen: the paused tournament opens no race
        assert race.commitment_ok is True and not race.deal_held
        assert race.commitment == server.hub.races[race_id].race.record.commitment
        assert pat.state.tournaments[tid].rounds[0].is_ended


async def test_a_pushed_race_opens_from_the_lobby_and_ctrl_t_lists_tournaments(
    server: App, opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(PlayApp, "RESULT_PAUSE_S", 0.2)
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    pat = await opened.open("pat")
    bot = resigning_bot(server)
    await bot.connect()
    run: asyncio.Task[object] | None = None
    app = PlayApp(pat)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            listing = await tournament_list(app, pilot)
            await eventually(lambda: [t.tournament_id for t in listing.summaries] == [tid])
            await pilot.press("j")  # joins the highlighted tournament and opens its screen
            await eventually(lambda: isinstance(app.screen, TournamentScreen), what="screen")
            run = asyncio.create_task(play_tournament(bot, tid))
            await eventually(lambda: registered(admin, tid) == 2, what="both registered")
            await act(admin, tid, "start")
            race_id = await seated_race(app, pat)
            assert pat.state.races_to_play(tid) == [race_id]
            # Resigning at once (the bot did too) ends the race in a tie with no card out: the
            # match goes on with a sudden-death race, which opens by itself.
            await pilot.press("x", "x")
            await eventually(
                lambda: isinstance(app.screen, RaceScreen) and app.screen.race_id != race_id,
                what="the sudden-death race opens by itself",
            )
    finally:
        if run is not None:
            run.cancel()
        await bot.close()


async def test_the_tournament_list_names_the_champion(opened: Opened) -> None:
    from textual.widgets import DataTable

    from .test_tournament_screen import opened_id

    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")
    await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "bob"))
    app = PlayApp(await opened.open("ivy"))  # has never seen the tournament's view
    async with app.run_test(size=(100, 30)) as pilot:
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        await pilot.press("ctrl+t")
        await eventually(lambda: isinstance(app.screen, TournamentListScreen), what="list")
        table = app.screen.query_one("#tournaments", DataTable)
        await eventually(
            lambda: tid in {k.value for k in table.rows} and str(table.get_row(tid)[-1]) == "ann",
            what="the champion's name",
        )


async def test_an_empty_tournament_list_says_there_is_none_yet(opened: Opened) -> None:
    """A server with no tournament showed an empty table and nothing more."""
    from textual.widgets import DataTable, Static

    app = PlayApp(await opened.open("pat"))
    async with app.run_test(size=(100, 30)) as pilot:
        listing = await tournament_list(app, pilot)
        head = listing.query_one("#t-head", Static)
        none = "no tournament yet: an admin makes one with 'solrace tournament create'"
        await eventually(lambda: none in str(head.render()), what="none said")
        tid = await create(await opened.open("director"), "swiss")
        await pilot.press("f5")
        table = listing.query_one("#tournaments", DataTable)
        await eventually(lambda: tid in {k.value for k in table.rows}, what="listed")
        assert none not in str(head.render())


async def test_the_tournament_list_is_asked_again_when_back_and_f5_keeps_the_highlight(
    opened: Opened,
) -> None:
    """The list was asked once, when first shown: back from a tournament joined there, its
    count of players was stale. And F5 put the cursor back on the first row."""
    from textual.widgets import DataTable

    admin = await opened.open("director")
    for _ in range(2):
        await create(admin, "single_elimination")
    app = PlayApp(await opened.open("pat"))
    async with app.run_test(size=(100, 30)) as pilot:
        listing = await tournament_list(app, pilot)
        table = listing.query_one("#tournaments", DataTable)
        await eventually(lambda: table.row_count == 2, what="both tournaments listed")

        def players(tid: str) -> str:
            return str(table.get_row(tid)[5])

        await pilot.press("down")
        tid = listing.selected()
        assert tid is not None and table.cursor_row == 1 and players(tid) == "0"
        await pilot.press("j")  # joins it and opens its screen
        await eventually(lambda: isinstance(app.screen, TournamentScreen), what="its screen")
        await eventually(lambda: tid in app.session.state.tournaments, what="its view")
        await eventually(
            lambda: len(app.session.state.tournaments[tid].players) == 1, what="joined"
        )
        await pilot.press("escape")
        await eventually(lambda: app.screen is listing, what="the list again")
        await eventually(lambda: players(tid) == "1", what="the list asked again")
        await register(opened, tid, ["bob"])
        await pilot.press("f5")
        await eventually(lambda: players(tid) == "2", what="F5 asked again")
        assert listing.selected() == tid and table.cursor_row == 1


async def four_tournament_bots(tmp_path: Path, server: App, tid: str) -> Child:
    """`solrace tournament bots TID --count 4` (quick moves) as a child process."""
    return await Child.start(
        tmp_path, "tournament", "--server", url_of(server), "bots", tid, "--count", "4",
        "--delay", "0.01",
    )  # fmt: skip


async def test_tournament_bots_exit_with_the_champion_after_reconnects(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    bots = await four_tournament_bots(tmp_path, server, tid)
    try:
        await eventually(lambda: registered(admin, tid) == 4, what="four bots registered")
        await act(admin, tid, "start")
        await eventually(
            lambda: sum(rt.race.is_live for rt in server.hub.races.values()) == 2,
            what="the first round's races",
        )
        # Every bot loses its link mid-race (a server restart says 1012): they come back.
        dropped = {p: s for p, s in server.hub.players.items() if p != admin.me}
        assert len(dropped) == 4
        for session in dropped.values():
            session.close(CloseCode.SERVICE_RESTART, "the test drops every bot")
        await eventually(
            lambda: all(server.hub.players.get(p) not in (None, s) for p, s in dropped.items()),
            what="every bot back on a new session",
        )
        assert await bots.finish(90) == 0
        assert "champion: tbot-" in bots.output
        view = admin.state.tournaments[tid]
        assert view.phase == "finished" and view.champion is not None
    finally:
        await bots.kill()


async def test_tournament_bots_say_what_goes_on(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """Registered (and waiting for the start), each round's pairings, each match's result,
    each round's end, the champion: a line each, as it happens, then the final view."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    bots = await four_tournament_bots(tmp_path, server, tid)
    try:
        line = await bots.expect("bots registered")
        assert line == (
            f"4 bots registered in {tid} (tbot-1, tbot-2, tbot-3, tbot-4); "
            f"waiting for the start (solrace tournament --server {url_of(server)} start {tid})"
        )
        await eventually(lambda: registered(admin, tid) == 4, what="four bots registered")
        await act(admin, tid, "start")
        started = await bots.expect("round 1 started: ")
        assert " W1-1 tbot-" in started and ", W1-2 tbot-" in started
        await bots.expect("round 1 ended", 90)
        results = [line for line in bots.lines if line.startswith("round 1, W1-")]
        assert sorted(line[:13] for line in results) == ["round 1, W1-1", "round 1, W1-2"]
        assert all(": winner tbot-" in line for line in results), results
        assert "round 2 started: W2-1 tbot-" in await bots.expect("round 2 started", 90)
        final = await bots.expect("round 2, W2-1 tbot-", 90)
        winner = final.split(": winner ")[1].split(" (")[0]
        assert await bots.expect("tournament finished") == f"tournament finished: champion {winner}"
        assert await bots.finish(30) == 0
        assert f"champion: {winner}" in bots.output
    finally:
        await bots.kill()


async def test_tournament_bots_of_a_check_in_tournament_say_to_open_it_first(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """In a tournament that needs check-in, still in registration, the bots said to run
    `start`, which the server refuses until check-in is open ('open check-in first')."""
    admin = await opened.open("director")
    request = CreateTournament(
        admin_token=TOKEN,
        name="check-cup",
        game="klondike",
        format="single_elimination",
        check_in_required=True,
    )
    reply = await admin.request(request, is_view())
    assert isinstance(reply, TournamentView)
    tid = reply.tournament.tournament_id
    bots = await four_tournament_bots(tmp_path, server, tid)
    try:
        line = await bots.expect("bots registered")
    finally:
        await bots.kill()
    command = f"solrace tournament --server {url_of(server)}"
    assert line.endswith(
        f"waiting for the start ({command} admin {tid} open-check-in, then {command} start {tid})"
    ), line


@pytest.mark.parametrize(
    ("signal_number", "code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
)
async def test_stopped_tournament_bots_withdraw_before_the_start(
    server: App, opened: Opened, tmp_path: Path, signal_number: int, code: int
) -> None:
    """Ctrl-C, a kill or a closed terminal (SIGHUP: it ended the program at once, its bots
    left registered) before the start leaves no bot registered."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    bots = await Child.start(
        tmp_path, "tournament", "--server", url_of(server), "bots", tid, "--count", "3"
    )
    try:
        await bots.expect("3 bots registered")
        await eventually(lambda: registered(admin, tid) == 3, what="three bots registered")
        bots.proc.send_signal(signal_number)
        assert (
            await bots.expect("withdrew") == f"withdrew 3 of 3 bots from {tid} (it had not started)"
        )
        assert await bots.finish(30) == code
        await eventually(lambda: registered(admin, tid) == 0, what="nobody registered")
        assert server.tournaments.live[tid].tournament.registered == []
    finally:
        await bots.kill()


async def test_tournament_bots_under_nohup_stay_when_their_terminal_closes(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """SIGHUP ignored at the start (`nohup`) stays ignored; a kill after it still withdraws
    the bots. The hangup is sent first: an ignored signal is dropped as it is sent, a
    handled one would have been the stop (status 129)."""
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    bots = await Child.start(
        tmp_path,
        "tournament",
        "--server",
        url_of(server),
        "bots",
        tid,
        "--count",
        "2",
        nohup=True,
    )
    try:
        await bots.expect("2 bots registered")
        bots.proc.send_signal(signal.SIGHUP)
        bots.proc.send_signal(signal.SIGTERM)
        assert (
            await bots.expect("withdrew") == f"withdrew 2 of 2 bots from {tid} (it had not started)"
        )
        assert await bots.finish(30) == 143
    finally:
        await bots.kill()


async def test_the_plain_tournament_client_ends_when_its_player_connects_elsewhere(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    admin = await opened.open("director")
    tid = await create(admin, "single_elimination")
    await watching(admin, tid)
    url = url_of(server)
    player = await Child.start(
        tmp_path, "tournament", "--server", url, "--name", "pat", "join", tid, "--plain"
    )
    try:
        await player.expect("tournament registration")
        await ends_when_connected_elsewhere(player, url, tmp_path)
    finally:
        await player.kill()


async def test_playing_a_tournament_one_is_not_in_says_so(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`play ID --plain` by someone who is not one of its players: one line on what they can
    do instead (join it, watch it, show it), exit 1, whatever the phase."""
    url = url_of(server)
    admin = await opened.open("director")
    open_tid = await create(admin, "single_elimination")
    tid = await create(admin, "single_elimination")
    await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "start")

    async def hugh_plays(tournament_id: str) -> str:
        child = await Child.start(
            tmp_path, "tournament", "--server", url, "--name", "hugh", "play", tournament_id,
            "--plain",
        )  # fmt: skip
        try:
            assert await child.finish(30) == 1, child.output
        finally:
            await child.kill()
        assert len(child.lines) == 1, child.output
        return child.lines[0]

    assert await hugh_plays(open_tid) == (
        f"solrace tournament: hugh is not registered in {open_tid}: "
        f"`solrace tournament --server {url} join {open_tid} --plain` registers and plays"
    )
    assert await hugh_plays(tid) == (
        f"solrace tournament: hugh is not a player of {tid}, which is running: you can only "
        f"watch it (`solrace tournament --server {url} watch {tid}`, or `show {tid} --tui`)"
    )
    await act(admin, tid, "forfeit", match_id="W1-1", player_id=opened_id(opened, "bob"))
    assert await hugh_plays(tid) == (
        f"solrace tournament: hugh was not a player of {tid}, which has finished (champion "
        f"ann): `solrace tournament --server {url} show {tid}` prints it"
    )


async def test_playing_a_tournament_one_did_not_check_in_to_says_so(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """Registered but not checked in when the tournament started (check-in required): not in
    its field, so `play ID --plain` says they can only watch it and exits 1 (it waited for a
    race that never comes)."""
    url = url_of(server)
    admin = await opened.open("director")
    reply = await admin.request(
        CreateTournament(
            admin_token=TOKEN,
            name="cup",
            game="klondike",
            format="single_elimination",
            check_in_required=True,
            no_show_grace_s=None,
            rated=False,
        ),
        is_view(),
    )
    assert isinstance(reply, TournamentView)
    tid = reply.tournament.tournament_id
    joining = await Child.start(
        tmp_path, "tournament", "--server", url, "--name", "hugh", "join", tid
    )
    try:
        assert await joining.finish(30) == 0, joining.output
    finally:
        await joining.kill()
    ann, bob = await register(opened, tid, ["ann", "bob"])
    await act(admin, tid, "open_check_in")
    for player in (ann, bob):
        await player.request(CheckIn(tournament_id=tid), is_view(tid))
    view = await act(admin, tid, "start")
    assert view.phase == "running" and len(view.players) == 3 and len(view.seeds) == 2
    child = await Child.start(
        tmp_path, "tournament", "--server", url, "--name", "hugh", "play", tid, "--plain"
    )
    try:
        assert await child.finish(30) == 1, child.output
    finally:
        await child.kill()
    assert child.lines == [
        f"solrace tournament: hugh did not check in to {tid}, which is running without "
        f"them: you can only watch it (`solrace tournament --server {url} watch {tid}`, or "
        f"`show {tid} --tui`)"
    ]


async def test_a_race_resumed_from_the_welcome_has_its_held_deal_checked(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`play ID --plain` connecting once its race has started (no `tournament_race` notice:
    the race comes from `welcome.active_races`, its round from the view's live matches)
    still checks the race's held deal when the round ends."""
    url = url_of(server)
    admin, tid = await pat_joined(opened, url, tmp_path)
    bot = resigning_bot(server)
    run: asyncio.Task[object] | None = None
    player: Child | None = None
    try:
        await bot.connect()
        run = asyncio.create_task(play_tournament(bot, tid))
        await eventually(lambda: registered(admin, tid) == 2, what="both registered")
        await act(admin, tid, "start")

        def live() -> list[RaceId]:
            view = admin.state.tournaments.get(tid)
            return [] if view is None else [m.race_id for m in view.live]

        await eventually(lambda: bool(live()), what="the race on")
        (race_id,) = live()
        argv = ["--server", url, "--name", "pat", "play", tid, "--plain"]
        player = await Child.start(tmp_path, "tournament", *argv)
        await player.expect(f"your race {race_id} is on")
        for move in scoring_line("klondike", deal_of(server, race_id)):
            await player.send(move)
            await player.expect(f"ok {move}")
        await player.send("resign")
        await player.expect("deal held until the tournament round ends")
        await player.expect("tournament finished: champion pat")
        assert (
            f"round 1, match W1-1, race 1 ({race_id}): deal klondike "
            f"{deal_of(server, race_id)}: commitment verified"
        ) in player.lines, player.output
        assert await player.finish() == 0
    finally:
        if player is not None:
            await player.kill()
        if run is not None:
            run.cancel()
        await bot.close()


async def test_a_race_one_is_out_of_when_connecting_names_its_game_in_the_deal_check(
    server: App, opened: Opened, tmp_path: Path
) -> None:
    """`play ID --plain` connecting while a race the player resigned from runs on: the race
    is not in `welcome.active_races`, and the server pushes its news from then on (its
    finish first), never the race itself. The line mode still checks the held deal with the
    race's game, as it does for a race it followed from the start."""
    url = url_of(server)
    admin, tid = await pat_joined(opened, url, tmp_path)
    (bob,) = await register(opened, tid, ["bob"])
    await act(admin, tid, "start")
    await eventually(lambda: bool(bob.state.tournament_races), what="bob seated")
    race_id = next(iter(bob.state.tournament_races))
    await eventually(lambda: bob.state.my_board(race_id) is not None, what="bob's deal")
    for move in scoring_line("klondike", deal_of(server, race_id)):
        await bob.move(race_id, move)
    argv = ["--server", url, "--name", "pat", "play", tid, "--plain"]
    first = await Child.start(tmp_path, "tournament", *argv)
    second: Child | None = None
    try:
        await first.expect(f"your race {race_id} is on")
        await first.send("resign")
        await first.expect("resigned")
        await first.send("quit")
        assert await first.finish() == 0, first.output
        second = await Child.start(tmp_path, "tournament", *argv)
        await second.expect("tournament running")
        await bob.resign(race_id)
        await second.expect("tournament finished: champion bob")
        assert (
            f"round 1, match W1-1, race 1 ({race_id}): deal klondike "
            f"{deal_of(server, race_id)}: commitment verified"
        ) in second.lines, second.output
        assert await second.finish() == 0
    finally:
        await first.kill()
        if second is not None:
            await second.kill()
