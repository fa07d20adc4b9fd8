"""What a node keeps and waits for while its store is away: the connection changes of a racer
who keeps reconnecting during an outage stay bounded (server/runtime.py
`RaceRuntime.keep_unstored`), and the noting of the token secret at each presence watch waits
on a hung store's Redis no longer than an announce waits on the broker's
(server/node_presence.py `_claim_secret`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from solrace.server.app import App
from solrace.server.node_presence import NodePresence
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.runtime import RaceRuntime
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import make_settings
from tests.integration.helpers import start_race
from tests.integration.test_audit_reconnect_outage import node, shows, write_locked
from tests.integration.wsclient import WAIT_S, Client, connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually, eventually_async

#: Reconnections of one racer while the store refuses writes.
RECONNECTS = 12


def pending(runtime: RaceRuntime) -> int:
    """How many connection changes wait for the store (all of one racer's, here)."""
    return len(runtime.unstored_connections)


@dataclass
class Racing:
    """alice racing bob on `app`, and what she needs to connect again."""

    app: App
    url: str
    bob: Client
    race_id: RaceId
    runtime: RaceRuntime
    token: str
    player_id: str

    async def reconnect_and_leave(self) -> None:
        """alice connects again (marked back: refused) and her connection closes (marked away:
        refused), each waited for until the hub is done with it."""
        app, player_id = self.app, self.player_id
        again = await connect_client(self.url, token=self.token)
        await eventually(lambda: player_id in app.hub.players, within=WAIT_S)
        await again.close()
        await eventually(lambda: player_id not in app.hub.players, within=WAIT_S)
        await eventually(lambda: not app.transport.finishing, within=WAIT_S)


@asynccontextmanager
async def alice_gone_in_an_outage(
    app: App, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> AsyncIterator[Racing]:
    """alice and bob race on `app`; then, for the block, the store's database (in `data_dir`)
    is write-locked, and alice's connection has closed in it (marking her away: refused)."""
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
    race_id = await start_race(alice, [bob])
    assert alice.welcome is not None and alice.welcome.token is not None
    runtime = app.hub.races[race_id]
    racing = Racing(app, url, bob, race_id, runtime, alice.welcome.token, alice.player_id)
    with write_locked(data_dir / "solrace.sqlite3"):
        await alice.close()
        await eventually(lambda: "not marked away" in caplog.text, within=WAIT_S)
        yield racing


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
        async with alice_gone_in_an_outage(app, tmp_path, caplog) as racing:
            runtime, player_id = racing.runtime, racing.player_id
            for _ in range(RECONNECTS):
                await racing.reconnect_and_leave()
                assert 1 <= pending(runtime) <= 2
            last_close = app.hub.clock()
            await racing.reconnect_and_leave()
            assert pending(runtime) <= 2
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        stored = await app.store.get_race(racing.race_id)
        assert stored is not None
        [away] = [r for r in stored.racers if r.player_id == player_id]
        assert not away.connected
        assert away.disconnected_at_ms is not None and away.disconnected_at_ms >= last_close
        await eventually(shows(racing.bob, player_id, False), within=WAIT_S)
        await racing.bob.close()


async def test_a_racer_reconnecting_through_an_outage_and_staying_is_stored_connected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same racer stays on its last connection: one change waits (its coming back), and
    once the store takes writes the race has it connected through that connection."""
    async with node(tmp_path) as app:
        async with alice_gone_in_an_outage(app, tmp_path, caplog) as racing:
            runtime, player_id = racing.runtime, racing.player_id
            for _ in range(RECONNECTS):
                await racing.reconnect_and_leave()
            staying = await connect_client(racing.url, token=racing.token)
            await eventually(lambda: player_id in app.hub.players, within=WAIT_S)
            assert pending(runtime) == 1
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        stored = await app.store.get_race(racing.race_id)
        assert stored is not None
        [back] = [r for r in stored.racers if r.player_id == player_id]
        assert back.connected
        assert back.holder == app.hub.holder_of(app.hub.players[PlayerId(player_id)])
        await eventually(shows(racing.bob, player_id, True), within=WAIT_S)
        for each in (staying, racing.bob):
            await each.close()


# --- a store's Redis that hangs, the broker's running -------------------------------------

#: Several nodes' presence, fast: an announce every 0.2 s, bounded by that.
NODE_TTL_S = 1.0
#: The store's own wait for each Redis reply (three tries a call): far longer than the test.
STORE_TIMEOUT_S = 60.0


def slow_store(app: App) -> None:
    """The node's store waits `STORE_TIMEOUT_S` for each reply of a silent Redis."""
    assert isinstance(app.store, RedisStore)
    app.store.timeout_s = STORE_TIMEOUT_S


def nodes_a_and_b(
    data_dir: Path, store: RedisServer, broker_url: str, **overrides: Any
) -> tuple[App, App]:
    """Nodes a and b, not started (data in `data_dir`/a and /b): the store on `store`, the
    broker at `broker_url`, presence with a ttl of `NODE_TTL_S`."""
    settings = {"store": store.url, "broker": broker_url, "node_ttl_s": NODE_TTL_S, **overrides}
    return (
        App(make_settings(data_dir / "a", **settings)),
        App(make_settings(data_dir / "b", **settings)),
    )


async def start_nodes(
    stack: contextlib.AsyncExitStack, node_a: App, node_b: App
) -> tuple[NodePresence, NodePresence]:
    """Starts both nodes, each stopped when `stack` closes; their presence watches."""
    for app in (node_a, node_b):
        await app.start()
        stack.push_async_callback(app.stop)
    presence_a, presence_b = node_a.hub.presence, node_b.hub.presence
    assert presence_a is not None and presence_b is not None
    return presence_a, presence_b


async def alive_until_ms(broker: aioredis.Redis, node_id: str) -> float:
    """Until when (ms) the broker has node `node_id` alive: its presence's score."""
    score = await broker.zscore("solrace:live:nodes", node_id)
    assert score is not None, f"the presence of node {node_id} ran out"
    return float(score)


async def announced_past(broker: aioredis.Redis, node_id: str, since_ms: float, ttls: int) -> None:
    """Waits until node `node_id` is alive `ttls` ttls past `since_ms`: it went on announcing."""

    async def announced_since() -> bool:
        return await alive_until_ms(broker, node_id) > since_ms + ttls * NODE_TTL_S * 1000

    await eventually_async(announced_since, within=WAIT_S, what="announces while the store hangs")


def said(caplog: pytest.LogCaptureFixture, text: str) -> Callable[[], bool]:
    """Whether a record `caplog` caught says `text`."""
    return lambda: any(text in record.getMessage() for record in caplog.records)


@pytest.mark.redis
async def test_a_hung_store_does_not_hold_up_the_presence_watch(
    tmp_path: Path,
    own_redis_server: RedisServer,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store on one Redis, the broker on another; the store's freezes (SIGSTOP:
    connections open, no answer). Each presence watch notes the token secret in the store
    after announcing the node: that waited on the store's own timeouts (three tries of
    `STORE_TIMEOUT_S` here; 5 s each by default, three times the default ttl), and no
    announce went out meanwhile: the node's presence ran out, and the other nodes take a
    node whose presence ran out for gone. It gives up after a fifth of the ttl, as an
    announce does, says so once, and the announces go on."""
    caplog.set_level(logging.WARNING, logger="solrace.server.node_presence")
    settings = make_settings(
        tmp_path / "node", store=own_redis_server.url, broker=redis_url, node_ttl_s=NODE_TTL_S
    )
    app = App(settings)
    slow_store(app)
    broker = aioredis.Redis.from_url(redis_url)
    await app.start()
    try:
        assert app.hub.presence is not None
        node_id = app.hub.presence.node_id
        with own_redis_server.frozen():
            froze_at = await alive_until_ms(broker, node_id)
            await announced_past(broker, node_id, froze_at, 2)
            failed = "noting this node's token secret in the store failed: no answer in time"
            await eventually(said(caplog, failed), within=WAIT_S)
        works = "noting this node's token secret in the store works again"
        await eventually(said(caplog, works), within=WAIT_S)
    finally:
        await app.stop()
        await broker.aclose()


# --- a store's Redis that refuses writes, the broker's running --------------------------------


@contextlib.contextmanager
def refusing_writes(server: RedisServer) -> Iterator[None]:
    """The store's Redis answers reads and refuses every write (NOREPLICAS: it wants a
    replica it does not have) inside the block, as a Redis that lost its replicas does."""
    with redis.Redis.from_url(server.url) as admin:
        admin.config_set("min-replicas-to-write", 1)
        try:
            yield
        finally:
            admin.config_set("min-replicas-to-write", 0)


def waiting_of(runtime: RaceRuntime, player_id: str) -> list[str]:
    """What the connection changes of `player_id` waiting for the store do."""
    return [u.what for u in runtime.unstored_connections if u.player_id == player_id]


@pytest.mark.redis
async def test_a_racer_marked_back_by_the_watch_who_leaves_while_the_store_refuses_stays_away(
    tmp_path: Path, own_redis_server: RedisServer, redis_url: str
) -> None:
    """Node b took node a for gone (a's announces stopped) and marked a's racers away; a,
    heard again, marks them back at its watch while the store refuses writes, and one of them
    leaves before the store takes writes again. Her leaving found her away in the race (the
    refused change was undone), changed nothing and did not wait; the watch's change, applied
    once the store took writes, then had her connected through her closed connection: never
    put out, however long she stayed away. Now it finds that connection closed and leaves her
    away; the racer still connected is stored connected."""
    node_a, node_b = nodes_a_and_b(tmp_path, own_redis_server, redis_url, grace_s=600)
    async with contextlib.AsyncExitStack() as stack:
        presence_a, presence_b = await start_nodes(stack, node_a, node_b)
        url = f"ws://127.0.0.1:{node_a.port}"
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        stack.push_async_callback(bob.close)
        race_id = await start_race(alice, [bob])
        runtime = node_a.hub.races[race_id]
        leaving, staying = alice.player_id, bob.player_id

        async def stored_connected() -> dict[str, bool]:
            record = await node_a.store.get_race(race_id)
            assert record is not None
            return {r.player_id: r.connected for r in record.racers}

        async def both_away() -> bool:
            return not any((await stored_connected()).values())

        await eventually(lambda: presence_a.node_id in presence_b._nodes_known, within=WAIT_S)
        await presence_a.give_up()  # a announces no more: b takes it for gone
        await eventually_async(both_away, within=WAIT_S, what="b marking a's racers away")
        copy = runtime.race.racers
        await eventually(lambda: not copy[PlayerId(leaving)].connected, within=WAIT_S)

        with refusing_writes(own_redis_server):
            presence_a.start()  # a is heard again, and marks its racers back: refused
            await eventually(lambda: waiting_of(runtime, leaving) == ["marked back"], within=WAIT_S)
            await alice.close()
            await eventually(lambda: leaving not in node_a.hub.players, within=WAIT_S)
            await eventually(lambda: not node_a.transport.finishing, within=WAIT_S)

        async def staying_back() -> bool:
            return (await stored_connected())[staying]

        await eventually_async(staying_back, within=WAIT_S, what="bob stored connected")
        await eventually(lambda: not runtime.unstored_connections, within=WAIT_S)
        assert await stored_connected() == {leaving: False, staying: True}


@pytest.mark.redis
async def test_a_racer_who_moves_to_another_node_and_leaves_while_the_store_refuses_is_put_away(
    tmp_path: Path, own_redis_server: RedisServer, redis_url: str
) -> None:
    """Alice plays on node b; while the store refuses writes she connects to node a (a marks
    her back: refused, it waits) and b hands her race over to a's connection (refused, it
    waits), and she leaves a. Her leaving on a found the race naming b's connection (a's
    coming back was undone), changed nothing and did not wait; b's handing over, applied once
    the store took writes, then had her connected through a's closed connection, for good:
    she was never put out. a's presence watch marks a racer away whom a race has connected
    through a closed connection of a."""
    node_a, node_b = nodes_a_and_b(tmp_path, own_redis_server, redis_url, grace_s=600)
    async with contextlib.AsyncExitStack() as stack:
        await start_nodes(stack, node_a, node_b)
        url_a, url_b = f"ws://127.0.0.1:{node_a.port}", f"ws://127.0.0.1:{node_b.port}"
        alice, bob = await connect_client(url_b, "alice"), await connect_client(url_b, "bob")
        stack.push_async_callback(bob.close)
        race_id = await start_race(alice, [bob])
        assert alice.welcome is not None and alice.welcome.token is not None
        player_id = PlayerId(alice.player_id)
        on_b = node_b.hub.races[race_id]

        with refusing_writes(own_redis_server):
            moved = await connect_client(url_a, token=alice.welcome.token)
            await eventually(lambda: player_id in node_a.hub.players, within=WAIT_S)
            await eventually(lambda: waiting_of(on_b, player_id) == ["handed over"], within=WAIT_S)
            on_a = node_a.hub.races[race_id]
            assert waiting_of(on_a, player_id) == ["marked back"]
            await moved.close()
            await eventually(lambda: player_id not in node_a.hub.players, within=WAIT_S)
            await eventually(lambda: not node_a.transport.finishing, within=WAIT_S)

        async def stored_away() -> bool:
            record = await node_a.store.get_race(race_id)
            assert record is not None
            [racer] = [r for r in record.racers if r.player_id == player_id]
            return not racer.connected and racer.disconnected_at_ms is not None

        await eventually(
            lambda: not on_a.unstored_connections and not on_b.unstored_connections,
            within=WAIT_S,
        )
        await eventually_async(stored_away, within=WAIT_S, what="alice stored away")
        await eventually(shows(bob, player_id, False), within=WAIT_S)


@pytest.mark.redis
async def test_a_hung_store_does_not_hold_up_the_presence_watch_of_a_node_finding_one_gone(
    tmp_path: Path,
    own_redis_server: RedisServer,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store on one Redis, which freezes, the broker on another. Node b stops announcing
    meanwhile: node a, finding it gone, lists the live races in the store and marks b's racer
    away. Each watch of a waited on that (the store's own timeouts, three tries of
    `STORE_TIMEOUT_S` here), with no announce sent: a's presence ran out, and the other nodes
    would take a for gone too. A watch waits a fifth of the ttl at most for that work, says
    so once, and the announces go on; once the store answers, b's racer is stored away."""
    caplog.set_level(logging.WARNING, logger="solrace.server.node_presence")
    node_a, node_b = nodes_a_and_b(tmp_path, own_redis_server, redis_url)
    slow_store(node_a)
    broker = aioredis.Redis.from_url(redis_url)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(broker.aclose)
        presence_a, presence_b = await start_nodes(stack, node_a, node_b)
        alice = await connect_client(f"ws://127.0.0.1:{node_a.port}", "alice")
        bob = await connect_client(f"ws://127.0.0.1:{node_b.port}", "bob")
        for each in (alice, bob):
            stack.push_async_callback(each.close)
        race_id = await start_race(alice, [bob])
        await eventually(lambda: presence_b.node_id in presence_a._nodes_known, within=WAIT_S)

        with own_redis_server.frozen():
            froze_at = await alive_until_ms(broker, presence_a.node_id)
            await presence_b.give_up()  # b announces no more: a finds it gone
            await announced_past(broker, presence_a.node_id, froze_at, 3)
            failed = "marking racers after a watch of the nodes failed: no answer in time"
            await eventually(said(caplog, failed), within=WAIT_S)

        async def bob_stored_away() -> bool:
            record = await node_a.store.get_race(race_id)
            assert record is not None
            return not {r.player_id: r.connected for r in record.racers}[bob.player_id]

        await eventually_async(bob_stored_away, within=WAIT_S, what="bob stored away")
