"""SIGTERM to a node whose Redis hangs (SIGSTOP: connections open, no answers): the node
closes its clients with 1012, gives up the Redis work left at its stop deadline, says so,
and exits 0; once Redis runs again, a node started on it carries the race on from every
acknowledged move."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import Board, MakeMove, MoveAck, RaceSnapshot, Sync
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import connect_client
from tests.redis_server import RedisServer

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
