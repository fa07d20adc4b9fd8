"""Several nodes: a node that stops announcing itself (killed) is taken for gone, and the
racers it held are marked away by the nodes still alive, so their grace runs and they forfeit
unless they come back; a node whose announces only failed for a while marks its own racers
back; the progress a node found gone left unfolded is caught up from stored moves only
(server/node_presence.py `NodePresence.watch`, broker `announce`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import AsyncIterator

import pytest

from solrace.server.broker import (
    Announced,
    Broker,
    BrokerUnavailableError,
    MemoryBroker,
    RedisBroker,
    Subscription,
)
from solrace.server.hub import Hub
from solrace.server.node_presence import NodePresence
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
)
from solrace.server.protocol.records import MoveRecord, RacerState
from solrace.server.store import MemoryStore, StoreUnavailableError
from solrace.server.store.redis import RedisStore
from tests.redis_server import RedisServer
from tests.server.sessions import RecordingSession, opened, opened_broker, running_hub
from tests.server.sessions import two_nodes as two_nodes_on_redis
from tests.waiting import eventually

T0 = 1_700_000_000_000


class Nodes:
    """Two hubs (`a`, `b`) on one memory store and broker, with one clock (seconds) for both;
    the hubs are stopped, and the store closed, when `two_nodes` ends."""

    a: Hub
    b: Hub

    def __init__(self, stack: contextlib.AsyncExitStack) -> None:
        self.store, self.broker = MemoryStore(), MemoryBroker()
        self.seconds = 0.0
        self.broker.clock = lambda: self.seconds
        self._stack = stack

    async def hub(self, link: Broker) -> Hub:
        """A node reaching the shared broker through `link` (its own link, or the broker)."""
        return await self._stack.enter_async_context(
            running_hub(
                self.store,
                broker=link,
                clock=lambda: T0 + int(self.seconds * 1000),
                grace_s=30,
                node_ttl_s=5,
            )
        )

    async def watch(self, *hubs: Hub) -> None:
        for hub in hubs:
            assert hub.presence is not None
            await hub.presence.watch(hub.clock())

    async def race_of_two(
        self, first: Hub, second: Hub, names: tuple[str, str]
    ) -> tuple[RaceId, RecordingSession, RecordingSession]:
        one, two = RecordingSession(len(names[0])), RecordingSession(len(names[1]) + 100)
        await first.handle(one, Hello(protocol=PROTOCOL_VERSION, name=names[0]))
        await second.handle(two, Hello(protocol=PROTOCOL_VERSION, name=names[1]))
        before = set(first.races)
        await first.handle(one, CreateRace(game="klondike", seats=2, time_limit_s=600))
        (race_id,) = set(first.races) - before
        await second.handle(two, JoinRace(race_id=race_id))
        await first.tick()
        await second.tick()
        return race_id, one, two


@contextlib.asynccontextmanager
async def two_nodes() -> AsyncIterator[Nodes]:
    async with contextlib.AsyncExitStack() as stack:
        nodes = Nodes(stack)
        await stack.enter_async_context(opened(nodes.store))
        nodes.a, nodes.b = await nodes.hub(nodes.broker), await nodes.hub(nodes.broker)
        yield nodes


async def test_the_racers_of_a_silent_node_are_marked_away_and_forfeit_after_the_grace() -> None:
    async with two_nodes() as nodes:
        doomed, survivor = nodes.a, nodes.b
        await nodes.watch(doomed, survivor)
        shared, alice, bob = await nodes.race_of_two(doomed, survivor, ("alice", "bob"))
        only_doomed, _, _ = await nodes.race_of_two(doomed, doomed, ("carol", "dave"))
        assert only_doomed not in survivor.races
        racers = survivor.races[shared].race.racers
        assert racers[alice.player_id or PlayerId("")].connected

        # The doomed node is killed: it says nothing more. Within the ttl nothing changes.
        for second in (1.0, 2.0, 3.0, 4.0, 4.9):
            nodes.seconds = second
            await nodes.watch(survivor)
        assert racers[alice.player_id or PlayerId("")].connected
        nodes.seconds = 5.0
        await nodes.watch(survivor)
        assert not racers[alice.player_id or PlayerId("")].connected
        assert racers[alice.player_id or PlayerId("")].disconnected_at_ms == T0 + 5000
        assert racers[bob.player_id or PlayerId("")].connected, "bob's node is alive"
        assert only_doomed in survivor.races, "the silent node's own races are taken up"
        alone = survivor.races[only_doomed].race.racers
        assert not any(r.connected for r in alone.values())

        nodes.seconds = 5.0 + 30
        await survivor.tick()
        assert racers[alice.player_id or PlayerId("")].state is RacerState.GONE
        assert racers[bob.player_id or PlayerId("")].state is RacerState.PLAYING
        assert all(r.state is RacerState.GONE for r in alone.values())


async def test_a_node_stopping_on_purpose_is_gone_for_the_others_at_their_next_watch() -> None:
    """It withdraws its presence as it stops: the others act at once (here 1 s later), not
    once its last announce has run out (5 s)."""
    async with two_nodes() as nodes:
        leaving, staying = nodes.a, nodes.b
        for second in (0.0, 2.5, 5.0):  # a whole ttl of announces: the others may judge
            nodes.seconds = second
            await nodes.watch(leaving, staying)
        shared, alice, _ = await nodes.race_of_two(leaving, staying, ("alice", "bob"))
        racers = staying.races[shared].race.racers
        assert leaving.presence is not None
        await leaving.presence.stop()
        nodes.seconds = 6.0  # its announce at 5.0 would run to 10.0
        await nodes.watch(staying)
        assert not racers[alice.player_id or PlayerId("")].connected


class Counting(MemoryBroker):
    """Counts the withdraws it gets."""

    withdrawn = 0

    async def withdraw(self, node_id: str) -> None:
        self.withdrawn += 1
        await super().withdraw(node_id)


async def test_a_node_withdraws_once_and_only_after_it_announced() -> None:
    """A second stop (a node stopped by hand, then by its owner) withdrew again, on a broker
    already closed: an error that left the rest of the shutdown undone."""
    broker = Counting()
    async with running_hub(broker=broker, node_ttl_s=5) as hub:
        assert hub.presence is not None
        await hub.presence.stop()  # it never announced: nothing to withdraw
        assert broker.withdrawn == 0
        await hub.presence.watch(hub.clock())
        await hub.presence.stop()
        await hub.presence.stop()
        assert broker.withdrawn == 1


class Flaky(MemoryBroker):
    """A node's own link to the shared broker, whose announces fail while `away` is set."""

    def __init__(self, shared: MemoryBroker) -> None:
        super().__init__()
        self.shared = shared
        self.away = False

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        if self.away:
            raise BrokerUnavailableError("the link is down")
        return await self.shared.announce(node_id, ttl_ms)

    async def withdraw(self, node_id: str) -> None:
        await self.shared.withdraw(node_id)

    async def publish(self, channel: str, data: bytes) -> None:
        await self.shared.publish(channel, data)

    async def subscribe(self, channel: str) -> Subscription:
        return await self.shared.subscribe(channel)


