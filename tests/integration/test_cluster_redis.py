"""Nodes on a real Redis: a node killed mid-race and another taking over, Redis restarted
mid-race (with its data, and without it). (Two nodes serving one race at the same time needs
the hub on the broker: not yet.)
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import redis

from solrace.server.app import App
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import (
    Board,
    Error,
    GetReplay,
    MakeMove,
    MoveAck,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceFinished,
    RaceSnapshot,
    Replay,
    Resign,
    Sync,
    Watch,
)
from solrace.server.protocol.replay import verify_replay
from tests.integration.conftest import ServerFactory, make_settings
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually

pytestmark = pytest.mark.redis

Starter = Callable[..., Awaitable[ServerProcess]]


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[Starter]:
    """`solrace serve` processes, each with its own data folder (they share only Redis)."""
    started: list[ServerProcess] = []

    async def start(*extra: str) -> ServerProcess:
        node = await ServerProcess.start(tmp_path / f"node{len(started) + 1}", *extra)
        started.append(node)
        return node

    yield start
    for node in started:
        await node.kill()


async def test_a_killed_node_s_race_carries_on_at_another_node(
    nodes: Starter, redis_url: str
) -> None:
    node_a = await nodes("--store", redis_url)
    alice, bob = await connect_client(node_a.url, "alice"), await connect_client(node_a.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    acked = await play(alice, race_id, ["deal", "deal"])
    await play(bob, race_id, ["deal"])
    tokens = {c.player_id: c.welcome.token for c in (alice, bob) if c.welcome}

    await node_a.kill()  # kill -9: nothing flushed on the way out
    assert await alice.closed() is not None
    await bob.close()

    node_b = await nodes("--store", redis_url)  # another machine, same Redis, same secret
    alice2 = await connect_client(node_b.url, token=tokens[alice.player_id])
    bob2 = await connect_client(node_b.url, token=tokens[bob.player_id])
    assert alice2.welcome is not None and alice2.welcome.active_races == [race_id]
    await alice2.send(Sync(race_id=race_id, epoch="node a", since_version=5))
    snapshot = await alice2.expect(RaceSnapshot)
    assert {p.player_id: p.moves for p in snapshot.progress} == {
        alice.player_id: 2,
        bob.player_id: 1,
    }
    assert (await alice2.expect(Board)).ply == 2
    # Every acknowledged move is there once: resending the last is a duplicate.
    await alice2.send(MakeMove(race_id=race_id, seq=2, move="deal"))
    again = await alice2.expect(MoveAck)
    assert again.duplicate and again.ply == acked[-1].ply
    [ack] = await play(alice2, race_id, ["deal"], first_seq=3)
    assert ack.ply == 2
    for each in (alice2, bob2):
        await each.send(Resign(race_id=race_id))
    await alice2.expect(RaceFinished)
    await alice2.send(GetReplay(race_id=race_id))
    replay = (await alice2.expect(Replay)).replay
    assert verify_replay(replay).is_valid
    assert sum(len(r.moves) for r in replay.racers) == 4
    for each in (alice2, bob2):
        await each.close()


async def test_a_move_while_redis_restarts_is_refused_then_the_race_goes_on(
    own_redis_server: RedisServer, tmp_path: Path
) -> None:
    app = App(make_settings(tmp_path, store=own_redis_server.url))
    await app.start()
    url = f"ws://127.0.0.1:{app.port}"
    alice = bob = None
    try:
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        race_id = await start_race(alice, [bob], time_limit_s=600)
        await play(alice, race_id, ["deal"])

        own_redis_server.stop()
        await alice.send(MakeMove(race_id=race_id, seq=2, move="deal"))
        refused = await alice.expect(MoveRejected, lambda m: m.seq == 2)
        assert refused.code == ErrorCode.UNAVAILABLE.value  # retryable, never a false ack
        own_redis_server.start()

        [ack] = await play(alice, race_id, ["deal"], first_seq=2)  # the client's resend
        assert ack.ply == 1 and not ack.duplicate
        await play(bob, race_id, ["deal"])
        store_moves = await app.store.get_moves(race_id)
        assert sorted((m.player_id, m.ply) for m in store_moves) == sorted(
            [(alice.player_id, 0), (alice.player_id, 1), (bob.player_id, 0)]
        )
    finally:
        for each in (alice, bob):
            if each is not None:
                await each.close()
        await app.stop()


async def test_a_race_redis_lost_with_its_data_is_said_once_and_forgotten(
    nodes: Starter, own_redis_server: RedisServer
) -> None:
    """A Redis restarted without its data (no AOF, deploy/README.md says to keep one) no
    longer has the race: the node forgets it, saying so once, instead of retrying the
    time-out on every tick and logging each refusal (ten lines a second, for good)."""
    node = await nodes("--store", own_redis_server.url)
    alice, bob = await connect_client(node.url, "alice"), await connect_client(node.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=2)
    await play(alice, race_id, ["deal"])

    own_redis_server.kill()
    shutil.rmtree(own_redis_server.folder / "appendonlydir")
    own_redis_server.start()

    # The time limit comes: the store has no race to time out.
    forgotten = f"race {race_id}: the store no longer has it (its data was lost?): forgotten"
    await eventually(lambda: any(forgotten in line for line in node.lines), what=forgotten)
    await alice.send(Sync(race_id=race_id, epoch="", since_version=0))
    assert (await alice.expect(Error)).code == ErrorCode.UNKNOWN_RACE.value
    assert sum(forgotten in line for line in node.lines) == 1
    assert not [line for line in node.lines if "tick refused" in line]
    for each in (alice, bob):
        await each.close()


async def test_a_race_redis_lost_is_said_to_its_sessions_and_its_spectators_get_no_board(
    own_redis_server: RedisServer, tmp_path: Path
) -> None:
    """The node forgetting a race Redis lost tells its racers and spectators there with an
    `unknown_race` error naming it, and pushes no spectators' board of it after that. The
    clock jumps so that the time-out (refused: no race) and the spectators' delayed board of
    alice's move both come in one tick."""
    settings = make_settings(tmp_path, store=own_redis_server.url, spectator_delay_casual_s=60.0)
    app = App(settings)
    await app.start()
    skew_ms = [0]
    app.hub.clock = lambda: wall_clock_ms() + skew_ms[0]
    url = f"ws://127.0.0.1:{app.port}"
    clients = []
    try:
        alice, bob = await connect_client(url, "alice"), await connect_client(url, "bob")
        carol = await connect_client(url)  # a spectator
        clients = [alice, bob, carol]
        race_id = await start_race(alice, [bob], time_limit_s=600)
        await carol.send(Watch(race_id=race_id))
        await carol.expect(RaceSnapshot)
        await play(alice, race_id, ["deal"])
        # Its progress batch is stored (its event comes), before Redis loses the race.
        await carol.expect(Progress, lambda m: m.progress.moves == 1)

        own_redis_server.kill()
        shutil.rmtree(own_redis_server.folder / "appendonlydir")
        own_redis_server.start()
        seen = len(carol.received)
        skew_ms[0] = 3_600_000  # past the time limit and the spectators' delay

        await eventually(lambda: race_id not in app.hub.keeper.races, what="the race forgotten")
        for each in (alice, bob, carol):
            gone = await each.expect(Error, lambda m: m.race_id == race_id)
            assert gone.code == ErrorCode.UNKNOWN_RACE.value and gone.request is None
        await carol.send(Ping(nonce=7))  # answered after anything the tick sent her
        await carol.expect(Pong, lambda m: m.nonce == 7)
        assert not [m for m in carol.received[seen:] if isinstance(m, Board)]
    finally:
        for each in clients:
            await each.close()
        await app.stop()


