"""`solrace play --plain` in a child process against a real server (and the embedded one):
outcomes print once the server confirms them, a link closed for good ends the program, and a
racer back after Ctrl-C takes its seat again."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
from pathlib import Path

import pytest

from solrace.client.app import play_main
from solrace.client.connection import Connection
from solrace.client.plain import PlainMode
from solrace.client.session import Session
from solrace.server.protocol.ids import RaceId
from tests.waiting import eventually

from .process import Child


async def test_plain_mode_races_a_bot_to_the_reveal(server_url: str, tmp_path: Path) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    bot: Child | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 120")
        line = await player.expect("created")
        race_id = line.split()[1]
        bot = await Child.start(
            tmp_path, "bot", "--server", server_url, "--race", race_id, "--delay", "0.01"
        )
        await player.send("deal")
        await player.expect("race started")
        await player.expect("ok deal")
        await player.expect("t6")  # the board is printed after the ack
        await player.send("d")  # the full-screen board's key works here too
        await player.expect("ok deal")
        await player.send("t0-t0")
        await player.expect("refused t0-t0")
        await player.send("nonsense")
        await player.expect("cannot read move")
        await player.send("moves")
        await player.expect("legal moves:")
        await player.send("resign")
        await player.expect("resigned")
        await player.send("wait")
        await player.expect("race finished", 60)
        await player.expect("commitment verified")
        await player.send("quit")
        assert await player.finish() == 0
        assert await bot.finish(60) == 0
        assert "commitment verified" in bot.output
    finally:
        await player.kill()
        if bot is not None:
            await bot.kill()


async def test_a_resign_typed_in_an_open_race_waits_for_the_start(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    opponent: Opponent | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 120")
        race_id = RaceId((await player.expect("created")).split()[1])
        await player.send("resign")
        await player.expect("waiting for the start")
        opponent = await Opponent.open(server_url, "olga")
        await opponent.session.join_race(race_id)
        await player.expect(f"resigned from race {race_id}")
        assert "refused resign" not in player.output
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
        if opponent is not None:
            await opponent.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
async def test_a_stop_signal_leaves_the_open_races_as_quit_does(
    server_url: str, tmp_path: Path, signum: signal.Signals
) -> None:
    """Ctrl-C, a service stop, a closed terminal: each does what `quit` does (Ctrl-C left
    the open race it created in the lobby, with a creator who was gone)."""
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    lister: Opponent | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 120")
        race_id = (await player.expect("created")).split()[1]
        player.proc.send_signal(signum)
        await player.expect(f"left race {race_id}")
        assert await asyncio.wait_for(player.proc.wait(), 30) == 128 + signum
        lister = await Opponent.open(server_url)
        listed = await lister.session.list_races()
        assert race_id not in {info.race_id for info in listed}
    finally:
        await player.kill()
        if lister is not None:
            await lister.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_sighup_and_sigterm_leave_a_race_of_create_without_a_false_error(
    server_url: str, tmp_path: Path, signum: signal.Signals
) -> None:
    # SIGHUP printed `error: no live race 'r…' (unknown_race)` between the cancellation and
    # `left race`, as SIGTERM did too when the input ended with it (in about a third of the
    # runs: see the next test for the same in this process, every time).
    player = await Child.start(
        tmp_path,
        *("play", "--plain", "--server", server_url, "--name", "hal"),
        *("--create", "klondike", "--seats", "2"),
    )
    try:
        race_id = (await player.expect("created")).split()[1]
        await player.send("list")  # answered: the commands run, the signals are handled
        listed = await player.expect(f"{race_id} klondike open 1/2")
        # A closed terminal: the input ends and the hangup comes at once. The end of the
        # input's `quit` and the signal's both sent a leave; the second was refused.
        assert player.proc.stdin is not None
        player.proc.stdin.close()
        player.proc.send_signal(signum)
        assert await player.finish() == 128 + signum
    finally:
        await player.kill()
    after = player.lines[player.lines.index(listed) + 1 :]
    assert after == ["race cancelled", f"left race {race_id}"]


async def test_quit_asked_twice_at_once_leaves_once(server_url: str) -> None:
    """A closed terminal ends the input (`quit`) and sends SIGHUP (`quit` again) together:
    both left the race, and the second leave's refusal printed as `error: no live race
    'r…' (unknown_race)` (with `left race` twice). `quit` now runs once."""
    player = await Opponent.open(server_url, "hup")
    out = io.StringIO()
    mode = PlainMode(player.session, out)
    try:
        await mode.create(["klondike", "2"])
        race_id = mode.race_id
        await asyncio.gather(mode.quit(), mode.quit())
        # The server answers in order: a second leave's refusal would have come by now.
        await player.session.list_races()
    finally:
        await player.close()
    assert out.getvalue().splitlines()[1:] == ["race cancelled", f"left race {race_id}"]


@pytest.mark.parametrize(
    ("invite", "hint"),
    [([], "give it with --invite CODE"), (["--invite", "sekret"], "check the --invite code")],
)
async def test_a_private_race_joined_without_its_code_names_the_option(
    server_url: str, tmp_path: Path, invite: list[str], hint: str
) -> None:
    """`--race R` of a private race without `--invite` ended with the server's words alone;
    with a wrong code it is told to check it (not to give one, as it did)."""
    host = await Opponent.open(server_url, "hana")
    try:
        race_id = await host.session.create_race("klondike", 2, 300, invite_code="sekrit")
        player = await Child.start(
            tmp_path,
            *("play", "--plain", "--server", server_url, "--name", "pat", "--race", race_id),
            *invite,
        )
        try:
            assert await player.finish() == 1
        finally:
            await player.kill()
    finally:
        await host.close()
    refusal = player.lines[-1]
    assert refusal.startswith("solrace play: "), player.output
    assert refusal.endswith(f"(bad_invite); {hint}"), player.output


async def test_a_racer_joining_a_race_whose_deal_was_chosen_is_told_so(server_url: str) -> None:
    """A casual race's creator may name the deal (`--game-number`), and its racers are told
    so: only `list` said it (`chosen-deal`), never the join or the start."""
    creator = await Opponent.open(server_url, "cara")
    racer = await Opponent.open(server_url, "rex")
    out = io.StringIO()
    mode = PlainMode(racer.session, out)
    try:
        drawn = await creator.session.create_race("klondike", 3, 600)
        await mode.join([drawn])
        chosen = await creator.session.create_race("klondike", 2, 600, game_number="12345")
        await mode.join([chosen])  # the race is full: it starts
        await eventually(lambda: "race started" in out.getvalue(), what="the start")
    finally:
        await racer.close()
        await creator.close()
    lines = out.getvalue().splitlines()
    assert f"joined race {drawn}" in lines, lines
    assert f"joined race {chosen} (the creator chose its deal)" in lines, lines
    started = next(line for line in lines if line.startswith("race started"))
    assert started.startswith("race started (600s, the creator chose its deal); commitment ")


async def test_the_creator_s_own_start_line_says_no_more(server_url: str) -> None:
    """The creator named the deal: its own lines stay as they were."""
    creator = await Opponent.open(server_url, "cara")
    racer = await Opponent.open(server_url, "rex")
    out = io.StringIO()
    mode = PlainMode(creator.session, out)
    try:
        await mode.create(["klondike", "2"], game_number="12345")
        assert mode.race_id is not None
        await racer.session.join_race(mode.race_id)
        await eventually(lambda: "race started" in out.getvalue(), what="the start")
    finally:
        await racer.close()
        await creator.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"race {mode.race_id} created (klondike, 2 seats, 600s, deal 12345)"
    started = next(line for line in lines if line.startswith("race started"))
    assert started.startswith("race started (600s); commitment ")


def test_race_and_create_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # The race was created and --race ignored without a word.
    with pytest.raises(SystemExit) as stopped:
        play_main(["--plain", "--race", "r1a2b3c4d5", "--create", "klondike"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == "solrace play: error: argument --create: not allowed with argument --race"


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--seats", "-1"], "argument --seats: -1: must be 1 or more"),
        (["--time-limit", "0"], "argument --time-limit: 0: must be 1 or more"),
        (["--seats", "two"], "argument --seats: 'two' is not a whole number"),
        (["--server", "ws://127.0.0.1:1", "--game", "colorado"], "--game is the embedded"),
        (["--server", "ws://127.0.0.1:1", "--rated"], "--rated and --game-number go with"),
        (["--rated", "--game-number", "7"], "--game-number is for casual races"),
    ],
)
def test_play_refuses_bad_options_before_connecting(
    capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str
) -> None:
    with contextlib.suppress(SystemExit):
        assert play_main(["--plain", *argv]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("solrace play: ") and complaint in error, error


def test_play_names_every_bad_option_not_only_the_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--plain", "--server", "ws://127.0.0.1:1", "--game", "colorado", "--rated"]
    assert play_main([*argv, "--game-number", "7"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert [e.split(":")[1].split()[0] for e in errors] == ["--game", "--rated", "--game-number"]
    assert all(e.startswith("solrace play: ") for e in errors)


async def test_play_creates_a_race_on_the_deal_it_names(server_url: str, tmp_path: Path) -> None:
    argv = ["--plain", "--server", server_url, "--name", "dealer", "--create", "klondike"]
    player = await Child.start(tmp_path, "play", *argv, "--game-number", "12345")
    try:
        line = await player.expect("created (klondike, 2 seats, 600s, deal 12345)")
        race_id = line.split()[1]
        lister = await Opponent.open(server_url, "lister")
        try:
            [info] = [i for i in await lister.session.list_races() if i.race_id == race_id]
            assert info.deal_chosen and not info.rated
        finally:
            await lister.close()
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()


async def test_plain_mode_without_server_embeds_one_and_seats_a_bot(tmp_path: Path) -> None:
    player = await Child.start(
        tmp_path,
        "play",
        "--plain",
        "--name",
        "newcomer",
        "--bot-delay",
        "0.01",
        "--data-dir",
        str(tmp_path / "embedded"),
    )
    try:
        await player.expect("you against a greedy bot")
        await player.send("deal")
        await player.expect("ok deal", 60)
        await player.send("resign")
        await player.send("wait")
        await player.expect("commitment verified", 60)
        await player.send("quit")
        assert await player.finish() == 0
        identity = tmp_path / "child-config" / "identity.json"
        assert identity.exists() and "newcomer" in identity.read_text()
        assert oct(identity.stat().st_mode & 0o777) == "0o600"
    finally:
        await player.kill()


async def test_the_embedded_race_is_left_on_quit_and_a_refused_one_still_gives_the_prompt(
    tmp_path: Path,
) -> None:
    """The embedded server runs only while its player is connected, so a seat kept for the
    grace period is kept for good: the race made at the start is left on `quit` like any
    created one. Races left behind all the same (a crash) past the open-race cap must not
    lock the player out: the start says so and the prompt comes, where they can be left."""
    folder = ["--data-dir", str(tmp_path / "embedded"), "--bot", "none", "--name", "solo"]
    player = await Child.start(tmp_path, "play", "--plain", *folder)
    try:
        line = await player.expect("created (klondike, no bot)")
        first = line.split()[1]
        await player.send("quit")
        await player.expect(f"left race {first}")
        assert await player.finish() == 0
    finally:
        await player.kill()
    crashed = await Child.start(tmp_path, "play", "--plain", *folder)
    try:
        await crashed.expect("created (klondike, no bot)")
        for _ in range(2):
            await crashed.send("create klondike")
            await crashed.expect("seats, 600s, casual)")
    finally:
        await crashed.kill()  # kill -9: its three open races stay
    again = await Child.start(tmp_path, "play", "--plain", *folder)
    try:
        await again.expect("cannot create a race: you have 3 open races already")
        await again.send("list")
        await again.expect("solo")
        await again.send("quit")
        assert await again.finish() == 0
    finally:
        await again.kill()


class Opponent:
    """A racer in this process (no moves unless told), closed at the end."""

    def __init__(self, session: Session, pump: asyncio.Task[None]) -> None:
        self.session = session
        self.pump = pump

    @classmethod
    async def open(cls, url: str, name: str | None = None, token: str | None = None) -> Opponent:
        conn = Connection(url, name=name, token=token)
        await conn.connect()
        conn.recv_nowait()
        session = Session(conn)
        return cls(session, asyncio.create_task(session.pump()))

    async def close(self) -> None:
        self.pump.cancel()
        await self.session.conn.close()


def saved_token(tmp_path: Path, url: str) -> str:
    """The token the child processes saved for `url` (their config folder)."""
    entry = json.loads((tmp_path / "child-config" / "identity.json").read_text())[url]
    token = entry["token"]
    assert isinstance(token, str)
    return token


async def test_refused_commands_print_the_refusal_not_a_success(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    try:
        await player.expect("connected to")
        for word in ("resign", "start", "leave", "board", "moves", "wait"):
            await player.send(word)
            await player.expect("no current race: create or join one first")
        await player.send("join")
        await player.expect("join RACE [INVITE]")
        for typo, bad in [
            ("x", "x"),
            ("2 abc", "abc"),
            ("2 -60", "-60"),
            ("-2", "-2"),
            ("0", "0"),
            ("2 00", "00"),
        ]:
            await player.send(f"create klondike {typo}")
            line = await player.expect("create GAME [SEATS [SECONDS]]")
            assert line.endswith(f": SEATS and SECONDS are positive whole numbers, not {bad!r}")
        await player.send("create klondike 2 60 more")
        await player.expect("create GAME [SEATS [SECONDS]]: too many words ('more'); games: ")
        await player.send("create klondyke")  # a typo'd game is named, not only the usage
        await player.expect("create GAME [SEATS [SECONDS]]: no game 'klondyke'; games: ")
        await player.send("create klondike 3 30")
        race_id = (await player.expect("created")).split()[1]
        await player.send("start")
        await player.expect("countdown:")
        await player.send("leave")  # the countdown has begun: too late to leave
        await player.expect("refused leave: only an open race can be left; resign (wrong_status)")
        await player.send("moves")  # typed before the start: waits for it
        await player.expect("legal moves:")
        await player.send("resign")
        await player.expect(f"resigned from race {race_id}")
        await player.expect("race finished")
        await player.send("resign")  # once more: the server refuses, nothing else is said
        await player.expect("refused resign:")
        await player.send("quit")
        assert await player.finish() == 0
        assert "left race" not in player.output
        assert player.output.count(" created (") == 1  # none for the typos
        assert player.output.count("resigned from race") == 1
        assert "error:" not in player.output  # each refusal is said once, as `refused`
        assert "cannot read move" not in player.output
    finally:
        await player.kill()


async def ends_when_connected_elsewhere(player: Child, url: str, tmp_path: Path) -> None:
    """Connect as `player`'s own identity: the server closes its link (4003) and the child
    program ends by itself, its input still open, with status 1 and no traceback."""
    other = await Opponent.open(url, token=saved_token(tmp_path, url))
    try:
        line = await player.expect("connection closed:")
        assert line == (
            "connection closed: this player connected again elsewhere (4003: connected again "
            "elsewhere); another program uses the same identity, this one stops"
        )
        assert await asyncio.wait_for(player.proc.wait(), 10) == 1
        assert await player.finish() == 1
        assert "Traceback" not in player.output
    finally:
        await other.close()


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "waiting"])
async def test_a_second_connection_of_the_player_ends_the_plain_client(
    server_url: str, tmp_path: Path, busy: bool
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 60")
        await player.expect("created")
        if busy:
            await player.send("wait")  # a command in flight when the link is closed
        await ends_when_connected_elsewhere(player, server_url, tmp_path)
    finally:
        await player.kill()


async def test_a_racer_comes_back_into_its_race_after_ctrl_c(
    server_url: str, tmp_path: Path
) -> None:
    first = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "dave")
    rival = await Opponent.open(server_url, "rival")
    children = [first]
    try:
        await first.expect("connected to")
        await first.send("create klondike 2 300")
        race_id = RaceId((await first.expect("created")).split()[1])
        await rival.session.join_race(race_id)
        await first.send("deal")
        await first.expect("ok deal")
        first.proc.send_signal(signal.SIGINT)
        line = await first.expect("forfeit")
        assert line.startswith(f"leaving race {race_id} while it is running: you forfeit")
        assert "after 60 s away" in line and f"join {race_id}" in line  # the server's grace
        assert await first.finish() == 130

        # Back with --race: the seat is kept (not `already_joined`), the board comes back.
        again = await Child.start(
            tmp_path, "play", "--plain", "--server", server_url, "--race", race_id
        )
        children.append(again)
        await again.expect(f"back in race {race_id} (running")
        assert f"joined race {race_id}" not in again.output  # resumed, not joined
        await again.expect("t6")  # the board
        await again.send("deal")
        await again.expect("ok deal")
        # Everything said before the first command is read: the race and its board once.
        assert again.output.count("back in race") == 1, again.output
        assert again.output.count("t0    t1") == 1, again.output
        await again.send("quit")
        assert await again.finish() == 0
        assert again.output.count("back in race") == 1

        # Back with no race given: the race in progress becomes the current one; `join` of
        # it resumes it too.
        third = await Child.start(tmp_path, "play", "--plain", "--server", server_url)
        children.append(third)
        await third.expect(f"back in race {race_id} (running")
        await third.send(f"join {race_id}")
        await third.expect(f"back in race {race_id} (running")
        await third.send("board")
        await third.send("moves")
        await third.expect("legal moves:")
        # One board after each `back in race` and one for `board`: none printed twice.
        assert third.output.count("t0    t1") == 3
        await third.send("resign")
        await third.expect(f"resigned from race {race_id}")
        await rival.session.resign(race_id)
        await third.send("wait")
        await third.expect("race finished")
        await third.send("quit")
        assert await third.finish() == 0
        assert "already_joined" not in third.output + again.output
    finally:
        for child in children:
            await child.kill()
        await rival.close()


async def test_quit_leaves_the_open_races_created_and_warns_about_a_live_one(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "fr")
    lobby = await Opponent.open(server_url, "lobby")
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 600")
        first = (await player.expect("created")).split()[1]
        await player.send("create klondike 3 600")
        second = (await player.expect("created")).split()[1]
        await player.send("quit")
        assert await player.finish() == 0
        assert f"left race {first}" in player.lines and f"left race {second}" in player.lines
        assert [r.race_id for r in await lobby.session.list_races()] == []
    finally:
        await player.kill()
        await lobby.close()


async def test_the_end_of_the_input_mid_race_says_the_forfeit(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "gil")
    rival = await Opponent.open(server_url, "rival")
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 300")
        race_id = RaceId((await player.expect("created")).split()[1])
        await rival.session.join_race(race_id)
        await player.send("deal")
        await player.expect("ok deal")
        assert await player.finish() == 0  # the end of the input, as `quit`
        line = player.lines[-1]
        assert line.startswith(f"leaving race {race_id} while it is running: you forfeit")
        assert f"join {race_id}" in line
        assert f"left race {race_id}" not in player.output  # a running race cannot be left
    finally:
        await player.kill()
        await rival.close()


async def test_list_marks_a_race_whose_creator_chose_the_deal(
    server_url: str, tmp_path: Path
) -> None:
    chooser = await Child.start(
        tmp_path,
        "bot",
        *("--server", server_url, "--name", "chooser", "--seats", "2"),
        *("--create", "klondike", "--game-number", "5"),
    )
    player: Child | None = None
    try:
        race_line = await chooser.expect("race r")
        race_id = race_line.split()[1]
        player = await Child.start(
            tmp_path, "play", "--plain", "--server", server_url, "--name", "pat"
        )
        await player.expect("connected")
        await player.send("list")
        listed = await player.expect(race_id)
        assert "chosen-deal" in listed, listed
    finally:
        await chooser.kill()
        if player is not None:
            await player.kill()
