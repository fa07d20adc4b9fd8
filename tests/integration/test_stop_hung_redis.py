"""SIGTERM to a node whose Redis hangs (SIGSTOP: connections open, no answers): the node
closes its clients with 1012, gives up the Redis work left at its stop deadline, says so,
and exits 0; once Redis runs again, a node started on it carries the race on from every
acknowledged move. In process: a stop cut short leaves none of its progress folds, race timer,
watch over the nodes, marking away of closed connections or their requests running, and the
stop's wait for the clients' goodbyes does not wait for their racers to be marked away."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Board, MakeMove, MoveAck, RaceSnapshot, Sync
from solrace.server.settings import Settings
from tests.integration.conftest import make_settings
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import Client, connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually

pytestmark = pytest.mark.redis

#: The node's stop deadline here (SOLRACE_STOP_TIMEOUT_S; the default is 10 s).
STOP_TIMEOUT_S = 2
#: How long past its deadline the node is given to exit: no speed is asserted, only that it
#: ends (without a deadline, each store call waits out its timeouts: 45 s and more).
EXIT_MARGIN_S = 30


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for node in started:
        await node.kill()


async def start_node(started: list[ServerProcess], folder: Path, redis_url: str) -> ServerProcess:
    # Progress batches are folded rarely: the acked moves' batch is still pending at the stop.
    node = await ServerProcess.start(
        folder,
        "--store",
        redis_url,
        "--progress-interval-s",
        "600",
        env={"SOLRACE_STOP_TIMEOUT_S": str(STOP_TIMEOUT_S)},
    )
    started.append(node)
    return node


async def test_sigterm_with_redis_hung_gives_up_at_the_deadline_and_loses_no_ack(
    nodes: list[ServerProcess], own_redis_server: RedisServer, tmp_path: Path
) -> None:
    first = await start_node(nodes, tmp_path / "node1", own_redis_server.url)
    alice, bob = await connect_client(first.url, "alice"), await connect_client(first.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    acked = await play(alice, race_id, ["deal", "deal", "deal"])
    await play(bob, race_id, ["deal"])
    tokens = {c.player_id: c.welcome.token for c in (alice, bob) if c.welcome}

    with own_redis_server.frozen():
        first.process.terminate()
        assert await first.wait(STOP_TIMEOUT_S + EXIT_MARGIN_S) == 0
        assert await alice.closed() == CloseCode.SERVICE_RESTART
    await bob.close()
    log = "".join(first.lines)
    assert "Redis did not answer within the stop deadline" in log
    given_up = next(line for line in first.lines if "given up:" in line)
    assert "WARNING solrace.server:" in given_up
    assert "every acknowledged move is stored" in given_up
    assert first.lines[-1].rstrip().endswith("stopped")

    second = await start_node(nodes, tmp_path / "node2", own_redis_server.url)
    alice2 = await connect_client(second.url, token=tokens[alice.player_id])
    bob2 = await connect_client(second.url, token=tokens[bob.player_id])
    assert alice2.welcome is not None and alice2.welcome.active_races == [race_id]
    await alice2.send(Sync(race_id=race_id, epoch="node 1", since_version=5))
    snapshot = await alice2.expect(RaceSnapshot)
    # The batch the stop gave up is recomputed from the stored moves.
    assert {p.player_id: p.moves for p in snapshot.progress} == {
        alice.player_id: 3,
        bob.player_id: 1,
    }
    assert (await alice2.expect(Board)).ply == 3
    await alice2.send(MakeMove(race_id=race_id, seq=3, move="deal"))
    again = await alice2.expect(MoveAck, lambda m: m.seq == 3)
    assert again.duplicate and again.ply == acked[-1].ply
    [ack] = await play(alice2, race_id, ["deal"], first_seq=4)
    assert ack.ply == 3 and not ack.duplicate
    for each in (alice2, bob2):
        await each.close()


async def test_sigterm_with_redis_answering_flushes_everything_and_gives_up_nothing(
    nodes: list[ServerProcess], own_redis_server: RedisServer, tmp_path: Path
) -> None:
    node = await start_node(nodes, tmp_path / "node1", own_redis_server.url)
    alice, bob = await connect_client(node.url, "alice"), await connect_client(node.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    await play(alice, race_id, ["deal", "deal"])

    assert await node.terminate() == 0
    assert await alice.closed() == CloseCode.SERVICE_RESTART
    await bob.close()
    assert not [line for line in node.lines if "given up" in line or "WARNING" in line]
    assert node.lines[-1].rstrip().endswith("stopped")


def running(*names: str) -> list[asyncio.Task[object]]:
    """The tasks of this process whose name starts with one of `names`."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith(names)]


