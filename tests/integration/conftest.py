"""Real servers on 127.0.0.1 (port from the OS, SQLite in tmp_path) and real clients."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.settings import Settings
from tests.integration.wsclient import Client

sys.setrecursionlimit(10_000)

FAST = {
    "host": "127.0.0.1",
    "port": 0,
    "countdown_s": 0.0,
    "tick_s": 0.02,
    "spectator_batch_s": 0.02,
    "min_time_limit_s": 1,
    "rate_capacity": 10_000.0,
    "secret": "test-secret-for-tokens",
}


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        **FAST,
        "data_dir": tmp_path,
        "store": f"sqlite:{tmp_path / 'solrace.sqlite3'}",
    }
    values.update(overrides)
    return Settings(**values)


ServerFactory = Callable[..., Awaitable[App]]


ClientFactory = Callable[..., Awaitable[Client]]


@pytest.fixture
async def start_server(tmp_path: Path) -> AsyncIterator[ServerFactory]:
    apps: list[App] = []

    async def start(*, unchecked: Mapping[str, Any] | None = None, **overrides: Any) -> App:
        """A node with `overrides`; `unchecked` settings are set past their validation (a
        test's value no operator may set, such as a hold no timer ends within the test)."""
        settings = make_settings(tmp_path, **overrides)
        if unchecked:
            settings = settings.model_copy(update=unchecked)
        app = App(settings)
        await app.start()
        apps.append(app)
        return app

    yield start
    async with contextlib.AsyncExitStack() as stopping:  # every one, even if one fails
        for app in reversed(apps):  # stopped in the order they started
            stopping.push_async_callback(app.stop)


@pytest.fixture
async def server(start_server: ServerFactory) -> App:
    return await start_server()


@pytest.fixture
async def client(server: App) -> AsyncIterator[ClientFactory]:
    clients: list[Client] = []

    async def open_client(name: str | None = None, **kwargs: Any) -> Client:
        new = await Client.open(f"ws://127.0.0.1:{server.port}", **kwargs)
        clients.append(new)
        if name is not None:
            await new.hello(name)
        return new

    yield open_client
    for each in clients:
        await each.close()


@pytest.fixture
async def redis_nodes(tmp_path: Path) -> AsyncIterator[ServerFactory]:
    """In-process nodes on the Redis URL each is given (`await redis_nodes(url, **overrides)`),
    each with its own data folder; `prepare` is called with a node before it starts. Every one
    is stopped afterwards, even if one fails."""
    apps: list[App] = []

    async def start(
        redis_url: str, *, prepare: Callable[[App], None] | None = None, **overrides: Any
    ) -> App:
        folder = tmp_path / f"node{len(apps) + 1}"
        app = App(make_settings(folder, store=None, redis=redis_url, **overrides))
        if prepare is not None:
            prepare(app)
        await app.start()
        apps.append(app)
        return app

    yield start
    async with contextlib.AsyncExitStack() as stopping:
        for app in apps:
            stopping.push_async_callback(app.stop)
