"""Nodes on a Redis that restarted without its data (no AOF, or another one): the digest of
the nodes' token secret it kept is gone with the rest, and the running nodes note theirs
again, so a node started afterwards with another secret is still refused (each node would
refuse the other's tokens)."""

from __future__ import annotations

import contextlib
import logging
import shutil

import pytest

from solrace.server.startup_errors import StartupError
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import WAIT_S
from tests.redis_server import RedisServer
from tests.waiting import eventually, eventually_async

pytestmark = pytest.mark.redis


#: The nodes watch the others every fifth of this (SOLRACE_NODE_TTL_S).
NODE_TTL_S = 0.5


async def test_a_node_with_another_secret_is_refused_after_redis_lost_its_data(
    redis_nodes: ServerFactory, own_redis_server: RedisServer
) -> None:
    first = await redis_nodes(own_redis_server.url, node_ttl_s=NODE_TTL_S)
    store = first.store
    assert isinstance(store, RedisStore)
    fingerprint_key = store.prefix + "secret-fingerprint"
    noted = await store.redis.get(fingerprint_key)
    assert noted is not None

    own_redis_server.kill()
    shutil.rmtree(own_redis_server.folder / "appendonlydir")
    own_redis_server.start()

    async def noted_again() -> bool:
        with contextlib.suppress(Exception):  # the store's link comes back first
            return bool(await store.redis.get(fingerprint_key) == noted)
        return False

    await eventually_async(noted_again, within=WAIT_S, what="the running node's secret noted")
    with pytest.raises(StartupError, match="is not the one the other nodes on redis://"):
        await redis_nodes(
            own_redis_server.url, node_ttl_s=NODE_TTL_S, secret="another-secret-of-16-chars"
        )


async def test_a_running_node_says_once_when_the_store_notes_another_secret(
    redis_nodes: ServerFactory, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another node noted its secret first (the running ones had not yet noted theirs again
    after Redis lost its data): the running node says so in the log, once."""
    first = await redis_nodes(redis_url, node_ttl_s=NODE_TTL_S)
    store = first.store
    assert isinstance(store, RedisStore)
    caplog.set_level(logging.ERROR, logger="solrace.server.node_presence")
    await store.redis.set(store.prefix + "secret-fingerprint", "0123456789abcdef")

    def said() -> bool:
        return any("another token secret" in r.getMessage() for r in caplog.records)

    await eventually(said, within=WAIT_S, what="the other secret said")
    presence = first.hub.presence
    assert presence is not None
    for _ in range(3):  # three more watches: nothing more said
        await presence.watch(first.hub.clock())
    assert sum("another token secret" in r.getMessage() for r in caplog.records) == 1