async def test_a_node_whose_announces_failed_for_a_while_marks_its_racers_back() -> None:
    async with two_nodes() as nodes:
        blinking = Flaky(nodes.broker)
        nodes.a = await nodes.hub(blinking)
        await nodes.watch(nodes.a, nodes.b)
        race_id, alice, _ = await nodes.race_of_two(nodes.a, nodes.b, ("alice", "bob"))
        blinking.away = True
        for second in range(1, 9):  # a's announces fail for 8 s; b takes it for gone
            nodes.seconds = float(second)
            await nodes.watch(nodes.a, nodes.b)
        racers = nodes.b.races[race_id].race.racers
        assert not racers[alice.player_id or PlayerId("")].connected
        a_copy = nodes.a.races[race_id].race
        await eventually(
            lambda: not a_copy.racers[alice.player_id or PlayerId("")].connected,
            within=5,
            what="a hearing b's change",
        )

        blinking.away = False
        nodes.seconds = 9.0
        await nodes.watch(nodes.a)  # a is heard again and says alice is connected to it
        mine = nodes.a.races[race_id].race.racers[alice.player_id or PlayerId("")]
        assert mine.connected and mine.holder == nodes.a.holder_of(alice)
        # b, judging again, finds alice's node alive and leaves her be; her grace never ends.
        for second in range(10, 50, 1):
            nodes.seconds = float(second)
            await nodes.watch(nodes.a, nodes.b)
            await nodes.b.tick()
        stored = await nodes.store.get_race(race_id)
        assert stored is not None
        assert {r.name: (r.state, r.connected) for r in stored.racers} == {
            "alice": (RacerState.PLAYING, True),
            "bob": (RacerState.PLAYING, True),
        }


