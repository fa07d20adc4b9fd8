"""Nodes on a Redis that restarted without its data (no AOF, or another one): the digest of
the nodes' token secret it kept is gone with the rest, and the running nodes note theirs
again, so a node started afterwards with another secret is still refused (each node would
refuse the other's tokens)."""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
from pathlib import Path

import pytest
import redis

from solrace.server.broker import RedisBroker
from solrace.server.startup_errors import StartupError
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import ServerFactory
from tests.integration.process import ServerProcess
from tests.integration.wsclient import WAIT_S
from tests.redis_server import RedisServer
from tests.waiting import eventually, eventually_async

pytestmark = pytest.mark.redis


#: The nodes watch the others every fifth of this (SOLRACE_NODE_TTL_S).
NODE_TTL_S = 0.5
#: A node's id in its `listening on ...` line.
NODE_ID = re.compile(r"\bnode ([0-9a-f]+)\)")


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


async def test_a_node_with_another_secret_is_refused_while_one_alive_signs_with_its_own(
    redis_nodes: ServerFactory, redis_url: str
) -> None:
    """The secret's key deleted by hand under a running node, then a node started with
    another secret: the store notes none, but the node alive noted its secret with its
    presence, so the new node is refused, naming it, and notes nothing (it used to note its
    own, and the node alive was the one said to have another)."""
    first = await redis_nodes(redis_url, node_ttl_s=60)
    store = first.store
    assert isinstance(store, RedisStore)
    fingerprint_key = store.prefix + "secret-fingerprint"
    await store.redis.delete(fingerprint_key)

    with pytest.raises(StartupError) as refused:
        await redis_nodes(redis_url, node_ttl_s=60, secret="another-secret-of-16-chars")
    assert str(refused.value) == (
        f"this node's token secret is not the one the other nodes on {redis_url} sign with "
        "(node(s) alive, or killed less than SOLRACE_NODE_TTL_S (60 s) ago, with another: "
        f"{first.hub.node_id}): give every node the same --secret (SOLRACE_SECRET; "
        "deploy/README.md), or wait 60 s if that node is gone"
    )
    assert await store.redis.get(fingerprint_key) is None


async def test_a_node_killed_before_a_secret_rotation_is_named_with_the_time_to_wait(
    redis_nodes: ServerFactory, redis_url: str, tmp_path: Path
) -> None:
    """A secret changed as deploy/README.md says (every node gone, the store's key deleted)
    while a node killed with the old secret still counts as alive: its presence runs until
    SOLRACE_NODE_TTL_S is up. The node with the new secret is refused naming that node, and
    the refusal says it may be dead, and how long to wait: it said 'alive' only, and to give
    every node the same secret, the old one."""
    killed = await ServerProcess.start(
        tmp_path / "killed", "--redis", redis_url, env={"SOLRACE_NODE_TTL_S": "30"}
    )
    try:
        [node_id] = [found.group(1) for line in killed.lines if (found := NODE_ID.search(line))]
    finally:
        await killed.kill()
    with redis.Redis.from_url(redis_url) as admin:
        assert admin.delete("solrace:secret-fingerprint") == 1

    with pytest.raises(StartupError) as refused:
        await redis_nodes(redis_url, node_ttl_s=30, secret="the-new-secret-of-16-chars")
    assert str(refused.value) == (
        f"this node's token secret is not the one the other nodes on {redis_url} sign with "
        "(node(s) alive, or killed less than SOLRACE_NODE_TTL_S (30 s) ago, with another: "
        f"{node_id}): give every node the same --secret (SOLRACE_SECRET; deploy/README.md), "
        "or wait 30 s if that node is gone"
    )


async def test_nodes_with_two_secrets_each_name_the_other_and_whose_the_store_notes(
    redis_nodes: ServerFactory, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis lost what the running node had noted (here: those keys deleted), and a node with
    another secret started before the running one noted its secret again: each node's log
    names the other, and says whose secret the store notes, so that the operator can stop
    the one with the wrong secret, whichever it is."""
    caplog.set_level(logging.ERROR, logger="solrace.server.node_presence")
    first = await redis_nodes(redis_url, node_ttl_s=60)  # its own watches: every 12 s
    store = first.store
    assert isinstance(store, RedisStore)
    broker = first.broker
    assert isinstance(broker, RedisBroker)
    lost = [store.prefix + "secret-fingerprint", broker.prefix + "nodes"]
    await store.redis.delete(*lost, broker.prefix + "node-secrets")
    second = await redis_nodes(redis_url, node_ttl_s=60, secret="another-secret-of-16-chars")
    a, b = first.hub.node_id, second.hub.node_id

    for node in (first, second):
        assert node.hub.presence is not None
        await node.hub.presence.watch(node.hub.clock())
    advice = (
        ". Nodes with different secrets refuse each other's tokens (4001): give every node "
        "the same --secret and restart those with another (each node's id is in its "
        "'listening on' line)"
    )
    assert [r.getMessage() for r in caplog.records] == [
        f"node {a} (this node): the store notes another token secret than this node's: the "
        f"one node {b} signs with{advice}",
        f"node {b} (this node): the store notes this node's token secret, but node {a} signs "
        f"with another{advice}",
    ]
