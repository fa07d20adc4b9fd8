"""deploy/local-cluster.sh for real: Redis, three nodes and HAProxy on free loopback ports."""

from __future__ import annotations

import contextlib
import http.server
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.wsclient import Client

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "local-cluster.sh"

pytestmark = pytest.mark.redis


def ephemeral_floor() -> int:
    """The lowest port the kernel hands out to outgoing connections (32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port_run(length: int) -> int:
    """The first of `length` consecutive ports that are free now, below the kernel's range of
    ports for outgoing connections: the script binds them seconds later, and a port in that
    range could meanwhile become the local end of any test's connection (a node once failed
    to start with its port taken so)."""
    rng = random.Random()
    top = ephemeral_floor() - length
    for _ in range(200):
        first = rng.randrange(20_000, top)
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + length):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return first
    raise AssertionError(f"no {length} consecutive free ports")


class Cluster:
    def __init__(self, folder: Path) -> None:
        # The balancer, Redis and three nodes, on five ports outside the kernel's range
        # for outgoing connections (`free_port_run`).
        first = free_port_run(5)
        self.env = {
            **os.environ,
            "PYTHON": sys.executable,
            "SOLRACE_CLUSTER_DIR": str(folder),
            "SOLRACE_LB_PORT": str(first),
            "SOLRACE_REDIS_PORT": str(first + 1),
            "SOLRACE_NODE_PORT": str(first + 2),
        }
        self.lb_url = f"ws://127.0.0.1:{self.env['SOLRACE_LB_PORT']}"
        self.folder = folder

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args],
            check=False,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )


def needs_haproxy() -> None:
    """`start` looks for every program before it starts any."""
    if shutil.which("haproxy") is None:
        pytest.skip("no haproxy binary (Debian: apt-get install haproxy)")


@pytest.fixture
def cluster(redis_binary: str, tmp_path: Path) -> Iterator[Cluster]:
    needs_haproxy()
    cluster = Cluster(tmp_path / "cluster")
    try:
        yield cluster
    finally:
        stopped = cluster.run("stop")
        assert stopped.returncode == 0, stopped.stderr


async def test_start_status_kill_node_and_stop(cluster: Cluster) -> None:
    started = cluster.run("start")
    assert started.returncode == 0, started.stdout + started.stderr
    status = cluster.run("status")
    assert status.returncode == 0 and status.stdout.count("healthy") == 5, status.stdout

    # A player through the balancer, on whichever node it picked.
    client = await Client.open(cluster.lb_url)
    welcome = await client.hello("through-haproxy")
    assert welcome.player_id is not None
    await client.close()

    killed = cluster.run("kill-node", "2")
    assert killed.returncode == 0, killed.stderr
    status = cluster.run("status")
    assert status.returncode == 1 and "node2: stopped" in status.stdout
    assert cluster.run("start").returncode == 0  # brings node 2 back, leaves the rest
    assert cluster.run("status").returncode == 0

    stopped = cluster.run("stop")
    assert stopped.returncode == 0 and stopped.stdout.count("stopped") == 5, stopped.stdout
    assert "redis: stopped" in cluster.run("status").stdout
    assert list((cluster.folder / "run").iterdir()) == []
    assert (cluster.folder / "redis" / "appendonlydir").is_dir()  # the AOF stays


async def test_connections_right_after_a_node_dies_land_on_live_nodes(cluster: Cluster) -> None:
    """Until its health checks fail (two, 2 s apart) HAProxy still counts a killed node as up,
    and under `leastconn` the dead node, with no connections, is its first choice: each new
    client used to get a 503 after about 3 s of attempts on it. A refused attempt now goes to
    another node (`option redispatch`)."""
    started = cluster.run("start")
    assert started.returncode == 0, started.stdout + started.stderr
    assert cluster.run("kill-node", "2").returncode == 0
    clients: list[Client] = []
    try:
        for n in range(4):  # held open: leastconn spreads them, node 2 always looking emptiest
            clients.append(await Client.open(cluster.lb_url))
            welcome = await clients[-1].hello(f"after-kill-{n}")
            assert welcome.player_id is not None
    finally:
        for client in clients:
            await client.close()


class Healthy(http.server.BaseHTTPRequestHandler):
    """Another program on a node's port that answers the health check."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("holder", ["node 2", "haproxy"])
