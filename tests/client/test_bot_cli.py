"""`solrace bot` in a child process: many bots, one race, to the end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path

import pytest

from solrace.client.bot_cli import _leave_on_stop
from solrace.client.bots import Bot, first_open_race
from solrace.client.session import Session, read_until
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Progress, ServerMessage
from tests.waiting import eventually

from .conftest import server_settings, url_of
from .process import Child


async def test_bots_create_fill_and_finish_a_race(server_url: str, tmp_path: Path) -> None:
    bots = await Child.start(
        tmp_path,
        "bot",
        "--server",
        server_url,
        "--strategy",
        "greedy",
        "--create",
        "colorado",
        "--seats",
        "3",
        "--count",
        "3",
        "--delay",
        "0",
        "--seed",
        "1",
    )
    try:
        await bots.expect("race r")
        await bots.expect("commitment verified", 90)
        assert await bots.finish() == 0
        ranks = [line for line in bots.lines if line[:2] in ("1.", "2.", "3.")]
        assert len(ranks) == 3
    finally:
        await bots.kill()


async def test_random_bots_join_an_existing_race(server_url: str, tmp_path: Path) -> None:
    creator = await Child.start(
        tmp_path,
        "bot",
        "--server",
        server_url,
        "--create",
        "british-square",
        "--seats",
        "2",
        "--delay",
        "0",
        "--strategy",
        "random",
        "--max-moves",
        "60",
    )
    joiner: Child | None = None
    try:
        line = await creator.expect("race r")
        race_id = line.split()[1]
        joiner = await Child.start(
            tmp_path,
            "bot",
            "--server",
            server_url,
            "--race",
            race_id,
            "--delay",
            "0",
            "--strategy",
            "random",
            "--max-moves",
            "60",
        )
        await joiner.expect("commitment verified", 90)
        assert await joiner.finish() == 0
        assert await creator.finish() == 0
    finally:
        await creator.kill()
        if joiner is not None:
            await joiner.kill()


async def test_a_bot_looking_for_a_race_skips_private_ones(server_url: str, tmp_path: Path) -> None:
    common = ("--server", server_url, "--delay", "0", "--max-moves", "30")
    private = await Child.start(
        tmp_path, "bot", *common, "--create", "klondike", "--seats", "2", "--invite", "ours"
    )
    seeker: Child | None = None
    try:
        await private.expect("race r")
        seeker = await Child.start(tmp_path, "bot", *common)
        assert await seeker.finish() == 1
        assert "no open race to join" in seeker.output, seeker.output
        assert "bad_invite" not in seeker.output
    finally:
        await private.kill()
        if seeker is not None:
            await seeker.kill()


async def test_bot_help_and_bad_server(tmp_path: Path) -> None:
    helper = await Child.start(tmp_path, "bot", "--help")
    assert await helper.finish() == 0
    assert "--strategy" in helper.output
    bad = await Child.start(tmp_path, "bot", "--server", "ws://127.0.0.1:9", "--create", "klondike")
    assert await bad.finish() == 1
    assert "cannot reach" in bad.output


async def test_more_bots_than_seats_is_refused_before_creating(
    server_app: App, server_url: str, tmp_path: Path
) -> None:
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", server_url, "--create", "klondike", "--seats", "2", "--count", "3"),
    )
    try:
        assert await bots.finish() == 2
    finally:
        await bots.kill()
    assert bots.lines == [
        "solrace bot: --count 3 is more than --seats 2: every bot needs a seat of the race it "
        "creates (give --seats 3, or fewer bots)"
    ]
    assert server_app.hub.races == {}  # nothing was created


async def test_a_race_the_bots_cannot_join_is_not_announced(
    server_url: str, tmp_path: Path
) -> None:
    bots = await Child.start(tmp_path, "bot", "--server", server_url, "--race", "nosuch")
    try:
        assert await bots.finish() == 1
    finally:
        await bots.kill()
    assert len(bots.lines) == 1 and "unknown_race" in bots.lines[0], bots.output


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
async def test_a_stopped_bot_leaves_its_open_race(
    server_url: str, tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    # The open race stayed in the lobby, joinable, with a bot that was gone.
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", server_url, "--create", "klondike", "--seats", "3", "--count", "2"),
    )
    lister = Bot(server_url, "lister", make_strategy("greedy"))
    try:
        race_id = (await bots.expect("race r")).split()[1]
        bots.proc.send_signal(signum)
        assert await asyncio.wait_for(bots.proc.wait(), 30) == status
        await bots.finish()
        await lister.connect()
        assert await first_open_race(lister) is None, bots.output
    finally:
        await bots.kill()
        await lister.close()
    assert len(bots.lines) == 2, bots.output
    line = bots.lines[1]
    assert line.startswith(f"stopped: left race {race_id} (bot-"), bots.output
    assert line.count("bot-") == 2  # both bots, in one line


async def test_a_bot_stopped_once_out_of_its_running_race_does_not_say_it_will_be_gone(
    server_url: str, tmp_path: Path
) -> None:
    """A bot that had resigned (its move cap) follows its race to the end; stopped meanwhile
    it said the server would put it out (gone) after the grace period: it is out already."""
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", server_url, "--create", "klondike", "--max-moves", "1"),
        *("--delay", "0"),
    )
    other = Bot(server_url, "other", make_strategy("greedy"))
    try:
        race_id = RaceId((await bots.expect("race r")).split()[1])
        await other.connect()
        await other.join(race_id)

        def bot_resigned(message: ServerMessage) -> bool:
            return (
                isinstance(message, Progress)
                and message.progress.player_id != other.state.player_id
                and message.progress.state == "resigned"
            )

        await read_until(other.next_message, bot_resigned, 20)
        bots.proc.send_signal(signal.SIGTERM)
        assert await bots.finish() == 143
    finally:
        await bots.kill()
        await other.close()
    expected = f"stopped: race {race_id} (running) goes on; the bots are out of it (bot-1 resigned)"
    assert bots.lines[-1] == expected, bots.output


async def test_a_bot_started_under_nohup_stays_when_its_terminal_closes(
    server_url: str, tmp_path: Path
) -> None:
    """SIGHUP ignored at the start stays ignored (it stopped the bots, `nohup` or not); a
    kill after it still stops them. The hangup is sent first: an ignored signal is dropped
    as it is sent, a handled one would have been the stop (status 129)."""
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", server_url, "--create", "klondike", "--seats", "2"),
        nohup=True,
    )
    try:
        race_id = (await bots.expect("race r")).split()[1]
        bots.proc.send_signal(signal.SIGHUP)
        bots.proc.send_signal(signal.SIGTERM)
        assert await bots.finish() == 143
    finally:
        await bots.kill()
    assert bots.lines[-1].startswith(f"stopped: left race {race_id} (bot-"), bots.output


async def test_a_bot_whose_name_is_taken_says_the_name_it_plays_as(
    server_url: str, tmp_path: Path
) -> None:
    alice = Bot(server_url, "alice", make_strategy("greedy"))
    await alice.connect()
    bots = await Child.start(
        tmp_path, "bot", "--server", server_url, "--name", "alice", "--create", "klondike"
    )
    try:
        said = await bots.expect("is taken")
        await bots.expect("race r")
        bots.proc.send_signal(signal.SIGTERM)
        assert await bots.finish() == 143
    finally:
        await bots.kill()
        await alice.close()
    prefix = f"solrace bot: the name 'alice' is taken on {server_url}: this bot plays as 'alice-"
    assert said.startswith(prefix), bots.output


async def test_a_bot_stopped_before_its_create_was_answered_leaves_that_race(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped between sending its create and reading the answer, a bot did not know its race
    and left it open (joinable, with a creator who was gone): it now waits a little for the
    answer and leaves."""
    bot = Bot(server_url, "maker", make_strategy("greedy"))
    lister = Bot(server_url, "lister", make_strategy("greedy"))
    await bot.connect()
    await lister.connect()
    try:
        creating = asyncio.create_task(bot.create("klondike", 2, 600))
        await eventually(lambda: bot.create_sent, what="the create sent")
        creating.cancel()  # stopped: the answer is read by nobody
        with contextlib.suppress(asyncio.CancelledError):
            await creating
        await _leave_on_stop([bot], None)
        said = capsys.readouterr().out
        assert said.startswith("stopped: left race r"), said
        assert await first_open_race(lister) is None
    finally:
        await bot.close()
        await lister.close()


