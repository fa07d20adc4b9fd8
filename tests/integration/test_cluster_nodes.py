"""Several nodes serving one race at the same time, on a real Redis: a player on node A, an
opponent on node B and a spectator on node C see the same events in the same order; a
transition two nodes attempt happens once; a node killed mid-race, Redis restarted mid-race
and a spectator that stops reading leave the race going.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from solrace.engine import deal
from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    GetReplay,
    Hello,
    JoinRace,
    ListRaces,
    MakeMove,
    MoveAck,
    MoveRejected,
    Progress,
    RaceFinished,
    RaceList,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    Replay,
    Resign,
    Sync,
    Watch,
)
from solrace.server.protocol.records import RaceStatus
from solrace.server.protocol.replay import verify_replay
from solrace.server.startup_errors import StartupError
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race, play, seat_and_start, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import WAIT_S, Client
from tests.redis_server import RedisServer
from tests.waiting import eventually

pytestmark = pytest.mark.redis

EVENTS = (RaceUpdate, RaceStarted, Progress, RaceFinished)


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., Awaitable[Client]]]:
    opened: list[Client] = []

    async def open_client(url: str, name: str | None = None, token: str | None = None) -> Client:
        client = await Client.open(url)
        opened.append(client)
        await client.hello(name, token)
        return client

    yield open_client
    for client in opened:
        await client.close()


def url(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


def events_of(client: Client) -> list[Any]:
    return [m for m in client.received if isinstance(m, EVENTS)]


def assert_in_order(events: list[Any], first: int) -> None:
    assert [e.version for e in events] == list(range(first, first + len(events)))


def endless_number(moves: int) -> str:
    """A Klondike deal on which `moves` stock clicks keep the board neither won nor stuck."""
    for number in range(1, 200):
        game = deal("klondike", str(number))
        for _ in range(moves):
            game.play("deal")
            if game.is_won() or game.is_stuck():
                break
        else:
            return str(number)
    raise AssertionError("no endless deal found")


async def test_three_nodes_see_one_race_s_events_in_the_same_order(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    # Every progress event sent at once (not batched), so every version reaches everyone.
    node_a, node_b, node_c = [await redis_nodes(redis_url, progress_interval_s=0) for _ in range(3)]
    alice = await clients(url(node_a), "alice")
    bob = await clients(url(node_b), "bob")
    carol = await clients(url(node_c))  # an anonymous spectator
    race_id = await create_race(alice, seats=2)
    await carol.send(Watch(race_id=race_id))
    snapshot = await carol.expect(RaceSnapshot)
    await seat_and_start(race_id, [bob], [alice, bob])
    # Both racers move at once, each on its own node.
    await asyncio.gather(
        play(alice, race_id, ["deal"] * 6), play(bob, race_id, ["deal"] * 6, first_seq=10)
    )
    await alice.send(Resign(race_id=race_id))
    await bob.expect(
        Progress,
        lambda m: m.progress.player_id == alice.player_id and m.progress.state == "resigned",
    )
    await bob.send(Resign(race_id=race_id))
    finals = [await c.expect(RaceFinished) for c in (alice, bob, carol)]
    assert finals[0] == finals[1] == finals[2]

    seen = {
        c.player_id if c.welcome and c.welcome.player_id else "carol": events_of(c)
        for c in (alice, bob, carol)
    }
    assert_in_order(seen[alice.player_id], 1)
    assert_in_order(seen["carol"], snapshot.version + 1)
    assert_in_order(seen[bob.player_id], seen[bob.player_id][0].version)
    by_version = {e.version: e for e in seen[alice.player_id]}
    for events in seen.values():  # the same event under each version, everywhere
        assert all(by_version[e.version] == e for e in events)
    progress = [e for e in seen["carol"] if isinstance(e, Progress)]
    assert {p.progress.player_id for p in progress if p.progress.moves == 6} == {
        alice.player_id,
        bob.player_id,
    }
    # Every node's copy agrees with the store.
    record = await node_a.store.get_race(race_id)
    assert record is not None and record.status is RaceStatus.FINISHED
    assert record.version == finals[0].version
    assert sum(isinstance(e, RaceFinished) for e in record.events) == 1


class FakeClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


async def test_two_nodes_timing_out_one_race_produce_one_result(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    # Tickers that never fire on their own: the test drives both nodes' clocks and ticks.
    node_a = await redis_nodes(redis_url, tick_s=3600.0)
    node_b = await redis_nodes(redis_url, tick_s=3600.0)
    clock = FakeClock(node_a.hub.clock())
    node_a.hub.clock = node_b.hub.clock = clock
    alice = await clients(url(node_a), "alice")
    bob = await clients(url(node_b), "bob")
    race_id = await create_race(alice, seats=2, time_limit_s=5)
    await bob.send(JoinRace(race_id=race_id))
    await bob.expect(RaceUpdate, lambda m: m.race.status == "countdown")
    await alice.expect(RaceUpdate, lambda m: m.race.status == "countdown")

    await asyncio.gather(node_a.hub.tick(), node_b.hub.tick())  # both start it: one does
    for each in (alice, bob):
        await each.expect(RaceStarted)
        await each.expect(Board, lambda m, c=each: m.player_id == c.player_id)
    await play(alice, race_id, ["deal"])
    await bob.expect(Progress, lambda m: m.progress.moves == 1)

    clock.now += 6_000  # past the time limit on both nodes
    await asyncio.gather(node_a.hub.tick(), node_b.hub.tick())
    finished = [await each.expect(RaceFinished) for each in (alice, bob)]
    assert finished[0] == finished[1]
    assert [r.state for r in finished[0].results] == ["timed_out", "timed_out"]
    record = await node_b.store.get_race(race_id)
    assert record is not None and record.status is RaceStatus.FINISHED
    assert sum(isinstance(e, RaceStarted) for e in record.events) == 1
    assert sum(isinstance(e, RaceFinished) for e in record.events) == 1
    for node in (node_a, node_b):
        await node.hub.tick()  # ticking again changes nothing
    again = await node_a.store.get_race(race_id)
    assert again == record
    for each in (alice, bob):
        assert sum(isinstance(m, RaceFinished) for m in each.received) == 1


async def test_a_killed_node_s_players_carry_on_at_a_surviving_node(
    redis_nodes: ServerFactory,
    clients: Callable[..., Awaitable[Client]],
    redis_url: str,
    tmp_path: Path,
) -> None:
    doomed = await ServerProcess.start(tmp_path / "doomed", "--redis", redis_url)
    try:
        survivor = await redis_nodes(redis_url)
        alice = await clients(doomed.url, "alice")
        bob = await clients(url(survivor), "bob")
        carol = await clients(url(survivor))
        race_id = await create_race(alice, seats=2)
        await seat_and_start(race_id, [bob], [alice, bob])
        await carol.send(Watch(race_id=race_id))
        await carol.expect(RaceSnapshot)
        acked = await play(alice, race_id, ["deal", "deal"])
        await play(bob, race_id, ["deal"])
        await carol.expect(
            Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 2
        )
        assert alice.welcome is not None and alice.welcome.token is not None
        token = alice.welcome.token

        await doomed.kill()  # kill -9 mid-race: nothing flushed on the way out
        assert await alice.closed() is not None
        await play(bob, race_id, ["deal"], first_seq=2)  # the other node goes on meanwhile

        back = await clients(url(survivor), token=token)
        assert back.welcome is not None and back.welcome.active_races == [race_id]
        # The record's history lets any node serve the missed events (no snapshot needed).
        await back.send(Sync(race_id=race_id, epoch=snapshot_epoch(carol), since_version=0))
        await back.expect(RaceStarted)
        assert not any(isinstance(m, RaceSnapshot) for m in back.received)
        assert (await back.expect(Board, lambda m: m.player_id == back.player_id)).ply == 2
        # The last acknowledged move is stored once: resending it is a duplicate.
        await back.send(MakeMove(race_id=race_id, seq=2, move="deal"))
        again = await back.expect(MoveAck, lambda m: m.seq == 2)
        assert again.duplicate and again.ply == acked[-1].ply
        [ack] = await play(back, race_id, ["deal"], first_seq=3)
        assert ack.ply == 2 and not ack.duplicate
        await carol.expect(
            Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 3
        )
        for each in (back, bob):
            await each.send(Resign(race_id=race_id))
        await carol.expect(RaceFinished)
        await back.send(GetReplay(race_id=race_id))
        replay = (await back.expect(Replay)).replay
        assert verify_replay(replay).is_valid
        assert {r.player_id: len(r.moves) for r in replay.racers} == {
            alice.player_id: 3,
            bob.player_id: 2,
        }
    finally:
        await doomed.kill()


def away_updates(client: Client, player_id: str) -> list[RaceUpdate]:
    return [
        m
        for m in client.received
        if isinstance(m, RaceUpdate)
        and any(r.player_id == player_id and not r.connected for r in m.race.racers)
    ]


async def test_a_second_connection_on_another_node_closes_the_first(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    """Two tabs, two nodes: the later connection replaces the earlier (4003), which goes
    without marking the racer away, as on one node."""
    node_a, node_b = await redis_nodes(redis_url), await redis_nodes(redis_url)
    alice = await clients(url(node_a), "alice")
    bob = await clients(url(node_b), "bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal"])
    assert alice.welcome is not None and alice.welcome.token is not None
    again = await clients(url(node_b), token=alice.welcome.token)
    assert await alice.closed() == CloseCode.REPLACED
    assert alice.connection.close_reason == "connected again elsewhere"

    def node_a_done() -> bool:  # the closed connection handled (`Hub.disconnected`)
        return not node_a.transport.connections and not node_a.transport.finishing

    await eventually(node_a_done, within=WAIT_S)
    [ack] = await play(again, race_id, ["deal"], first_seq=2)
    assert ack.ply == 1
    record = await node_b.store.get_race(race_id)
    assert record is not None
    racer = next(r for r in record.racers if r.player_id == again.player_id)
    assert racer.connected and racer.holder is not None
    assert racer.holder.startswith(node_b.hub.node_id + ":")
    assert not away_updates(bob, again.player_id)


async def test_two_hellos_on_two_nodes_at_once_leave_one_connection(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    """Every node reads the claims in one order: of two hellos at once the later stays."""
    node_a, node_b = await redis_nodes(redis_url), await redis_nodes(redis_url)
    first = await clients(url(node_a), "alice")
    assert first.welcome is not None and first.welcome.token is not None
    token = first.welcome.token
    for attempt in range(5):
        pair = [await Client.open(url(node)) for node in (node_a, node_b)]
        await asyncio.gather(*(c.hello(token=token) for c in pair))
        if attempt == 0:
            assert await first.closed() == CloseCode.REPLACED

        def one_closed(pair: list[Client] = pair) -> bool:
            return any(c.reader.done() for c in pair)

        await eventually(one_closed, within=WAIT_S)
        [lost] = [c for c in pair if c.reader.done()]
        [kept] = [c for c in pair if c is not lost]
        assert lost.connection.close_code == CloseCode.REPLACED
        await kept.send(ListRaces())
        await kept.expect(RaceList)  # still served
        assert not kept.reader.done()
        for each in pair:
            await each.close()


def snapshot_epoch(spectator: Client) -> str:
    return next(m.epoch for m in spectator.received if isinstance(m, RaceSnapshot))


async def test_a_move_while_redis_restarts_is_refused_then_both_nodes_carry_on(
    redis_nodes: ServerFactory,
    clients: Callable[..., Awaitable[Client]],
    own_redis_server: RedisServer,
) -> None:
    node_a = await redis_nodes(own_redis_server.url)
    node_b = await redis_nodes(own_redis_server.url)
    alice = await clients(url(node_a), "alice")
    bob = await clients(url(node_b), "bob")
    race_id = await create_race(alice, seats=2)
    await seat_and_start(race_id, [bob], [alice, bob])
    await play(alice, race_id, ["deal"])
    await bob.expect(
        Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 1
    )

    own_redis_server.stop()  # SIGTERM: Redis writes its AOF and exits
    await alice.send(MakeMove(race_id=race_id, seq=2, move="deal"))
    refused = await alice.expect(MoveRejected, lambda m: m.seq == 2)
    assert refused.code == ErrorCode.UNAVAILABLE.value  # retryable, never a false ack
    own_redis_server.start()

    [ack] = await play(alice, race_id, ["deal"], first_seq=2)  # the client's resend
    assert ack.ply == 1 and not ack.duplicate
    await play(bob, race_id, ["deal", "deal"])
    # Each node hears the other again (the broker resubscribed; a gap reloads the race).
    await alice.expect(
        Progress,
        lambda m: m.progress.player_id == bob.player_id and m.progress.moves == 2,
        within=15,
    )
    await bob.expect(
        Progress,
        lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 2,
        within=15,
    )
    for each in (alice, bob):
        await each.send(Resign(race_id=race_id))
    finals = [await each.expect(RaceFinished) for each in (alice, bob)]
    assert finals[0] == finals[1]
    moves = await node_b.store.get_moves(race_id)
    assert sorted((m.player_id, m.ply) for m in moves) == sorted(
        [(alice.player_id, 0), (alice.player_id, 1), (bob.player_id, 0), (bob.player_id, 1)]
    )


async def test_a_stuck_spectator_is_dropped_without_delaying_the_players(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    # Every move's progress an event of its own (no batches): a stream the spectator can
    # fall behind on.
    node_a = await redis_nodes(redis_url, progress_interval_s=0)
    # No keepalive pings: unanswered by a spectator that reads nothing, they would close it
    # (1011) after 40 s, before its queue overflows if the race goes slowly.
    node_c = await redis_nodes(
        redis_url,
        max_outgoing=16,
        send_buffer_bytes=4096,
        progress_interval_s=0,
        ping_interval_s=None,
    )
    alice = await clients(url(node_a), "alice")
    bob = await clients(url(node_a), "bob")
    most = 1200
    race_id = await start_race(alice, [bob], game_number=endless_number(most))

    # A spectator that stops reading: a tiny receive buffer, and its reader paused.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", node_c.port))
    # Nor of its own: its pongs unread, the client drops the link itself (1006) after 40 s.
    stuck = await connect(url(node_c), sock=sock, compression=None, max_queue=1, ping_interval=None)
    try:
        await stuck.send(encode(Hello(protocol=PROTOCOL_VERSION)))
        await stuck.send(encode(Watch(race_id=race_id)))
        await stuck.recv()  # its welcome
        stuck.transport.pause_reading()
        [session] = node_c.transport.sessions

        # The players race on, each move answered at once, until the spectator's node gave
        # up on it (its outgoing queue overflowed: small kernel buffers: --send-buffer-bytes).
        # Looked at after every move: from the overflow the node waits close_timeout_s (10 s)
        # for the answer to its close (4005), then drops the socket (1006). After 50 moves
        # each, with Redis slow, the test read again too late.
        played = 0
        while not session.closing:
            assert played < most, "the stuck spectator was never dropped"
            await asyncio.gather(
                play(alice, race_id, ["deal"], first_seq=played + 1),
                play(bob, race_id, ["deal"], first_seq=played + 1),
            )
            played += 1
        stuck.transport.resume_reading()
        async with asyncio.timeout(10):
            with contextlib.suppress(ConnectionClosed):
                while True:
                    await stuck.recv()
        assert stuck.close_code == CloseCode.TOO_SLOW
    finally:
        await stuck.close()

    # It comes back and resyncs from a snapshot.
    again = await clients(url(node_c))
    await again.send(Watch(race_id=race_id))
    snapshot = await again.expect(RaceSnapshot)
    for entry in snapshot.progress:  # a last move's progress may still be on its way
        if entry.moves < played:
            await again.expect(
                Progress,
                lambda m, p=entry.player_id: (
                    m.progress.player_id == p and m.progress.moves == played
                ),
            )


async def test_a_racer_whose_node_is_killed_and_who_never_comes_back_forfeits(
    redis_nodes: ServerFactory,
    clients: Callable[..., Awaitable[Client]],
    redis_url: str,
    tmp_path: Path,
) -> None:
    """The killed node said nothing on its way out: the surviving node finds it silent past
    its ttl, marks its racer away, and the grace (1 s here) makes her `gone`."""
    doomed = await ServerProcess.start(
        tmp_path / "doomed", "--redis", redis_url, "--grace-s", "1", env={"SOLRACE_NODE_TTL_S": "1"}
    )
    try:
        survivor = await redis_nodes(redis_url, node_ttl_s=1.0)
        alice = await clients(doomed.url, "alice")
        bob = await clients(url(survivor), "bob")
        carol = await clients(url(survivor))
        race_id = await create_race(alice, seats=2)
        await seat_and_start(race_id, [bob], [alice, bob])
        await carol.send(Watch(race_id=race_id))
        await carol.expect(RaceSnapshot)
        await play(alice, race_id, ["deal"])

        await doomed.kill()
        gone = await carol.expect(
            Progress,
            lambda m: m.progress.player_id == alice.player_id and m.progress.state == "gone",
            within=20.0,
        )
        assert gone.progress.moves == 1
        await play(bob, race_id, ["deal"])  # bob races on
        await bob.send(Resign(race_id=race_id))
        await carol.expect(RaceFinished)
    finally:
        await doomed.kill()


async def test_a_node_with_another_secret_does_not_start(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    """Several nodes must sign tokens with one secret: a node with its own (no SOLRACE_SECRET,
    a secret file of its own data folder) would refuse every token the others gave. It does
    not start, and says why; a node with the same secret starts."""
    first = await redis_nodes(redis_url, secret=None)  # its own secret file
    own = (first.settings.data_dir / "secret").read_text()
    with pytest.raises(StartupError, match="is not the one the other nodes on redis://"):
        await redis_nodes(redis_url, secret=None)  # another folder: another secret
    same = await redis_nodes(redis_url, secret=own)
    alice = await clients(url(first), "alice")
    assert alice.welcome is not None and alice.welcome.token is not None
    again = await clients(url(same), token=alice.welcome.token)
    assert again.welcome is not None and again.welcome.player_id == alice.player_id
