"""Redis connection pools under concurrent requests: redis-py's plain pool, its blocking pool and
the server's `WaitingPool` (server/redis_client.py), in one run.

Run: python bench/redis_pool.py [--concurrency 10 100 300] [--seconds 3] [--rounds 2]

A redis-server on a free loopback port (no persistence) is started for the run. For each
concurrency C, C tasks each send SET after SET on one client for `--seconds`; the figures are
requests per second and the process's CPU time per request, for each pool in turn, `--rounds`
times alternated (the machine's noise shows in the spread). The plain pool refuses requests
past its size, so it is left out where C exceeds `MAX_CONNECTIONS`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from solrace.server.redis_client import MAX_CONNECTIONS, WaitingPool

Pool = Callable[[str], aioredis.ConnectionPool]

POOLS: dict[str, Pool] = {
    "plain": lambda url: aioredis.ConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, retry=Retry(NoBackoff(), 0)
    ),
    "blocking": lambda url: aioredis.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=10, retry=Retry(NoBackoff(), 0)
    ),
    "waiting": lambda url: WaitingPool.from_url(
        url, max_connections=MAX_CONNECTIONS, retry=Retry(NoBackoff(), 0)
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def measure(pool: aioredis.ConnectionPool, concurrency: int, seconds: float) -> str:
    client = aioredis.Redis.from_pool(pool)
    done = 0
    stop = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await client.set(f"k{n}", "v")
            done += 1

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await client.aclose()
    return f"{done / wall:9,.0f} req/s {cpu / done * 1e6:6.1f} us CPU/req"


async def main(url: str, concurrency: list[int], seconds: float, rounds: int) -> None:
    probe = aioredis.Redis.from_url(url)
    for _ in range(100):  # until the server answers
        try:
            await probe.ping()
            break
        except RedisConnectionError:
            await asyncio.sleep(0.05)
    await probe.aclose()
    for c in concurrency:
        for _ in range(rounds):
            for name, pool in POOLS.items():
                if name == "plain" and c > MAX_CONNECTIONS:
                    continue
                figures = await measure(pool(url), c, seconds)
                print(f"concurrency {c:4d}  {name:8s} {figures}", flush=True)


def run(concurrency: list[int], seconds: float, rounds: int) -> None:
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    redis_server = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        asyncio.run(main(f"redis://127.0.0.1:{port}/0", concurrency, seconds, rounds))
    finally:
        redis_server.terminate()
        redis_server.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[10, 100, 300], help="tasks at once"
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="measurements of each pool")
    args = parser.parse_args()
    run(args.concurrency, args.seconds, args.rounds)
