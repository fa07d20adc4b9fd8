"""A node killed (kill -9) in the middle of a race on several nodes, its racer back on
another node before the killed one is found gone: the moves the killed node stored and
acknowledged, but had not yet folded into the race's progress, still reach the race (its
progress, which the ranking of unfinished boards reads, and a finish)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.server.app import App
from solrace.server.protocol.messages import Board, Progress, Sync
from solrace.server.protocol.records import RaceRecord
from tests.integration.conftest import make_settings
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import WAIT_S, connect_client
from tests.waiting import eventually_async

pytestmark = pytest.mark.redis

#: Every node's presence runs out this soon after its last word (SOLRACE_NODE_TTL_S).
NODE_TTL_S = 1.0


@pytest.fixture
async def survivor(redis_url: str, tmp_path: Path) -> AsyncIterator[App]:
    """An in-process node on the test's Redis, whose store the test can read."""
    app = App(
        make_settings(tmp_path / "survivor", store=None, redis=redis_url, node_ttl_s=NODE_TTL_S)
    )
    await app.start()
    yield app
    await app.stop()


@pytest.fixture
async def doomed(redis_url: str, tmp_path: Path) -> AsyncIterator[ServerProcess]:
    """A `solrace serve` process on the same Redis, to be killed. Its racers' progress is
    folded into the race only every 600 s: every move it acknowledges is one whose
    progress is still pending when it dies."""
    node = await ServerProcess.start(
        tmp_path / "doomed",
        "--store",
        redis_url,
        "--progress-interval-s",
        "600",
        env={"SOLRACE_NODE_TTL_S": str(NODE_TTL_S)},
    )
    yield node
    await node.kill()


async def test_moves_a_killed_node_acked_reach_the_race_when_its_racer_came_back_first(
    survivor: App, doomed: ServerProcess
) -> None:
    alice = await connect_client(doomed.url, "alice")
    bob = await connect_client(f"ws://127.0.0.1:{survivor.port}", "bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal", "deal", "deal"])
    assert alice.welcome is not None and alice.welcome.token is not None

    await doomed.kill()
    # Alice is back, on the survivor, before it has found her node gone.
    again = await connect_client(f"ws://127.0.0.1:{survivor.port}", token=alice.welcome.token)
    await again.send(Sync(race_id=race_id, epoch="", since_version=0))
    assert (await again.expect(Board, lambda m: m.race_id == race_id)).ply == 3

    # Once the survivor finds the killed node gone, her three moves are in the race.
    entry = await bob.expect(
        Progress,
        lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 3,
        within=WAIT_S,
    )
    assert entry.race_id == race_id

    async def stored_with_her_moves() -> bool:
        record: RaceRecord | None = await survivor.store.get_race(race_id)
        assert record is not None
        return any(r.player_id == alice.player_id and r.moves == 3 for r in record.racers)

    await eventually_async(stored_with_her_moves, within=WAIT_S, what="her moves stored")
    for client in (alice, bob, again):
        await client.close()
