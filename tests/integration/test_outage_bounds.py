"""What a node keeps and waits for while its store is away: the connection changes of a racer
who keeps reconnecting during an outage stay bounded (server/runtime.py
`RaceRuntime.keep_unstored`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId
from solrace.server.runtime import RaceRuntime
from tests.integration.helpers import start_race
from tests.integration.test_audit_reconnect_outage import node, shows, write_locked
from tests.integration.wsclient import WAIT_S, connect_client
from tests.waiting import eventually

#: Reconnections of one racer while the store refuses writes.
RECONNECTS = 12


def pending(runtime: RaceRuntime) -> int:
    """How many connection changes wait for the store (all of one racer's, here)."""
    return len(runtime.unstored_connections)


async def reconnect_and_leave(app: App, url: str, token: str, player_id: str) -> None:
    """The racer connects again (marked back: refused) and its connection closes (marked away:
    refused), each waited for until the hub is done with it."""
    again = await connect_client(url, token=token)
    await eventually(lambda: player_id in app.hub.players, within=WAIT_S)
    await again.close()
    await eventually(lambda: player_id not in app.hub.players, within=WAIT_S)
    await eventually(lambda: not app.transport.finishing, within=WAIT_S)


async def test_a_racer_reconnecting_through_an_outage_keeps_its_latest_state_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A racer connects and leaves again and again while the store refuses writes: at most
    its latest coming back and the leaving after it wait (every change was kept, two per
    reconnection, however long the outage). Once the store takes writes, the race has the
    racer away since its last connection closed, not since the first (the changes applied
    in order marked it away at its first close: its comings back in between found no
    connection open by then and did nothing, so the grace ran from the first close)."""
    async with node(tmp_path, grace_s=600) as app:
        url = f"ws://127.0.0.1:{app.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob])
        assert alice.welcome is not None and alice.welcome.token is not None
        token, player_id = alice.welcome.token, alice.player_id
        runtime = app.hub.races[race_id]
        with write_locked(tmp_path / "solrace.sqlite3"):
            await alice.close()
            await eventually(lambda: "not marked away" in caplog.text, within=WAIT_S)
            for _ in range(RECONNECTS):
                await reconnect_and_leave(app, url, token, player_id)
                assert 1 <= pending(runtime) <= 2
            last_close = app.hub.clock()
            await reconnect_and_leave(app, url, token, player_id)
            assert pending(runtime) <= 2
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        stored = await app.store.get_race(race_id)
        assert stored is not None
        [away] = [r for r in stored.racers if r.player_id == player_id]
        assert not away.connected
        assert away.disconnected_at_ms is not None and away.disconnected_at_ms >= last_close
        await eventually(shows(bob, player_id, False), within=WAIT_S)
        await bob.close()


async def test_a_racer_reconnecting_through_an_outage_and_staying_is_stored_connected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same racer stays on its last connection: one change waits (its coming back), and
    once the store takes writes the race has it connected through that connection."""
    async with node(tmp_path) as app:
        url = f"ws://127.0.0.1:{app.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob])
        assert alice.welcome is not None and alice.welcome.token is not None
        token, player_id = alice.welcome.token, alice.player_id
        runtime = app.hub.races[race_id]
        with write_locked(tmp_path / "solrace.sqlite3"):
            await alice.close()
            await eventually(lambda: "not marked away" in caplog.text, within=WAIT_S)
            for _ in range(RECONNECTS):
                await reconnect_and_leave(app, url, token, player_id)
            staying = await connect_client(url, token=token)
            await eventually(lambda: player_id in app.hub.players, within=WAIT_S)
            assert pending(runtime) == 1
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        stored = await app.store.get_race(race_id)
        assert stored is not None
        [back] = [r for r in stored.racers if r.player_id == player_id]
        assert back.connected
        assert back.holder == app.hub.holder_of(app.hub.players[PlayerId(player_id)])
        await eventually(shows(bob, player_id, True), within=WAIT_S)
        for each in (staying, bob):
            await each.close()
