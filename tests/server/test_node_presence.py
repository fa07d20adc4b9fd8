"""Several nodes: a node that stops announcing itself (killed) is taken for gone, and the
racers it held are marked away by the nodes still alive, so their grace runs and they forfeit
unless they come back (server/hub.py `_watch_nodes`, broker `announce`)."""

from __future__ import annotations

from solrace.server.broker import MemoryBroker
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.protocol.messages import PROTOCOL_VERSION, CreateRace, Hello, JoinRace
from solrace.server.protocol.records import RacerState
from solrace.server.settings import Settings
from solrace.server.store import MemoryStore
from tests.server.sessions import RecordingSession

T0 = 1_700_000_000_000


async def test_the_racers_of_a_silent_node_are_marked_away_and_forfeit_after_the_grace() -> None:
    store, broker = MemoryStore(), MemoryBroker()
    await store.open()
    seconds = [0.0]
    broker.clock = lambda: seconds[0]
    settings = Settings(store="memory:", countdown_s=0, grace_s=30, node_ttl_s=5)
    doomed = Hub(store, settings, Metrics(), b"x" * 32, broker=broker)
    survivor = Hub(store, settings, Metrics(), b"x" * 32, broker=broker)
    for hub in (doomed, survivor):
        hub.clock = lambda: T0 + int(seconds[0] * 1000)
        await hub.tick()  # each announces itself
    alice, carol, dave = RecordingSession(1), RecordingSession(2), RecordingSession(3)
    bob = RecordingSession(4)
    for hub, session, name in (
        (doomed, alice, "alice"),
        (doomed, carol, "carol"),
        (doomed, dave, "dave"),
        (survivor, bob, "bob"),
    ):
        await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
    await doomed.handle(alice, CreateRace(game="klondike", seats=2, time_limit_s=600))
    (shared,) = doomed.races
    await survivor.handle(bob, JoinRace(race_id=shared))  # bob is held by the survivor
    await doomed.handle(carol, CreateRace(game="klondike", seats=2, time_limit_s=600))
    (only_doomed,) = set(doomed.races) - {shared}
    await doomed.handle(dave, JoinRace(race_id=only_doomed))  # a race the survivor never saw
    await doomed.tick()
    await survivor.tick()
    assert only_doomed not in survivor.races
    assert survivor.races[shared].race.racers[alice.player_id or ""].connected

    # The doomed node is killed: it says nothing more. Within the ttl nothing changes.
    seconds[0] = 4.0
    await survivor.tick()
    assert survivor.races[shared].race.racers[alice.player_id or ""].connected
    seconds[0] = 6.0
    await survivor.tick()
    racers = survivor.races[shared].race.racers
    assert not racers[alice.player_id or ""].connected
    assert racers[alice.player_id or ""].disconnected_at_ms == T0 + 6000
    assert racers[bob.player_id or ""].connected, "bob's node is alive"
    assert only_doomed in survivor.races, "the silent node's own races are taken up"
    alone = survivor.races[only_doomed].race.racers
    assert not any(r.connected for r in alone.values())

    seconds[0] = 6.0 + 30
    await survivor.tick()
    assert racers[alice.player_id or ""].state is RacerState.GONE
    assert racers[bob.player_id or ""].state is RacerState.PLAYING
    assert all(r.state is RacerState.GONE for r in alone.values())
    await survivor.stop()
    await doomed.stop()
    await store.close()


async def test_nodes_alive_are_those_that_announced_within_their_ttl() -> None:
    broker = MemoryBroker()
    seconds = [0.0]
    broker.clock = lambda: seconds[0]
    assert await broker.announce("a", 5000) == {"a"}
    seconds[0] = 3.0
    assert await broker.announce("b", 5000) == {"a", "b"}
    seconds[0] = 5.5
    assert await broker.announce("b", 5000) == {"b"}
