"""One node (SQLite) restarted while racers are away: how long they have to come back."""

from __future__ import annotations

from pathlib import Path

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import RacerState
from solrace.server.store import SqliteStore
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.test_audit_reconnect_outage import node, write_locked
from tests.integration.wsclient import WAIT_S, Client, connect_client
from tests.waiting import eventually

GRACE_S = 60.0


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def stored_as_away_since(app: App, race_id: RaceId, away_since_ms: int) -> None:
    """Rewrite the stopped node's record of the race as if its racers had left at
    `away_since_ms`: what a node down for that long leaves (a restart that took a while)."""
    store = SqliteStore(app.settings.data_dir / "solrace.sqlite3")
    await store.open()
    try:
        record = await store.get_race(race_id)
        assert record is not None
        racers = [
            racer.model_copy(update={"connected": False, "disconnected_at_ms": away_since_ms})
            for racer in record.racers
        ]
        changed = record.model_copy(update={"racers": racers})
        assert await store.save_race_if(changed, record)
    finally:
        await store.close()


async def test_racers_away_when_the_node_stopped_get_the_grace_period_after_the_restart(
    start_server: ServerFactory,
) -> None:
    """The node stops (SIGTERM: its clients are closed with 1012, so every racer is away)
    and comes back after longer than the grace period. The racers could not reconnect
    meanwhile: each has the grace period from the restart to come back, as a racer
    connected at the crash has. The grace counted from when they left made every one of
    them `gone` at the restart's first tick, and the race finished without them."""
    first = await start_server(grace_s=GRACE_S)
    alice = await connect_client(url_of(first), "alice")
    bob = await connect_client(url_of(first), "bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal"])
    assert alice.welcome is not None and alice.welcome.token is not None
    token = alice.welcome.token
    await first.stop()
    assert await alice.closed() == CloseCode.SERVICE_RESTART
    stopped = first.hub.clock()
    await stored_as_away_since(first, race_id, stopped - int(GRACE_S * 1000) - 1_000)

    restarting = first.hub.clock()
    again = await start_server(grace_s=GRACE_S)
    await again.hub.tick()  # whatever is due at the restart is applied now
    race = again.hub.races[race_id].race
    assert {racer.state for racer in race.racers.values()} == {RacerState.PLAYING}
    deadline = race.next_deadline()
    assert deadline is not None and deadline >= restarting + int(GRACE_S * 1000)

    back = await Client.open(url_of(again))
    welcome = await back.hello(token=token)
    assert welcome.active_races == [race_id]
    [ack] = await play(back, race_id, ["deal"], first_seq=2)
    assert ack.ply == 1
    await back.close()


async def test_after_a_crash_a_change_the_store_refuses_keeps_the_racers_away(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A restart marks every racer away, with the grace period from then. A change the store
    refused afterwards (here the marking back of the first racer to return) rolled the race
    back to the record as the crash left it, where the racers connected then were still
    connected: those who never came back were never put out, and the race waited for them
    until its time limit."""
    crashed = await ServerProcess.start(tmp_path)
    alice = await connect_client(crashed.url, "alice")
    bob = await connect_client(crashed.url, "bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal"])
    assert alice.welcome is not None and alice.welcome.token is not None
    await crashed.kill()
    for each in (alice, bob):
        await each.close()

    async with node(tmp_path, grace_s=GRACE_S) as again:
        with write_locked(tmp_path / "solrace.sqlite3"):
            back = await connect_client(url_of(again), token=alice.welcome.token)
            await eventually(lambda: "not marked back" in caplog.text, within=WAIT_S)
        runtime = again.hub.races[race_id]
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)

        later = again.hub.clock() + int(GRACE_S * 1000) + 1_000
        again.hub.clock = lambda: later  # bob has not come back within the grace period
        await again.hub.tick()
        states = {r.name: r.state for r in runtime.race.racers.values()}
        assert states == {"alice": RacerState.PLAYING, "bob": RacerState.GONE}
        await back.close()