async def test_nobody_is_judged_before_announces_have_gone_through_for_a_whole_ttl() -> None:
    """After its own outage (or a Redis that forgot every node), a node waits one ttl, so
    every live node has announced again, before it takes anyone for gone."""
    async with two_nodes() as nodes:
        blinking = Flaky(nodes.broker)
        nodes.b = await nodes.hub(blinking)
        await nodes.watch(nodes.a, nodes.b)
        race_id, alice, _ = await nodes.race_of_two(nodes.a, nodes.b, ("alice", "bob"))
        blinking.away = True
        nodes.seconds = 20.0  # a long silence of both; the shared set forgot a
        await nodes.watch(nodes.b)
        blinking.away = False
        nodes.seconds = 21.0
        await nodes.watch(nodes.b)  # b sees only itself: a has not announced yet
        racers = nodes.b.races[race_id].race.racers
        assert racers[alice.player_id or PlayerId("")].connected, "judged too early"
        nodes.seconds = 22.0
        await nodes.watch(nodes.a, nodes.b)
        nodes.seconds = 27.0
        await nodes.watch(nodes.a, nodes.b)
        assert racers[alice.player_id or PlayerId("")].connected


async def test_nodes_alive_are_those_that_announced_within_their_ttl() -> None:
    broker = MemoryBroker()
    seconds = [0.0]
    broker.clock = lambda: seconds[0]
    assert await broker.announce("a", 5000) == Announced({"a"}, lost=False)
    seconds[0] = 3.0
    assert await broker.announce("b", 5000) == Announced({"a", "b"}, lost=False)
    seconds[0] = 5.5
    assert await broker.announce("b", 5000) == Announced({"b"}, lost=False)
    seconds[0] = 11.0
    assert await broker.announce("b", 5000) == Announced({"b"}, lost=False), "it ran out"


class Stalled(MemoryBroker):
    """A broker whose announce never answers (a Redis that stopped, a silent partition)."""

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        await asyncio.Event().wait()
        raise AssertionError("never answered")


async def test_an_announce_that_never_answers_gives_up_within_a_fifth_of_the_ttl() -> None:
    async with running_hub(broker=Stalled(), countdown_s=3.0, node_ttl_s=0.5) as hub:
        assert hub.presence is not None
        await asyncio.wait_for(hub.presence.watch(T0), timeout=5)  # 0.1 s, not forever
        assert hub.presence._clean_since_ms is None, "a failed announce judges nobody"


class StalledWithdraw(Stalled):
    async def withdraw(self, node_id: str) -> None:
        await asyncio.Event().wait()


async def test_an_announce_or_withdraw_without_an_answer_says_so_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = StalledWithdraw()
    async with running_hub(broker=broker, countdown_s=3.0, node_ttl_s=0.5) as hub:
        assert hub.presence is not None
        with caplog.at_level(logging.WARNING, "solrace.server"):
            await asyncio.wait_for(hub.presence.watch(T0), timeout=5)
        hub.presence._announced = True  # as after an announce that went through
        with caplog.at_level(logging.WARNING, "solrace.server"):
            await asyncio.wait_for(hub.presence.stop(), timeout=5)
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno == logging.WARNING] == [
        (
            "solrace.server.node_presence",
            "announcing this node's presence failed: no answer in time (said once until it "
            "works again)",
        ),
        (
            "solrace.server.node_presence",
            f"node {hub.node_id}: presence not withdrawn (it runs out): no answer in time",
        ),
    ]


