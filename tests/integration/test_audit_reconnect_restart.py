"""One node (SQLite) restarted while racers are away: how long they have to come back."""

from __future__ import annotations

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import RacerState
from solrace.server.store import SqliteStore
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.wsclient import Client, connect_client

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