@contextlib.asynccontextmanager
async def racing_on(settings: Settings) -> AsyncIterator[tuple[App, RaceId, list[Client]]]:
    """A node in process on `settings` where alice and bob race, alice's first move played:
    the node, the race and its racers' clients. Afterwards the clients are closed, the node
    stopped, and its store and broker closed too: what a stop cut short gave up leaves
    Redis connections open (a process exits then), closed here once Redis runs again."""
    app = App(settings)
    await app.start()
    url = f"ws://127.0.0.1:{app.port}"
    racers = [await connect_client(url, "alice"), await connect_client(url, "bob")]
    try:
        race_id = await start_race(racers[0], racers[1:], time_limit_s=600)
        await play(racers[0], race_id, ["deal"])
        yield app, race_id, racers
    finally:
        for each in racers:
            await each.close()
        await app.stop()
        await app.store.close()
        if app.broker is not None:
            await app.broker.close()


#: A stop deadline that cuts the hub's stop inside the withdraw of this node's presence (its
#: own timeout: a fifth of node_ttl_s, 1 s), and one long past once the hub's stop begins,
#: which cuts it at its first wait (before the presence watch is stopped).
STOP_CUTS = {"inside the presence withdraw": 1.0, "at the hub's first wait": 0.001}


@pytest.mark.parametrize("stop_timeout_s", STOP_CUTS.values(), ids=STOP_CUTS.keys())
async def test_a_stop_cut_short_on_redis_hung_leaves_no_progress_fold_running(
    own_redis_server: RedisServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    stop_timeout_s: float,
) -> None:
    """A progress batch being folded in (and stored) when Redis hangs: the stop, cut short
    at its deadline, ends that fold, the race timer, the watch over the nodes and the closed
    connections' marking away before it returns, instead of leaving them waiting on Redis
    (the watch would then run on against the closed broker)."""
    caplog.set_level(logging.ERROR, logger="solrace.server.node_presence")
    # The racers' connections end once marked away, which waits on Redis: close_timeout_s.
    settings = make_settings(
        tmp_path,
        store=own_redis_server.url,
        progress_interval_s=600,
        close_timeout_s=0.5,
        stop_timeout_s=stop_timeout_s,
    )
    left: list[asyncio.Task[object]] = []
    async with racing_on(settings) as (app, race_id, _):
        runtime = app.hub.keeper.races[race_id]
        assert runtime.pending and not running("solrace-fold-")
        assert running("solrace-nodes")
        with own_redis_server.frozen():
            progress = app.hub.keeper.progress
            progress.disarm(runtime)
            progress.arm_fold(runtime, 0.0)  # the batch's timer comes now: its fold hangs
            await eventually(lambda: bool(running("solrace-fold-")), what="a fold under way")
            await app.stop()
            left = running("solrace-fold-", "solrace-ticker", "solrace-nodes", "solrace-bye-")
    assert not left

    def watch_failures() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "solrace.server.node_presence"]

    # A watch left running fails at its next step (every fifth of node_ttl_s) on the closed
    # broker: waited for while one is left, so that its failure would be seen here.
    await eventually(
        lambda: not running("solrace-nodes") or bool(watch_failures()),
        what="the watch over the nodes gone, or failing",
    )
    assert not watch_failures()


async def test_a_stop_cut_short_on_redis_hung_leaves_no_client_request_running(
    own_redis_server: RedisServer, tmp_path: Path
) -> None:
    """A racer's move waiting on the hung Redis when the node stops: its connection closes
    (1012), and the stop, giving up the closed connections' work at its deadline, ends the
    move's handling too, instead of leaving it waiting on Redis (then on the closed store)."""
    settings = make_settings(
        tmp_path,
        store=own_redis_server.url,
        progress_interval_s=600,
        close_timeout_s=0.5,
        stop_timeout_s=1.0,
    )
    left: list[asyncio.Task[object]] = []
    async with racing_on(settings) as (app, race_id, racers):
        with own_redis_server.frozen():
            await racers[0].send(MakeMove(race_id=race_id, seq=2, move="deal"))
            await eventually(lambda: bool(handling()), what="the move's handling under way")
            await app.stop()
            left = handling()
    assert not left


def handling() -> list[asyncio.Task[object]]:
    """The tasks of this process handling a connection's requests (`_work`)."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__qualname__", "").endswith("Session._work")
    ]


async def test_a_stop_on_redis_hung_waits_for_the_goodbyes_not_for_the_racers_marked_away(
    own_redis_server: RedisServer, tmp_path: Path
) -> None:
    """The clients answer the 1012 at once; marking their racers away waits on the hung Redis.
    That work is the stop's, under its deadline (`stop_timeout_s`), not the goodbyes' wait
    (`close_timeout_s`, up to twice): the stop takes the deadline and a little more."""
    close_timeout_s = 5.0
    settings = make_settings(
        tmp_path,
        store=own_redis_server.url,
        close_timeout_s=close_timeout_s,
        stop_timeout_s=0.5,
    )
    async with racing_on(settings) as (app, _, racers):
        with own_redis_server.frozen():
            # Within one close_timeout_s: the marking away waits 15 s on a hung Redis, and a
            # goodbyes' wait that included it would take up to twice close_timeout_s.
            async with asyncio.timeout(close_timeout_s):
                await app.stop()
            for each in racers:
                assert await each.closed() == CloseCode.SERVICE_RESTART
