"""A real `redis-server` for tests: loopback, a port from the OS, AOF on, its own folder.

The process is ours from `start()` to `stop()`: readiness is an answer from that very process
(its `process_id`, polled against a deadline), and `restart()` stops and starts it on the same
folder and port so a test can cut Redis off mid-race and check what the append-only file kept;
`frozen()` stops it where it is (SIGSTOP), a Redis that hangs with its connections open.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

REQUIRE_ENV = "SOLRACE_REQUIRE_REDIS"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.02


class RedisServerError(RuntimeError):
    """The server did not start or stop in time."""


def find_redis_server() -> str | None:
    """The `redis-server` binary on PATH (or Debian's place), None if there is none."""
    found = shutil.which("redis-server")
    if found is None and os.access("/usr/bin/redis-server", os.X_OK):
        found = "/usr/bin/redis-server"
    return found


def is_redis_required() -> bool:
    """CI sets SOLRACE_REQUIRE_REDIS=1: a missing binary is then a failure, not a skip."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One `redis-server` process on 127.0.0.1 with its data in `folder`."""

    def __init__(
        self, binary: str, folder: Path, port: int | None = None, unix_socket: Path | None = None
    ) -> None:
        self.binary = binary
        self.folder = folder
        self.port = port or free_port()
        self.unix_socket = unix_socket  # a socket it listens on as well (its owner's only)
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def launch(
        cls, binary: str, folder: Path, attempts: int = 3, unix_socket: Path | None = None
    ) -> RedisServer:
        """Start on a free port; another port if someone took it between asking and binding."""
        for attempt in range(attempts):
            server = cls(binary, folder, unix_socket=unix_socket)
            try:
                server.start()
            except RedisServerError:
                if attempt == attempts - 1:
                    raise
                continue
            return server
        raise AssertionError("unreachable")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.folder / "redis.log"

    def command(self) -> list[str]:
        on_socket = ["--unixsocket", str(self.unix_socket), "--unixsocketperm", "700"]
        return [
            self.binary,
            *(on_socket if self.unix_socket is not None else []),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.folder),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--logfile",
            str(self.log_path),
        ]

    def start(self) -> None:
        if self.process is not None:
            raise RedisServerError("already running")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        client = redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=1, socket_connect_timeout=1
        )
        try:
            while True:
                if self.process.poll() is not None:
                    raise RedisServerError(
                        f"redis-server exited with {self.process.returncode}: {self.tail_log()}"
                    )
                try:
                    if self._answered_by_our_process(client):
                        return
                except redis.exceptions.RedisError:
                    pass  # not listening or still loading the AOF
                if time.monotonic() > deadline:
                    raise RedisServerError(f"no PING answer in {START_TIMEOUT_S} s")
                time.sleep(POLL_S)  # the poll interval of a deadline-bound wait
        finally:
            client.close()

    def _answered_by_our_process(self, client: redis.Redis) -> bool:
        """Whether the server on our port is the process we started: on a port another
        process took between asking and binding (another test run on the machine), a PING
        would be answered by that one's server while ours is still on its way out."""
        assert self.process is not None
        info = client.info("server")
        return int(info["process_id"]) == self.process.pid

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Redis stopped where it is (SIGSTOP) inside the block: its connections stay open
        and it answers nothing, as a hung server; running again (SIGCONT) however the block
        ends."""
        assert self.process is not None and self.process.poll() is None, "not running"
        self.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM (Redis fsyncs the AOF and exits), SIGKILL if it takes too long."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGCONT)  # a frozen one handles no SIGTERM
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL: a crash; only what the AOF already holds survives."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail_log(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return "(no log)"