def test_a_port_another_program_holds_stops_the_start(
    redis_binary: str, tmp_path: Path, holder: str
) -> None:
    """A node port held by another server that answers /healthz used to pass the health
    check: `start` said the node was up while it had exited. It now says the port is taken;
    and it looks at every port before starting anything (HAProxy's, looked at last, left
    Redis and three nodes running)."""
    needs_haproxy()
    cluster = Cluster(tmp_path / "cluster")
    if holder == "haproxy":
        port = int(cluster.env["SOLRACE_LB_PORT"])
    else:
        port = int(cluster.env["SOLRACE_NODE_PORT"]) + 1  # node 2's
    other = http.server.ThreadingHTTPServer(("127.0.0.1", port), Healthy)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        started = cluster.run("start")
        assert started.returncode == 1
        assert f"port {port} ({holder}) is taken by another program" in started.stderr
        assert list((cluster.folder / "run").glob("*.pid")) == []  # nothing started
    finally:
        other.shutdown()
        other.server_close()
        stopped = cluster.run("stop")
    assert stopped.returncode == 0, stopped.stderr
    run = cluster.folder / "run"
    assert not run.exists() or list(run.iterdir()) == []


def test_haproxy_cfg_checks_without_warnings() -> None:
    """HAProxy warned at every start that the `tcp-request` rule, placed after an
    `http-request` one, runs before it all the same."""
    needs_haproxy()
    haproxy = shutil.which("haproxy")
    assert haproxy is not None
    env = {
        **os.environ,
        "SOLRACE_LB_BIND": "127.0.0.1:1",
        **{f"SOLRACE_NODE{n}": f"127.0.0.1:{n + 1}" for n in (1, 2, 3)},
    }
    checked = subprocess.run(
        [haproxy, "-c", "-f", str(SCRIPT.parent / "haproxy.cfg")],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stderr
    assert "WARNING" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


def test_a_node_that_exits_as_it_starts_stops_the_start(redis_binary: str, tmp_path: Path) -> None:
    needs_haproxy()
    cluster = Cluster(tmp_path / "cluster")
    cluster.env["SOLRACE_MAX_OUTGOING"] = "many"  # a setting the node refuses at start
    try:
        started = cluster.run("start")
        assert started.returncode == 1
        assert "node1 exited as it started (see " in started.stderr, started.stderr
        assert "SOLRACE_MAX_OUTGOING" in (cluster.folder / "logs" / "node1.log").read_text()
    finally:
        stopped = cluster.run("stop")
    assert stopped.returncode == 0, stopped.stderr


def test_a_missing_program_stops_the_start_before_anything_runs(
    redis_binary: str, tmp_path: Path
) -> None:
    """Without haproxy, `start` used to start Redis and the three nodes, then stop with
    'no haproxy' and leave them running."""
    path = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(folder) / "haproxy").exists()
    )
    if shutil.which("redis-server", path=path) is None:
        pytest.skip("redis-server shares its folder with haproxy here")
    cluster = Cluster(tmp_path / "cluster")
    cluster.env["PATH"] = path
    try:
        started = cluster.run("start")
        assert started.returncode == 1
        if Path("/usr/sbin/haproxy").exists():  # installed where Debian puts it, off this PATH
            assert (
                "no haproxy on PATH, but /usr/sbin/haproxy is installed: "
                f'run PATH="$PATH:/usr/sbin" {SCRIPT} start'
            ) in started.stderr
        else:
            assert "no haproxy (Debian: apt-get install haproxy)" in started.stderr
        run = cluster.folder / "run"
        assert not run.exists() or list(run.iterdir()) == []
    finally:
        stopped = cluster.run("stop")
    assert stopped.returncode == 0, stopped.stderr


def test_commands_other_than_start_leave_no_folder_behind(tmp_path: Path) -> None:
    """`status`, `stop`, `kill-node`, `--help` and a typo, run where no cluster was started,
    say so and make no `./cluster` there; `--help` prints the usage and exits 0."""
    env = {k: v for k, v in os.environ.items() if k != "SOLRACE_CLUSTER_DIR"}
    env["PYTHON"] = sys.executable
    said = {}
    for args, status in [
        (["--help"], 0),
        (["status"], 1),
        (["stop"], 0),
        (["kill-node", "1"], 1),
        (["strat"], 1),
    ]:
        done = subprocess.run(
            [str(SCRIPT), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == status, (args, done.stdout, done.stderr)
        said[args[0]] = done
    assert list(tmp_path.iterdir()) == []
    assert said["--help"].stdout.startswith(f"usage: {SCRIPT} start|stop|status|kill-node N\n")
    assert "redis: stopped" in said["status"].stdout
    assert "node 1 is not running" in said["kill-node"].stderr
    assert said["strat"].stderr.startswith(f"local-cluster: usage: {SCRIPT} start|stop|")
