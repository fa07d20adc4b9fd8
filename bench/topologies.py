"""Issue 5: the same load against three topologies, in one run, to show the cost of Redis.

Run: python bench/topologies.py --players 2 20 100 --seconds 6 --out bench/results/topologies

1. one node on SQLite (the default store);
2. one node on Redis (store and broker; `redis-server` with AOF, `appendfsync always`, or
   `--appendfsync everysec`);
3. two nodes on that Redis behind HAProxy (round robin; the players connect in order, so the
   two players of every race sit on different nodes and each move crosses Redis to reach
   the opponent's node).

Every node, Redis, HAProxy and the generator (this process) share the machine, so compare
ratios measured in one run. Players are closed loops (move, wait for the ack, next move), as
in bench/load.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from load import (
    free_port,
    measure_solrace,
    race_numbers,
    server_env,
    start_process,
    stop_process,
    wait_port,
)

HAPROXY_CFG = """
global
    maxconn 4000
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
frontend solrace
    bind 127.0.0.1:{lb}
    default_backend nodes
backend nodes
    balance roundrobin
    server a 127.0.0.1:{a}
    server b 127.0.0.1:{b}
"""


def node_env() -> dict[str, str]:
    """`server_env`, and one token secret for every node (any node verifies any token)."""
    return {**server_env(), "SOLRACE_SECRET": "bench-secret-for-tokens"}


def start_node(port: int, data_dir: Path, *extra: str) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "solrace.cli", "serve", "--port", str(port)]
    node = start_process([*args, "--data-dir", str(data_dir), *extra], node_env())
    wait_port(port, node)
    return node


APPENDFSYNC = ["always"]  # --appendfsync sets it


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    redis = start_process(
        [
            *(binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder)),
            *("--appendonly", "yes", "--appendfsync", APPENDFSYNC[0], "--save", ""),
        ]
    )
    wait_port(port, redis)
    return redis, f"redis://127.0.0.1:{port}/0"


def connections_of(port: int) -> int:
    """The node's `solrace_connections` gauge (to show how the balancer split players)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("solrace_connections "):
                return int(float(line.split()[1]))
    return -1


async def measure_split(
    players: int,
    seconds: float,
    lb: int,
    nodes: tuple[int, int],
    numbers: list[tuple[str, list[str]]],
) -> dict[str, float]:
    """Load through the balancer; sample each node's connections while the players race."""
    split: list[int] = []

    async def sample() -> None:
        await asyncio.sleep(seconds / 2 + 1.5)  # mid-window: every player is connected
        split.extend(await asyncio.to_thread(lambda: [connections_of(p) for p in nodes]))

    sampler = asyncio.create_task(sample())
    result = await measure_solrace(players, seconds, lb, numbers, ordered=True)
    await sampler
    return {**result, "node_a_connections": split[0], "node_b_connections": split[1]}


async def measure_all(players: int, seconds: float, folder: Path) -> dict[str, dict[str, float]]:
    numbers = race_numbers(players)
    results: dict[str, dict[str, float]] = {}
    port = free_port()
    node = start_node(port, folder / f"sqlite{players}")
    try:
        results["sqlite"] = await measure_solrace(players, seconds, port, numbers)
    finally:
        stop_process(node)

    redis, url = start_redis(folder / f"redis{players}")
    started: list[subprocess.Popen[bytes]] = []
    try:
        port = free_port()
        started.append(start_node(port, folder / f"redis-one{players}", "--redis", url))
        results["redis"] = await measure_solrace(players, seconds, port, numbers)
        stop_process(started.pop())

        a, b, lb = free_port(), free_port(), free_port()
        started.append(start_node(a, folder / f"redis-a{players}", "--redis", url))
        started.append(start_node(b, folder / f"redis-b{players}", "--redis", url))
        config = folder / f"haproxy{players}.cfg"
        config.write_text(HAPROXY_CFG.format(lb=lb, a=a, b=b))
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        started.append(start_process([haproxy, "-f", str(config), "-db"]))
        wait_port(lb, started[-1])
        results["two_nodes"] = await measure_split(players, seconds, lb, (a, b), numbers)
    finally:
        for process in reversed(started):
            stop_process(process)
        stop_process(redis)
    base = results["sqlite"]
    results["ratio"] = {
        f"{name}_{what}": results[name][key] / base[key]
        for name in ("redis", "two_nodes")
        for what, key in (("throughput", "moves_per_s"), ("p50", "p50_ms"), ("p99", "p99_ms"))
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, nargs="+", default=[2, 20, 100])
    parser.add_argument("--seconds", type=float, default=6.0, help="measured window per run")
    parser.add_argument("--out", type=Path, help="write OUT.json and OUT.txt")
    parser.add_argument(
        "--appendfsync", choices=["always", "everysec"], default="always", help="Redis AOF"
    )
    args = parser.parse_args()
    APPENDFSYNC[0] = args.appendfsync
    lines = [
        f"{'players':>7} | {'sqlite mv/s':>11} {'p50':>7} {'p99':>7} | "
        f"{'redis mv/s':>10} {'p50':>7} {'p99':>7} | {'2 nodes mv/s':>12} {'p50':>7} "
        f"{'p99':>7} {'split':>7} | {'redis/sqlite':>12} {'2n/sqlite':>9}"
    ]
    print(lines[0], flush=True)
    results = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.players:
            r = asyncio.run(measure_all(n, args.seconds, Path(tmp)))
            results[n] = r
            s, rd, two, ratio = r["sqlite"], r["redis"], r["two_nodes"], r["ratio"]
            split = f"{two['node_a_connections']:.0f}/{two['node_b_connections']:.0f}"
            lines.append(
                f"{n:>7} | {s['moves_per_s']:>11,.0f} {s['p50_ms']:>6.1f}ms {s['p99_ms']:>6.1f}ms"
                f" | {rd['moves_per_s']:>10,.0f} {rd['p50_ms']:>6.1f}ms {rd['p99_ms']:>6.1f}ms"
                f" | {two['moves_per_s']:>12,.0f} {two['p50_ms']:>6.1f}ms "
                f"{two['p99_ms']:>6.1f}ms {split:>7} | {ratio['redis_throughput']:>11.0%} "
                f"{ratio['two_nodes_throughput']:>9.0%}"
            )
            print(lines[-1], flush=True)
    print(f"({time.monotonic() - started:.0f} s)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
