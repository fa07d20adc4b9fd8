"""Bots keep their identities (`bot_identities`): the next run is the same player, so runs of
bots do not use up the server's budget of new names for their address."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.client.bot_identities import bots_file, free_names, hold
from solrace.client.bot_names import default_bot_name, held_names
from solrace.client.bots import Bot
from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId

from .conftest import server_settings
from .process import Child

URL = "ws://example.invalid:8765"


def test_a_name_is_held_by_one_holder_at_a_time() -> None:
    first = hold(URL, "bot-1")
    assert first is not None
    assert hold(URL, "bot-1") is None  # another open file: another program, to the lock
    assert hold("ws://other.invalid:8765", "bot-1") is not None  # another server's bot-1
    first.release()
    again = hold(URL, "bot-1")
    assert again is not None
    again.release()


def test_default_names_pass_over_the_held_ones() -> None:
    taken = hold(URL, "bot-1")
    assert taken is not None
    names = free_names(URL, default_bot_name, 2)
    assert [n.asked for n in names] == ["bot-2", "bot-3"]
    for held in [taken, *names]:
        held.release()


def test_what_is_kept_of_a_bot() -> None:
    held = hold(URL, "alice")
    assert held is not None
    assert held.saved() is None
    key = held.registration_key("alice-3f2a")
    saved = held.saved()
    assert saved is not None and (saved.name, saved.key, saved.token) == ("alice-3f2a", key, None)
    held.save("alice-3f2a", "v1.p.sig")
    assert json.loads(bots_file().read_text()) == {
        URL: {"alice": {"name": "alice-3f2a", "token": "v1.p.sig"}}
    }
    held.forget()
    assert held.saved() is None
    assert json.loads(bots_file().read_text()) == {}
    held.release()


@pytest.fixture
async def stingy_server(tmp_path: Path) -> AsyncIterator[str]:
    """A server that lets one address register two names, and no more for hours."""
    app = App(server_settings(tmp_path / "server", register_burst=2, register_per_s=0.0001))
    await app.start()
    try:
        yield f"ws://127.0.0.1:{app.port}"
    finally:
        await app.stop()


async def _run_bots(url: str, base: str | None, count: int) -> list[tuple[str, PlayerId]]:
    """Connect the bots `solrace bot --name base --count count` makes, then close them."""
    bots = [
        Bot(url, name, make_strategy("greedy"), held=held)
        for name, held in held_names(url, base, count)
    ]
    try:
        for bot in bots:
            await bot.connect()
        found = []
        for bot in bots:
            assert bot.state.player_id is not None
            found.append((bot.name, bot.state.player_id))
        return found
    finally:
        for bot in bots:
            await bot.close()


async def test_runs_of_bots_come_back_as_the_same_players(stingy_server: str) -> None:
    first = await _run_bots(stingy_server, None, 2)
    assert [name for name, _ in first] == ["bot-1", "bot-2"]
    # Two new names were the address's whole budget: new players now would be refused.
    for _ in range(3):
        assert await _run_bots(stingy_server, None, 2) == first
    newcomer = Bot(stingy_server, "carol", make_strategy("greedy"))
    with pytest.raises(ConnectionFailedError, match="too many new names"):
        await newcomer.connect()


async def test_a_bot_whose_name_is_taken_keeps_its_suffixed_name(stingy_server: str) -> None:
    alice = Bot(stingy_server, "alice", make_strategy("greedy"))
    await alice.connect()
    try:
        [(name, player)] = await _run_bots(stingy_server, "alice", 1)
        assert name.startswith("alice-")
        assert await _run_bots(stingy_server, "alice", 1) == [(name, player)]
    finally:
        await alice.close()


async def test_a_refused_token_is_forgotten_and_the_name_asked_again(server_url: str) -> None:
    held = hold(server_url, "bot-1")
    assert held is not None
    held.save("bot-1", "v1.nobody.forged")  # a token the server never signed
    held.release()
    [(name, player)] = await _run_bots(server_url, None, 1)
    assert name == "bot-1"
    again = hold(server_url, "bot-1")
    assert again is not None
    saved = again.saved()
    again.release()
    assert saved is not None and saved.token is not None and player in saved.token


async def test_solrace_bot_plays_as_the_same_bot_each_run(server_url: str, tmp_path: Path) -> None:
    for _ in range(2):
        bots = await Child.start(
            tmp_path,
            "bot",
            "--server",
            server_url,
            "--create",
            "klondike",
            "--seats",
            "3",
            "--count",
            "2",
        )
        try:
            race_id = (await bots.expect("race r")).split()[1]
            bots.proc.send_signal(signal.SIGTERM)
            assert await bots.finish() == 143
        finally:
            await bots.kill()
        assert bots.lines[-1] == f"stopped: left race {race_id} (bot-2, bot-1)", (
            bots.output
        )  # creator last
        assert not any("taken" in line for line in bots.lines), bots.output
    kept = json.loads((tmp_path / "child-config" / "bots.json").read_text())
    assert sorted(kept[server_url]) == ["bot-1", "bot-2"]


async def test_a_bot_back_under_its_kept_suffix_says_so(server_url: str, tmp_path: Path) -> None:
    """The line on stderr names the name asked for and the one played as, on the run that
    got the suffix and on every run after it that comes back under it."""
    alice = Bot(server_url, "alice", make_strategy("greedy"))
    await alice.connect()
    said: list[str] = []
    try:
        for _ in range(2):
            bots = await Child.start(
                *(tmp_path, "bot", "--server", server_url, "--name", "alice"),
                *("--create", "klondike", "--seats", "3"),
            )
            try:
                said.append(await bots.expect("is taken"))
                await bots.expect("race r")
                bots.proc.send_signal(signal.SIGTERM)
                assert await bots.finish() == 143
            finally:
                await bots.kill()
    finally:
        await alice.close()
    prefix = f"solrace bot: the name 'alice' is taken on {server_url}: this bot plays as 'alice-"
    assert said[0].startswith(prefix) and said[1] == said[0], said


async def test_a_bot_killed_in_an_open_race_takes_its_seat_back_on_the_next_run(
    server_url: str, tmp_path: Path
) -> None:
    """The same bot comes back (its kept identity): its seat, kept for the grace period
    after a kill -9, was refused as `already_joined` and the run exited 1."""
    first = await Child.start(
        tmp_path, "bot", "--server", server_url, "--create", "klondike", "--seats", "3"
    )
    try:
        race_id = (await first.expect("race r")).split()[1]
        first.proc.send_signal(signal.SIGKILL)  # no leaving: the seat stays
        assert await first.finish() == -signal.SIGKILL
    finally:
        await first.kill()
    again = await Child.start(tmp_path, "bot", "--server", server_url)  # the first open race
    try:
        assert await again.expect("race r") == f"race {race_id}", again.output
        again.proc.send_signal(signal.SIGTERM)
        assert await again.finish() == 143
    finally:
        await again.kill()
    assert again.lines[-1] == f"stopped: left race {race_id} (bot-1)", again.output