class HeldMoves(MemoryStore):
    """The memory store, whose move writes wait for `go` while it is not set (`waiting`
    says one does), then fail as the store being away while `refusing`."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()
        self.go.set()
        self.waiting = asyncio.Event()
        self.refusing = False

    async def append_move(self, move: MoveRecord) -> None:
        if not self.go.is_set():
            self.waiting.set()
            await self.go.wait()
        if self.refusing:
            raise StoreUnavailableError("the store is away")
        await super().append_move(move)


async def test_a_gone_node_s_catch_up_leaves_a_move_being_stored_to_its_own_handler() -> None:
    """When a node is found gone, the races held here have their boards' progress stored if
    the race is behind them. A move played on its board but not stored yet (the store then
    refuses it, and it is taken back) is not counted: the race keeps the stored moves."""
    async with contextlib.AsyncExitStack() as stack:
        nodes = Nodes(stack)
        nodes.store = HeldMoves()
        await stack.enter_async_context(opened(nodes.store))
        nodes.a, nodes.b = await nodes.hub(nodes.broker), await nodes.hub(nodes.broker)
        doomed, survivor = nodes.a, nodes.b
        store = nodes.store
        for second in (0.0, 2.5, 5.0):  # a whole ttl of announces: the survivor may judge
            nodes.seconds = second
            await nodes.watch(doomed, survivor)
        race_id, carol, _ = await nodes.race_of_two(survivor, survivor, ("carol", "dave"))
        runtime = survivor.races[race_id]
        player = carol.player_id or PlayerId("")
        for seq in range(2):
            await survivor.handle(carol, MakeMove(race_id=race_id, seq=seq, move="deal"))
        store.go.clear()
        third = asyncio.create_task(
            survivor.handle(carol, MakeMove(race_id=race_id, seq=2, move="deal"))
        )
        await store.waiting.wait()  # played on the board, not stored (nor acknowledged) yet
        assert runtime.boards[player].game.ply == 3

        nodes.seconds = 11.0  # the doomed node said nothing since 5.0: gone
        await nodes.watch(survivor)
        store.refusing = True
        store.go.set()
        await third  # refused: taken back from the board
        assert runtime.boards[player].game.ply == 2
        store.refusing = False
        await survivor.keeper.progress.fold(runtime)

        assert runtime.race.racers[player].moves == 2
        stored = await store.get_race(race_id)
        assert stored is not None
        assert {r.name: r.moves for r in stored.racers} == {"carol": 2, "dave": 0}


async def test_a_node_on_a_loaded_event_loop_still_finds_a_silent_node_gone(
    redis_url: str,
) -> None:
    """Node A's loop is loaded: every turn takes 8% of the ttl (0.08 s of 1 s, a fifth being
    0.2 s). Node B announces once and falls silent (killed). A's announces are answered by
    Redis at once, but A reads an answer only a few turns later: taken for no answer in
    time, each made A judge nobody for a whole ttl, and its cancel dropped the connection, so
    the next announce, reconnecting first, was late too. A never found B gone."""
    async with two_nodes_on_redis(redis_url, node_ttl_s=1.0) as (node_a, node_b):
        assert node_a.presence is not None and node_b.presence is not None
        await node_b.presence.watch(node_b.clock())  # b's one announce
        found = asyncio.Event()
        node_a.presence.gone_hooks.append(found.set)

        async def load() -> None:
            while not found.is_set():
                busy_until = time.perf_counter() + 0.08
                while time.perf_counter() < busy_until:
                    pass  # the loop's work, taking this turn
                await asyncio.sleep(0)

        loading = asyncio.create_task(load())
        node_a.presence.start()
        try:
            await asyncio.wait_for(found.wait(), timeout=60)  # ~5 s seen; room for a busy CI
        finally:
            found.set()
            await loading


@pytest.mark.redis
async def test_a_redis_restarted_without_its_data_gets_no_live_node_judged_gone(
    own_redis_server: RedisServer, redis_url: str
) -> None:
    """The broker's Redis restarts between two announces and forgets every node (no AOF); the
    races are kept (the store is another Redis here). Node A, whose announces had gone through
    for a whole ttl, announced first: the broker retried it on a new connection (or the pool
    reconnected) with no error to tell, so A took B for gone, bob's racer marked away, while B
    was alive and announced again a fifth of the ttl later. A's announce now says its own
    presence was lost before its time was up, and A waits one more ttl of announces before it
    judges: B is heard, nobody is gone. A node silent after that (B stopping) is still found
    gone."""
    broker_url = own_redis_server.url
    async with (
        opened(RedisStore(redis_url)) as store,
        opened_broker(RedisBroker(broker_url)) as link_a,
        opened_broker(RedisBroker(broker_url)) as link_b,
        running_hub(store, broker=link_a, node_ttl_s=5, grace_s=30) as node_a,
        running_hub(store, broker=link_b, node_ttl_s=5, grace_s=30) as node_b,
    ):
        presence_a, presence_b = node_a.presence, node_b.presence
        assert presence_a is not None and presence_b is not None
        gone: list[int] = []
        presence_a.gone_hooks.append(lambda: gone.append(1))
        start = node_a.clock()

        async def watch(seconds: float, *presences: NodePresence) -> None:
            for presence in presences:  # a clock of the test's, Redis's own for the ttl
                await presence.watch(start + int(seconds * 1000))

        await watch(0, presence_b, presence_a)
        alice, bob = RecordingSession(1), RecordingSession(2)
        await node_a.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        await node_b.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
        await node_a.handle(alice, CreateRace(game="klondike", seats=2, time_limit_s=600))
        (race_id,) = node_a.races
        await node_b.handle(bob, JoinRace(race_id=race_id))
        await watch(5, presence_b, presence_a)  # a whole ttl of announces: A judges
        assert not gone

        own_redis_server.kill()
        shutil.rmtree(own_redis_server.folder / "appendonlydir")
        own_redis_server.start()

        await watch(6, presence_a)  # A first: the set holds A alone
        await watch(6, presence_b)
        for second in range(7, 12):
            await watch(second, presence_a, presence_b)
        assert not gone, "a live node was judged gone"
        stored = await store.get_race(race_id)
        assert stored is not None
        assert {r.name: r.connected for r in stored.racers} == {"alice": True, "bob": True}

        await presence_b.stop()  # withdrawn: gone at A's next watch
        await watch(12, presence_a)
        assert gone