async def test_every_stuck_bot_says_so(server_url: str, tmp_path: Path) -> None:
    """`NAME: stuck` came only from a bot that asked its strategy before the server's word
    that its board was stuck (or, for the last bot in, the race's end) came: with a delay
    between moves, the word comes first, and no bot said it."""
    bots = await Child.start(
        tmp_path,
        *("bot", "--server", server_url, "--name", "jam", "--seed", "1", "--delay", "0.05"),
        # A deal on which all three bots get stuck within a few moves.
        *("--create", "klondike-book-1", "--game-number", "2", "--seats", "3", "--count", "3"),
    )
    try:
        assert await bots.finish(90) == 0
    finally:
        await bots.kill()
    ranks = [line for line in bots.lines if line[:2] in ("1.", "2.", "3.")]
    assert [line.split()[2] for line in ranks] == ["stuck"] * 3, bots.output
    assert sorted(line for line in bots.lines if line.endswith(": stuck")) == [
        "jam-1: stuck",
        "jam-2: stuck",
        "jam-3: stuck",
    ], bots.output


async def refusal_lines(tmp_path: Path, server_url: str, *options: str) -> tuple[str, str]:
    """What `solrace bot` (as `dan`) and `solrace play --plain` (as `carol`) say when the
    race of `options` refuses them (each one line; the bot's names the bot)."""
    said = []
    for command, name in (("bot", "dan"), ("play", "carol")):
        plain = ("--plain",) if command == "play" else ()
        child = await Child.start(
            tmp_path, command, "--server", server_url, "--name", name, *plain, *options
        )
        assert await child.finish() == 1, child.output
        said.append(child.lines[-1])
    return said[0], said[1]


