"""Two nodes on one Redis that freezes (SIGSTOP) for longer than the store's timeouts while a
race goes on: what a node was answered `unavailable` for may still be stored once Redis runs
again (it runs the commands sent before it froze), and every node's sessions then hear of it.
The store's timeout is made short here (0.3 s instead of 5 s) so that the freeze outlasts it
within a fast test.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import Error, Progress, RaceFinished, Resign
from solrace.server.protocol.records import RaceStatus
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import make_settings
from tests.integration.helpers import create_race, seat_and_start
from tests.integration.wsclient import WAIT_S, connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually_async

pytestmark = pytest.mark.redis

#: Each store call's wait for Redis here (the store's default is 5 s, three tries).
STORE_TIMEOUT_S = 0.3

NodeFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NodeFactory]:
    """In-process nodes whose store gives up on a silent Redis after `STORE_TIMEOUT_S`."""
    apps: list[App] = []

    async def start(redis_url: str, **overrides: Any) -> App:
        folder = tmp_path / f"node{len(apps) + 1}"
        app = App(make_settings(folder, store=None, redis=redis_url, **overrides))
        assert isinstance(app.store, RedisStore)
        app.store.timeout_s = STORE_TIMEOUT_S
        await app.start()
        apps.append(app)
        return app

    yield start
    async with contextlib.AsyncExitStack() as stopping:  # every one, even if one fails
        for app in apps:
            stopping.push_async_callback(app.stop)


def url(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def test_a_finish_answered_unavailable_but_stored_after_a_freeze_reaches_both_nodes(
    cluster: NodeFactory, own_redis_server: RedisServer
) -> None:
    first, second = await cluster(own_redis_server.url), await cluster(own_redis_server.url)
    alice = await connect_client(url(first), "alice")
    bob = await connect_client(url(second), "bob")
    race_id = await create_race(alice, seats=2)
    await seat_and_start(race_id, [bob], [alice, bob])
    await bob.send(Resign(race_id=race_id))
    await alice.expect(Progress, lambda m: m.progress.state == "resigned")

    with own_redis_server.frozen():
        # The last racer resigns: the race's finish is sent to a Redis that answers nothing.
        await alice.send(Resign(race_id=race_id))
        refused = await alice.expect(Error, lambda m: m.request == "resign")
        assert refused.code == ErrorCode.UNAVAILABLE.value

    # Redis runs the save it was sent before it froze: the race is finished in the store,
    # though the node that sent it took it for refused. Nobody sends anything more, yet
    # both racers, on both nodes, are told how it ended.
    async def is_stored_finished() -> bool:
        stored = await second.store.get_race(race_id)
        return stored is not None and stored.status is RaceStatus.FINISHED

    await eventually_async(is_stored_finished, within=WAIT_S, what="the finish stored")
    stored = await second.store.get_race(race_id)
    assert stored is not None
    for racer in (alice, bob):
        finished = await racer.expect(RaceFinished, lambda m: m.race_id == race_id)
        assert finished.version == stored.version
    for racer in (alice, bob):
        await racer.close()
