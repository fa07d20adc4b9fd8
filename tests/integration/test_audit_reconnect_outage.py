"""A racer's connection coming or going while the store refuses writes (SQLite locked by
another process past the store's busy timeout): the race learns of it once the store takes
writes again."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.protocol.messages import RaceSnapshot, RaceUpdate
from solrace.server.store import SqliteStore
from tests.integration.conftest import make_settings
from tests.integration.helpers import start_race
from tests.integration.wsclient import WAIT_S, Client, connect_client
from tests.waiting import eventually

#: How long the node's store waits for a lock another process holds (5 s by default).
BUSY_TIMEOUT_S = 0.05


@asynccontextmanager
async def node(data_dir: Path, **overrides: Any) -> AsyncIterator[App]:
    """A node on SQLite in `data_dir` whose store gives up on a lock after `BUSY_TIMEOUT_S`,
    stopped however the test ends."""
    app = App(make_settings(data_dir, **overrides))
    assert isinstance(app.store, SqliteStore)
    app.store.busy_timeout_s = BUSY_TIMEOUT_S
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@contextmanager
def write_locked(database: Path) -> Iterator[None]:
    """Another process's write lock on the database (an operator's `sqlite3` session, a
    backup tool), held for the block."""
    holder = sqlite3.connect(database, isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def shows(client: Client, player_id: str, connected: bool) -> Callable[[], bool]:
    """Whether `client` has been told that the racer `player_id` is connected (or not): by
    a `race_update`, or by a snapshot (which a race's session gets instead of its events
    after a change the store refused)."""

    def told() -> bool:
        return any(
            isinstance(m, RaceUpdate | RaceSnapshot)
            and any(r.player_id == player_id and r.connected is connected for r in m.race.racers)
            for m in client.inbox
        )

    return told


async def test_a_racer_back_while_the_store_refused_writes_is_marked_back_once_it_takes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Marking a racer back on its hello is a write; one the store refused was only logged,
    so the racer, connected and playing, stayed away in its race and was put out as `gone`
    after the grace period."""
    async with node(tmp_path) as app:
        url = f"ws://127.0.0.1:{app.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob])
        assert alice.welcome is not None and alice.welcome.token is not None
        await alice.close()
        await eventually(shows(bob, alice.player_id, False), within=WAIT_S)
        bob.inbox.clear()
        with write_locked(tmp_path / "solrace.sqlite3"):
            back = await connect_client(url, token=alice.welcome.token)
            assert back.welcome is not None and back.welcome.active_races == [race_id]
            await eventually(lambda: "not marked back" in caplog.text, within=WAIT_S)
        await eventually(shows(bob, alice.player_id, True), within=WAIT_S)
        stored = await app.store.get_race(race_id)
        assert stored is not None
        assert {r.player_id: r.connected for r in stored.racers}[alice.player_id]
        for each in (back, bob):
            await each.close()


async def test_a_racer_gone_while_the_store_refused_writes_is_marked_away_once_it_takes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same for a racer whose connection closed: it stayed connected in its race, whose
    grace period then never started (the race waited for it until its time limit)."""
    async with node(tmp_path) as app:
        url = f"ws://127.0.0.1:{app.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob])
        with write_locked(tmp_path / "solrace.sqlite3"):
            await alice.close()
            await eventually(lambda: "not marked away" in caplog.text, within=WAIT_S)
        await eventually(shows(bob, alice.player_id, False), within=WAIT_S)
        stored = await app.store.get_race(race_id)
        assert stored is not None
        [away] = [r for r in stored.racers if r.player_id == alice.player_id]
        assert not away.connected and away.disconnected_at_ms is not None
        await bob.close()


async def test_a_racer_back_and_gone_again_while_the_store_refused_writes_is_marked_away(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A racer's new connection replaced its old one (a client reconnecting) and closed in
    turn while the store refused writes: neither marking went in then, and once the store
    took them the race still named the old connection as the racer's, connected, so its
    grace period never started."""
    async with node(tmp_path) as app:
        url = f"ws://127.0.0.1:{app.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob])
        assert alice.welcome is not None and alice.welcome.token is not None
        runtime = app.hub.races[race_id]
        with write_locked(tmp_path / "solrace.sqlite3"):
            back = await connect_client(url, token=alice.welcome.token)  # alice's closes: 4003
            await eventually(lambda: "not marked back" in caplog.text, within=WAIT_S)
            await eventually(lambda: alice.player_id in app.hub.players, within=WAIT_S)
            await back.close()
            await eventually(lambda: alice.player_id not in app.hub.players, within=WAIT_S)
            await eventually(lambda: not app.transport.finishing, within=WAIT_S)
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        stored = await app.store.get_race(race_id)
        assert stored is not None
        [away] = [r for r in stored.racers if r.player_id == alice.player_id]
        assert not away.connected and away.disconnected_at_ms is not None
        await eventually(shows(bob, alice.player_id, False), within=WAIT_S)
        for each in (alice, bob):
            await each.close()