async def test_bot_and_play_say_a_refused_join_the_same_way(
    alice: Session, server_url: str, tmp_path: Path
) -> None:
    """The same refusal in the same words (the bot said `dan: unknown_race: no live race ...`,
    `play` `no live race ... (unknown_race)`; only `play` said what to do about a private
    race's invite code or a race under way)."""
    private = await alice.create_race("klondike", 3, 120, invite_code="sekrit")
    started = await alice.create_race("klondike", 2, 120)
    bob = Bot(server_url, "bob", make_strategy("greedy"))
    await bob.connect()
    try:
        await bob.join(started)  # the race is full: it starts
        await eventually(lambda: alice.state.race(started).status == "running", what="started")
        for options, said in (
            (("--race", "rnosuch"), "no live race 'rnosuch' (unknown_race)"),
            (
                ("--race", private, "--invite", "wrong"),
                "this race needs its invite code (a wrong invite code) (bad_invite); check "
                "the --invite code",
            ),
            (
                ("--race", private),
                "this race needs its invite code (no invite code) (bad_invite); give it with "
                "--invite CODE",
            ),
            (
                ("--race", started),
                f"the race is under way: only a race not started yet can be joined (solrace "
                f"watch {started} --server {server_url} while it runs, solrace replay {started} "
                f"--server {server_url} once it has finished) (wrong_status)",
            ),
        ):
            bot_line, play_line = await refusal_lines(tmp_path, server_url, *options)
            assert (bot_line, play_line) == (f"solrace bot: dan: {said}", f"solrace play: {said}")
    finally:
        await bob.close()


async def test_a_bot_whose_kept_token_is_refused_says_so_as_play_does(
    server_url: str, tmp_path: Path
) -> None:
    """A kept token the server refuses (its secret changed) was dropped without a word: the
    bot said only that its name was taken. It says it as `solrace play` does."""
    first = await Child.start(tmp_path, "bot", "--server", server_url, "--name", "dan")
    assert await first.finish() == 1, first.output  # no open race: dan's token is kept
    kept = tmp_path / "child-config" / "bots.json"
    saved = json.loads(kept.read_text())
    saved[server_url]["dan"]["token"] += "forged"
    kept.write_text(json.dumps(saved))
    again = await Child.start(tmp_path, "bot", "--server", server_url, "--name", "dan")
    assert await again.finish() == 1, again.output
    assert again.lines[0].startswith(
        f"solrace bot: the server at {server_url} refused the token saved for 'dan' (the "
        "server closed the connection: the server refused this player's token (4001: bad "
        "token)), and the name 'dan' is taken there: the server's secret may have changed; "
        "this bot plays as 'dan-"
    ), again.output


async def test_a_bot_whose_kept_token_is_refused_and_name_free_is_a_new_player_there(
    server_url: str, tmp_path: Path
) -> None:
    """The server at the URL forgot the bot (a new one there: another secret, another store)
    and nobody has its name: the bot says so, plays as the name asked for with a new token
    that it keeps, and the next run comes back with that token without a word."""
    first = await Child.start(tmp_path, "bot", "--server", server_url, "--name", "dan")
    assert await first.finish() == 1, first.output  # no open race: dan's token is kept
    other = App(server_settings(tmp_path / "other", secret="another-secret-of-the-url"))
    await other.start()
    try:
        other_url = url_of(other)
        kept = tmp_path / "child-config" / "bots.json"
        saved = json.loads(kept.read_text())
        saved[other_url] = saved.pop(server_url)  # the server at that URL is a new one
        kept.write_text(json.dumps(saved))
        old_token = saved[other_url]["dan"]["token"]
        again = await Child.start(tmp_path, "bot", "--server", other_url, "--name", "dan")
        assert await again.finish() == 1, again.output
        assert again.lines == [
            f"solrace bot: the server at {other_url} refused the token saved for 'dan' (the "
            "server closed the connection: the server refused this player's token (4001: bad "
            "token)); 'dan' is now a new player there (new token saved in "
            f"{kept})",
            "solrace bot: no open race to join (use --create)",
        ], again.output
        new = json.loads(kept.read_text())[other_url]["dan"]
        assert new["name"] == "dan" and new["token"] != old_token, new
        third = await Child.start(tmp_path, "bot", "--server", other_url, "--name", "dan")
        assert await third.finish() == 1, third.output
        assert third.lines == ["solrace bot: no open race to join (use --create)"], third.output
        assert json.loads(kept.read_text())[other_url]["dan"] == new
    finally:
        await other.stop()
