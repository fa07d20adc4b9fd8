"""The open-connection guard (tests/open_redis.py) fails the test that leaves a redis-py
connection open, at that test's teardown, and says where the connection was made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD_TESTS = """
import asyncio
import os

from redis.asyncio import Redis

kept = []


async def ping(close: bool) -> Redis:
    client = Redis.from_url(os.environ["CHILD_REDIS_URL"])
    await client.ping()
    if close:
        await client.aclose()
    return client


def test_closes_its_client():
    kept.append(asyncio.run(ping(close=True)))


def test_leaves_its_client_open():
    kept.append(asyncio.run(ping(close=False)))  # kept: its connection outlives the loop


def test_after_it():
    pass
"""


def test_a_connection_left_open_fails_the_test_that_left_it(tmp_path: Path, redis_url: str) -> None:
    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.open_redis", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CHILD_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "3 passed, 1 error" in said, said
    assert "ERROR at teardown of test_leaves_its_client_open" in said, said
    assert "test_child.py::test_leaves_its_client_open left 1 redis connection(s) open" in said
    assert "in test_leaves_its_client_open" in said  # where it was made
    assert "test_closes_its_client left" not in said and "test_after_it left" not in said
