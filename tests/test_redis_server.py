"""The tests' own `redis-server` helper: a server is ready only when the process it started
answers, never another server that holds the same port."""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.redis_server as redis_server_module
from tests.redis_server import RedisServer, RedisServerError, free_port


def test_a_port_another_redis_holds_is_a_failed_start_not_that_server(
    redis_binary: str, tmp_path: Path
) -> None:
    first = RedisServer.launch(redis_binary, tmp_path / "first")
    try:
        second = RedisServer(redis_binary, tmp_path / "second", port=first.port)
        with pytest.raises(RedisServerError, match="exited"):
            second.start()
        assert not second.is_running
        assert first.is_running
    finally:
        first.stop()


def test_launch_takes_another_port_when_its_first_is_taken(
    redis_binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = RedisServer.launch(redis_binary, tmp_path / "first")
    try:
        ports = iter([first.port])  # the first port asked for is the one `first` holds
        monkeypatch.setattr(
            redis_server_module, "free_port", lambda: next(ports, None) or free_port()
        )
        second = RedisServer.launch(redis_binary, tmp_path / "second")
        try:
            assert second.port != first.port
            assert second.is_running
        finally:
            second.stop()
    finally:
        first.stop()
