"""Nodes on a Redis that restarted without its data (no AOF, or another one): the digest of
the nodes' token secret it kept is gone with the rest, and the running nodes note theirs
again, so a node started afterwards with another secret is still refused (each node would
refuse the other's tokens)."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App, StartupError
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import make_settings
from tests.integration.wsclient import WAIT_S
from tests.redis_server import RedisServer
from tests.waiting import eventually, eventually_async

pytestmark = pytest.mark.redis

NodeFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NodeFactory]:
    """In-process nodes, each with its own data folder (and so, without a --secret, its
    own secret file), watching the other nodes every 0.1 s."""
    apps: list[App] = []

    async def start(redis_url: str, **overrides: Any) -> App:
        folder = tmp_path / f"node{len(apps) + 1}"
        settings = make_settings(folder, store=None, redis=redis_url, node_ttl_s=0.5, **overrides)
        app = App(settings)
        await app.start()
        apps.append(app)
        return app

    yield start
    async with contextlib.AsyncExitStack() as stopping:  # every one, even if one fails
        for app in apps:
            stopping.push_async_callback(app.stop)


async def test_a_node_with_another_secret_is_refused_after_redis_lost_its_data(
    cluster: NodeFactory, own_redis_server: RedisServer
) -> None:
    first = await cluster(own_redis_server.url)
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
        await cluster(own_redis_server.url, secret="another-secret-of-16-chars")


async def test_a_running_node_says_once_when_the_store_notes_another_secret(
    cluster: NodeFactory, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another node noted its secret first (the running ones had not yet noted theirs again
    after Redis lost its data): the running node says so in the log, once."""
    first = await cluster(redis_url)
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