class CountedTicks:
    """A node's `prepare` hook that counts its tournament ticks (`count`)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, app: App) -> None:
        tick = app.tournaments.tick

        async def counted() -> None:
            self.count += 1
            await tick()

        app.tournaments.tick = counted  # type: ignore[method-assign]


async def test_a_redis_outage_is_said_once_by_the_tournament_tick(
    own_redis_server: RedisServer, redis_nodes: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis killed under a node: its tournament tick, which reads the stored versions at
    every tick, says the outage in one warning (not one a tick), and says when it works again
    once Redis is back."""
    caplog.set_level(logging.DEBUG, logger="solrace.server.tournaments")
    ticks = CountedTicks()
    await redis_nodes(own_redis_server.url, prepare=ticks, tournament_tick_s=0.05)
    own_redis_server.kill()
    killed_at = ticks.count
    await eventually(lambda: ticks.count >= killed_at + 6, what="six ticks while Redis is away")

    def warnings() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == "solrace.server.tournaments" and r.levelno >= logging.WARNING
        ]

    [failed] = warnings()
    assert failed.startswith("tournament tick failed: versions unknown: ")
    assert failed.endswith("(said once until it works again)")

    own_redis_server.start()
    await eventually(
        lambda: any(w.startswith("tournament tick works again after ") for w in warnings()),
        what="the tick saying it works again",
    )


async def test_a_store_error_that_is_no_outage_is_said_once_by_the_tournament_tick(
    redis_url: str, redis_nodes: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis refuses the tick's read of the stored versions (here WRONGTYPE: the open
    tournaments' set made a string): a store error, but no outage. The tick is skipped with
    one warning while the error stays the same, no traceback a tick, and one line says when
    the versions are read again."""
    caplog.set_level(logging.DEBUG, logger="solrace.server.tournaments")
    ticks = CountedTicks()
    await redis_nodes(redis_url, prepare=ticks, tournament_tick_s=0.05)
    with redis.Redis.from_url(redis_url) as admin:
        admin.set("solrace:tournaments-open", "not a sorted set")
        broken_at = ticks.count
        await eventually(lambda: ticks.count >= broken_at + 6, what="six ticks while Redis refuses")

        def said() -> list[tuple[int, str]]:
            return [
                (r.levelno, r.getMessage())
                for r in caplog.records
                if r.name == "solrace.server.tournaments" and r.levelno >= logging.WARNING
            ]

        [(level, skipped)] = said()
        assert level == logging.WARNING
        assert skipped.startswith("tournament tick skipped: versions unknown: ")
        assert "WRONGTYPE" in skipped
        assert skipped.endswith("(said once while it fails so)")
        admin.delete("solrace:tournaments-open")
    await eventually(
        lambda: any(m.startswith("tournament tick: versions read again after ") for _, m in said()),
        what="the tick saying the versions are read again",
    )
    assert [level for level, _ in said()] == [logging.WARNING, logging.WARNING]
