"""Load generator: N simulated players racing over real WebSockets against one solrace node,
side by side with a bare websockets echo server measured in the same run.

Run: python bench/load.py --players 1 10 100 1000 --seconds 8 --out bench/results/load

Each player is a closed loop: send a move, wait for its ack, send the next (or, with
`--rate R`, the same loop paced at R moves a second per player, each latency counted from
the move's scheduled time so that a server falling behind shows). Players race in
pairs on casual Klondike races with a named deal, so every move is known to be legal in
advance (a short opening, then stock clicks, chosen so that the board is never stuck and the
server does full work per move: validate, persist, ack, broadcast progress to the opponent).
The echo clients send a frame of the same size and wait for it to come back. Both servers run
as subprocesses with the generator in this process, so the ratio of the two is what matters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from solrace.engine import Move, deal
from solrace.server.protocol.codec import decode_server, encode, encode_raw, unpack_map
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
    RaceStarted,
    RaceUpdate,
    StartRace,
    Welcome,
)

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def endless_moves(number: str, opening: int, rng: random.Random) -> list[str] | None:
    """An opening of random card moves, then stock clicks; None if the board could get stuck
    (every position of two full stock cycles must keep a card move, so the server's stuck test
    stays cheap and no player finishes)."""
    game = deal("klondike", number)
    for _ in range(opening):
        moves = [m for m in game.legal_moves() if m.n and not m.src.startswith("f")]
        if not moves:
            return None
        game.play(rng.choice(moves))
    prefix = [str(m) for m in game.history]
    cycle = len(game.stock.cards) + len(game.waste.cards) + 1
    for _ in range(2 * cycle):
        if not game.can_deal() or not game.card_moves():
            return None
        game.play(Move.parse("deal"))
    return prefix


async def paced(rate: float | None, k: int, start: float) -> float:
    """With a rate: wait for the `k`th send time of a player that began at `start` and
    return it (a late send keeps its schedule: its wait counts in its latency). Without
    one: now."""
    if rate is None:
        return time.perf_counter()
    due = start + k / rate
    delay = due - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
    return due


#: Closed-loop players make their first move at a random moment within this many seconds
#: of the go (less than the warm-up). Started together they would move in lock-step: every
#: move of a wave read, stored and acked together, then every next one sent together, the
#: server idle while the generator works and the other way round.
START_SPREAD_S = 0.5


async def begin(rate: float | None) -> float:
    """Wait for this player's first move; return when the player's schedule begins (with a
    rate: a random moment within one interval, which `paced` waits for)."""
    if rate:
        return time.perf_counter() + random.random() / rate
    await asyncio.sleep(random.random() * START_SPREAD_S)
    return time.perf_counter()


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)
    count: int = 0


async def recv_until(ws: ClientConnection, kind: type, limit_s: float = 30.0) -> object:
    async with asyncio.timeout(limit_s):
        while True:
            message = decode_server(await ws.recv())  # type: ignore[arg-type]
            if isinstance(message, kind):
                return message


@dataclass
class Pairing:
    """What the two players of one race tell each other before it starts: its id (from the
    creator) and that the other one has joined (to the creator, who may start it then)."""

    race_id: asyncio.Future[RaceId]
    joined: asyncio.Event = field(default_factory=asyncio.Event)


async def solrace_player(
    url: str,
    name: str,
    race: Pairing,
    creator: bool,
    number: str,
    prefix: list[str],
    ready: asyncio.Barrier,
    go: asyncio.Event,
    stop: asyncio.Event,
    stats: Stats,
    turn: tuple[asyncio.Event, asyncio.Event] | None = None,
    rate: float | None = None,
) -> None:
    if turn is not None:
        await turn[0].wait()  # connect in player order (a round-robin balancer alternates)
    async with connect(url, compression=None, max_size=1 << 20) as ws:
        if turn is not None:
            turn[1].set()
        await ws.send(encode(Hello(protocol=PROTOCOL_VERSION, name=name)))
        welcome = await recv_until(ws, Welcome)
        assert isinstance(welcome, Welcome)
        if creator:
            await ws.send(
                encode(CreateRace(game="klondike", seats=2, time_limit_s=3600, game_number=number))
            )
            update = await recv_until(ws, RaceUpdate)
            assert isinstance(update, RaceUpdate)
            race.race_id.set_result(update.race_id)
            race_id = update.race_id
            await race.joined.wait()
            await ws.send(encode(StartRace(race_id=race_id)))
        else:
            race_id = await race.race_id
            await ws.send(encode(JoinRace(race_id=race_id)))
            await recv_until(ws, RaceUpdate)
            race.joined.set()
        # Every race has started before the first move is timed: the measured window holds
        # moves only, by every player (not the starts of races still waiting for their tick).
        await recv_until(ws, RaceStarted)
        await ready.wait()
        await go.wait()
        seq = 0
        moves = iter(prefix)
        start = await begin(rate)
        # The generator shares the machine with the server: it reads only the type and seq
        # of each reply (no schema validation) so that it measures the server, not itself.
        while not stop.is_set():
            text = next(moves, "deal")
            sent = await paced(rate, seq, start)
            await ws.send(
                encode_raw({"type": "move", "race_id": race_id, "seq": seq, "move": text})
            )
            while True:
                reply = unpack_map(await ws.recv())  # type: ignore[arg-type]
                if reply.get("seq") == seq and reply["type"] in ("move_ack", "move_rejected"):
                    break
            if reply["type"] == "move_rejected":
                raise RuntimeError(f"{name}: {text} rejected: {reply['reason']}")
            stats.latencies.append(time.perf_counter() - sent)
            stats.count += 1
            seq += 1


async def echo_client(
    url: str,
    frame: bytes,
    ready: asyncio.Barrier,
    go: asyncio.Event,
    stop: asyncio.Event,
    stats: Stats,
    rate: float | None = None,
) -> None:
    async with connect(url, compression=None) as ws:
        await ready.wait()
        await go.wait()
        start = await begin(rate)
        k = 0
        while not stop.is_set():
            sent = await paced(rate, k, start)
            k += 1
            await ws.send(frame)
            await ws.recv()
            stats.latencies.append(time.perf_counter() - sent)
            stats.count += 1


def summarize(stats: Stats, seconds: float) -> dict[str, float]:
    lat = sorted(stats.latencies) or [float("nan")]
    return {
        "moves_per_s": stats.count / seconds,
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "mean_ms": 1000 * statistics.fmean(lat),
    }


async def run_phase(
    tasks_for: list[Any],
    seconds: float,
    go: asyncio.Event,
    stop: asyncio.Event,
    ready: asyncio.Barrier,
    stats: Stats,
    server_pid: int | None = None,
) -> dict[str, float]:
    """Run the clients; measure `seconds` after a warm-up, with this process's (the load
    generator's) CPU time per message in that window; with `server_pid`, also the server's
    (all its threads: user + system)."""
    tasks = [asyncio.create_task(t) for t in tasks_for]
    async with asyncio.timeout(120):
        while ready.n_waiting < ready.parties - 1:
            await asyncio.sleep(0.05)
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()  # type: ignore[misc]
    await ready.wait()
    go.set()
    warmup = 1.0
    await asyncio.sleep(warmup)
    stats.latencies.clear()
    stats.count = 0
    cpu_before = cpu_seconds(server_pid)
    own_before = cpu_seconds(os.getpid())
    await asyncio.sleep(seconds)
    result = summarize(stats, seconds)
    if stats.count:
        result["client_cpu_us"] = 1e6 * (cpu_seconds(os.getpid()) - own_before) / stats.count
    if server_pid is not None and stats.count:
        result["server_cpu_us"] = 1e6 * (cpu_seconds(server_pid) - cpu_before) / stats.count
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    for t in tasks:
        if t.exception():
            raise t.exception()  # type: ignore[misc]
    return result


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` so far (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_env() -> dict[str, str]:
    """The environment of a node under load: no countdown, no rate limit, no limit on the
    connections from one address (every simulated player is on 127.0.0.1) nor on the new
    names the node registers (every player is a new name), warnings only."""
    return dict(
        os.environ,
        SOLRACE_COUNTDOWN_S="0",
        SOLRACE_RATE_CAPACITY="1000000",
        SOLRACE_RATE_REFILL_PER_S="1000000",
        SOLRACE_MAX_CONNECTIONS_PER_ADDRESS="0",
        SOLRACE_REGISTER_NODE_BURST="1000000",
        SOLRACE_LOG_LEVEL="WARNING",
    )


def start_process(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def race_numbers(players: int) -> list[tuple[str, list[str]]]:
    """Deals (and their openings) that keep every race going, one per pair (at most 50)."""
    rng = random.Random(players)
    pairs = max(1, players // 2)
    numbers: list[tuple[str, list[str]]] = []
    candidate = 1000
    while len(numbers) < min(pairs, 50):
        candidate += 1
        prefix = endless_moves(str(candidate), 6, rng)
        if prefix is not None:
            numbers.append((str(candidate), prefix))
    return numbers


async def measure(
    players: int,
    seconds: float,
    data_dir: Path,
    attach: int | None = None,
    rate: float | None = None,
) -> dict[str, dict[str, float]]:
    numbers = race_numbers(players)
    frame = encode(MakeMove(race_id="r0123456789", seq=12345, move="t2-t5:3"))

    if attach is not None:
        return {"solrace": await measure_solrace(players, seconds, attach, numbers, rate=rate)}
    echo_port = free_port()
    echo = start_process([sys.executable, str(HERE / "echo_server.py"), str(echo_port)])
    try:
        wait_port(echo_port, echo)
        go, stop, stats = asyncio.Event(), asyncio.Event(), Stats()
        ready = asyncio.Barrier(players + 1)
        coros = [
            echo_client(f"ws://127.0.0.1:{echo_port}", frame, ready, go, stop, stats, rate)
            for _ in range(players)
        ]
        echo_result = await run_phase(coros, seconds, go, stop, ready, stats, echo.pid)
    finally:
        stop_process(echo)

    port = free_port()
    env = server_env()
    server = start_process(
        [
            sys.executable,
            "-m",
            "solrace.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir / f"n{players}"),
        ],
        env,
    )
    try:
        wait_port(port, server)
        solrace_result = await measure_solrace(
            players, seconds, port, numbers, server_pid=server.pid, rate=rate
        )
    finally:
        stop_process(server)
    return {"echo": echo_result, "solrace": solrace_result}


async def measure_solrace(
    players: int,
    seconds: float,
    port: int,
    numbers: list[tuple[str, list[str]]],
    *,
    ordered: bool = False,
    server_pid: int | None = None,
    rate: float | None = None,
) -> dict[str, float]:
    go, stop, stats = asyncio.Event(), asyncio.Event(), Stats()
    ready = asyncio.Barrier(players + 1)
    coros = []
    tag = random.Random().randrange(10**6)
    turns = [asyncio.Event() for _ in range(players + 1)]
    turns[0].set()
    for i in range(players):
        number, prefix = numbers[(i // 2) % len(numbers)]
        if i % 2 == 0:
            race = Pairing(asyncio.get_running_loop().create_future())
            if i + 1 == players:  # the last player of an odd number races alone
                race.joined.set()
        coros.append(
            solrace_player(
                f"ws://127.0.0.1:{port}",
                f"l{tag}_{players}_{i}",
                race,
                i % 2 == 0,
                number,
                prefix,
                ready,
                go,
                stop,
                stats,
                (turns[i], turns[i + 1]) if ordered else None,
                rate,
            )
        )
    return await run_phase(coros, seconds, go, stop, ready, stats, server_pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window per run")
    parser.add_argument("--out", type=Path, help="write OUT.json and OUT.svg")
    parser.add_argument(
        "--attach", type=int, metavar="PORT", help="only load a running server (for profiling)"
    )
    parser.add_argument(
        "--rate",
        type=float,
        metavar="R",
        help="pace every player at R moves a second (default: as fast as the acks come)",
    )
    args = parser.parse_args()
    if args.attach:
        for n in args.players:
            with tempfile.TemporaryDirectory() as tmp:
                r = asyncio.run(measure(n, args.seconds, Path(tmp), args.attach, args.rate))
            print(n, r)
        return
    results = {}
    print(
        f"{'players':>7} | {'echo msg/s':>10} {'p50':>7} {'p99':>7} | "
        f"{'solrace mv/s':>12} {'p50':>7} {'p99':>7} | {'thr ratio':>9} {'p99 ratio':>9} | "
        f"{'server CPU/msg: echo':>20} {'solrace':>8} | {'client CPU/msg: echo':>20} "
        f"{'solrace':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.players:
            r = asyncio.run(measure(n, args.seconds, Path(tmp), rate=args.rate))
            e, s = r["echo"], r["solrace"]
            r["ratio"] = {
                "throughput": s["moves_per_s"] / e["moves_per_s"],
                "p99": s["p99_ms"] / e["p99_ms"],
            }
            results[n] = r
            print(
                f"{n:>7} | {e['moves_per_s']:>10,.0f} "
                f"{e['p50_ms']:>6.1f}ms {e['p99_ms']:>6.1f}ms | "
                f"{s['moves_per_s']:>12,.0f} {s['p50_ms']:>6.1f}ms {s['p99_ms']:>6.1f}ms | "
                f"{r['ratio']['throughput']:>8.0%} {r['ratio']['p99']:>8.1f}x | "
                f"{e.get('server_cpu_us', float('nan')):>18.0f}us "
                f"{s.get('server_cpu_us', float('nan')):>6.0f}us | "
                f"{e.get('client_cpu_us', float('nan')):>18.0f}us "
                f"{s.get('client_cpu_us', float('nan')):>6.0f}us",
                flush=True,
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        from plot import line_chart_svg

        args.out.with_suffix(".svg").write_text(line_chart_svg(results))


if __name__ == "__main__":
    main()
