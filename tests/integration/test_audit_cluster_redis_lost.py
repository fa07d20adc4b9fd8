"""Two nodes on a Redis restarted without its data (no AOF), in the middle of a race with a
long time limit, its racers idle: the nodes hear the link to Redis drop and come back, reload
the races they follow, and tell each racer and spectator of a race the store no longer has
(an `unknown_race` error naming it) at once, not at its time limit."""

from __future__ import annotations

import shutil

import pytest

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import Error, Progress, RaceSnapshot, Watch
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.wsclient import connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually

pytestmark = pytest.mark.redis


async def test_a_race_redis_lost_is_said_to_every_node_s_sessions_at_once(
    own_redis_server: RedisServer, redis_nodes: ServerFactory
) -> None:
    first, second = await redis_nodes(own_redis_server.url), await redis_nodes(own_redis_server.url)
    alice = await connect_client(f"ws://127.0.0.1:{first.port}", "alice")
    bob = await connect_client(f"ws://127.0.0.1:{second.port}", "bob")
    carol = await connect_client(f"ws://127.0.0.1:{second.port}")  # a spectator
    race_id = await start_race(alice, [bob], time_limit_s=3600)
    await carol.send(Watch(race_id=race_id))
    await carol.expect(RaceSnapshot)
    await play(alice, race_id, ["deal"])
    await carol.expect(Progress, lambda m: m.progress.moves == 1)

    own_redis_server.kill()
    shutil.rmtree(own_redis_server.folder / "appendonlydir")
    own_redis_server.start()

    for each in (alice, bob, carol):
        gone = await each.expect(Error, lambda m: m.race_id == race_id)
        assert gone.code == ErrorCode.UNKNOWN_RACE.value and gone.request is None

    def forgotten() -> bool:
        return all(race_id not in node.hub.races for node in (first, second))

    await eventually(forgotten, what="the race forgotten on both nodes")
    for each in (alice, bob, carol):
        await each.close()
