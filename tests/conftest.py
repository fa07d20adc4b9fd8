"""Fixtures every test folder may use: a real `redis-server` on loopback.

`redis_server` is one process for the session (each test gets it empty through `redis_url`);
`own_redis_server` is a private one a test may stop, kill and restart.

Property tests (hypothesis) draw the same examples on every run, on any machine: derandomized
(examples seeded by the test itself), no database of past failures replayed, no deadline (on a
loaded machine an example may take longer than hypothesis' 200 ms, which it calls a failure).
A test's own `@settings` keeps these unless it names them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import settings

from tests.redis_server import RedisServer, find_redis_server, is_redis_required

pytest_plugins = ["tests.hang_watch", "tests.open_redis"]

settings.register_profile("solrace", derandomize=True, database=None, deadline=None)
settings.load_profile("solrace")


@pytest.fixture(scope="session")
def redis_binary() -> str:
    binary = find_redis_server()
    if binary is None:
        reason = "no redis-server binary (Debian: apt-get install redis-server)"
        if is_redis_required():
            pytest.fail(f"SOLRACE_REQUIRE_REDIS=1 but {reason}")
        pytest.skip(reason)
    return binary


@pytest.fixture(scope="session")
def redis_server(
    redis_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisServer]:
    server = RedisServer.launch(redis_binary, tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The shared server's URL, emptied for this test."""
    if not redis_server.is_running:  # a test may not stop the shared server, but be safe
        redis_server.start()
    with redis.Redis.from_url(redis_server.url) as client:
        client.flushall()
    return redis_server.url


@pytest.fixture
def own_redis_server(redis_binary: str, tmp_path: Path) -> Iterator[RedisServer]:
    """A private server (its own folder and port) that the test may stop and restart."""
    server = RedisServer.launch(redis_binary, tmp_path / "redis")
    try:
        yield server
    finally:
        server.stop()
