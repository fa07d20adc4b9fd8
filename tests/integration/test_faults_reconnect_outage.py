"""A client whose link drops while the node's Redis is down: the node answers its hello
`unavailable` (the store could not read its player), which a reconnecting client takes as
"try again later", not as the end of the link. Once Redis is back, so is the client, in its
race, and its moves are acknowledged (bench/faults.py found it: a tournament bot whose link
dropped during a Redis restart gave its tournament up)."""

from __future__ import annotations

import pytest

from solrace.client.connection import Connection
from solrace.client.link_status import LinkStatus, StatusChange
from solrace.server.protocol.messages import JoinRace, MoveAck, RaceStarted
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race
from tests.integration.wsclient import WAIT_S, connect_client
from tests.redis_server import RedisServer

pytestmark = pytest.mark.redis


async def next_of(conn: Connection, kind: type[object]) -> object:
    """The next message or link change of `kind` on `conn`, the others read past."""
    while True:
        incoming = await conn.recv_within(WAIT_S)
        assert incoming is not None, f"no {kind.__name__} in time"
        if isinstance(incoming, kind):
            return incoming


async def test_a_hello_answered_unavailable_is_tried_again_until_the_store_is_back(
    own_redis_server: RedisServer, redis_nodes: ServerFactory
) -> None:
    node = await redis_nodes(own_redis_server.url)
    url = f"ws://127.0.0.1:{node.port}"
    ann = Connection(url, name="ann", backoff_s=(0.05, 0.2))
    await ann.connect()
    bob = await connect_client(url, "bob")
    race_id = await create_race(bob)
    ann.followed.add(race_id)
    await ann.send(JoinRace(race_id=race_id))
    await next_of(ann, RaceStarted)

    own_redis_server.stop()
    ws = ann._ws
    assert ws is not None
    ws.transport.abort()  # the link drops while the store is down
    while True:
        change = await next_of(ann, StatusChange)
        assert isinstance(change, StatusChange)
        if "unavailable" in change.detail:
            break
    # The node could not read her player: she is to try again, not to give up.
    assert change.status is LinkStatus.RECONNECTING, change

    own_redis_server.start()
    while True:
        change = await next_of(ann, StatusChange)
        assert isinstance(change, StatusChange)
        assert change.status is not LinkStatus.CLOSED, change
        if change.status is LinkStatus.CONNECTED:
            break
    seq = await ann.send_move(race_id, "deal")
    while True:
        ack = await next_of(ann, MoveAck)
        assert isinstance(ack, MoveAck)
        if ack.seq == seq:
            break
    assert (ack.race_id, ack.ply) == (race_id, 0)
    await ann.close()
    await bob.close()
