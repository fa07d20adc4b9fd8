"""Soak: whole races played back to back by bots against one node, watching its memory.

Run: python bench/soak.py --minutes 5 --lanes 6 --out bench/results/soak

Each lane plays race after race: four bots (greedy strategy, no delay between moves) connect
with the identity they had in the lane's previous race, one creates a 4-seat casual Klondike
race, the others join, it starts, and all play until the race ends (a bot resigns after
`--max-moves`). The server is a subprocess on a fresh data folder. Every `--every` seconds
the script prints the races finished so far and the server's resident memory, open file
descriptors and CPU; at the end, the memory growth between the first sample after the
warm-up and the last. A leak (races, sessions or tasks kept after their race) shows as
memory growing with the races played; a crash or a race that never ends stops the run with
an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from load import cpu_seconds, free_port, server_env, start_process, stop_process, wait_port

from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.strategy import make_strategy

SEATS = 4


@dataclass
class Tally:
    races: int = 0
    moves: int = 0
    states: dict[str, int] = field(default_factory=dict)


def memory_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def lane(url: str, index: int, max_moves: int, stop: asyncio.Event, tally: Tally) -> None:
    """Race after race with the same four identities until `stop`."""
    tokens: list[str | None] = [None] * SEATS
    names = [f"soak{index}x{seat}" for seat in range(SEATS)]
    race_number = 0
    while not stop.is_set():
        bots = [
            Bot(
                url,
                names[seat],
                make_strategy("greedy", seed=index * 1000 + race_number, max_moves=max_moves),
                delay_s=0.0,
                connection=Connection(url, name=names[seat], token=tokens[seat]),
            )
            for seat in range(SEATS)
        ]
        try:
            await asyncio.gather(*(bot.connect() for bot in bots))
            for seat, bot in enumerate(bots):
                welcome = bot.conn.welcome
                assert welcome is not None
                tokens[seat], names[seat] = welcome.token, bot.name
            race_id = await bots[0].create("klondike", SEATS, 300)
            for bot in bots[1:]:
                await bot.join(race_id)
            await bots[0].start()
            async with asyncio.timeout(300):
                results = await asyncio.gather(*(bot.play() for bot in bots))
        finally:
            await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
        for result in results:
            if result.state in ("playing", "unknown"):
                raise RuntimeError(f"race {race_id} ended with {result.name} {result.state}")
            tally.states[result.state] = tally.states.get(result.state, 0) + 1
            tally.moves += result.moves
        tally.races += 1
        race_number += 1


async def soak(minutes: float, lanes: int, every: float, max_moves: int) -> dict[str, object]:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = server_env()
        command = [sys.executable, "-m", "solrace.cli", "serve", "--port", str(port)]
        server = start_process([*command, "--data-dir", str(Path(tmp) / "data")], env)
        try:
            wait_port(port, server)
            url = f"ws://127.0.0.1:{port}"
            stop, tally = asyncio.Event(), Tally()
            tasks = [
                asyncio.create_task(lane(url, i, max_moves, stop, tally)) for i in range(lanes)
            ]
            samples: list[dict[str, float]] = []
            began = time.monotonic()
            print(f"{'s':>6} {'races':>6} {'moves':>8} {'rss MiB':>8} {'fds':>5} {'cpu s':>7}")
            while time.monotonic() - began < minutes * 60:
                done, _ = await asyncio.wait(tasks, timeout=every)
                for task in done:
                    task.result()  # a lane that failed stops the run with its error
                    raise RuntimeError("a lane stopped")
                sample = {
                    "s": round(time.monotonic() - began, 1),
                    "races": tally.races,
                    "moves": tally.moves,
                    "rss_mib": memory_kib(server.pid) / 1024,
                    "fds": open_fds(server.pid),
                    "cpu_s": cpu_seconds(server.pid),
                }
                samples.append(sample)
                print(
                    f"{sample['s']:>6.0f} {tally.races:>6} {tally.moves:>8} "
                    f"{sample['rss_mib']:>8.1f} {sample['fds']:>5} {sample['cpu_s']:>7.1f}",
                    flush=True,
                )
            stop.set()
            await asyncio.gather(*tasks)
        finally:
            stop_process(server)
        if server.returncode != 0:
            raise RuntimeError(f"server exited with {server.returncode}")
    first = samples[min(1, len(samples) - 1)]  # after the warm-up sample
    last = samples[-1]
    return {
        "minutes": minutes,
        "lanes": lanes,
        "races": tally.races,
        "moves": tally.moves,
        "states": tally.states,
        "rss_first_mib": round(first["rss_mib"], 1),
        "rss_last_mib": round(last["rss_mib"], 1),
        "races_between": last["races"] - first["races"],
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--lanes", type=int, default=6, help="races played at once")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--max-moves", type=int, default=400, help="a bot resigns after these")
    parser.add_argument("--out", type=Path, help="write OUT.json")
    args = parser.parse_args()
    result = asyncio.run(soak(args.minutes, args.lanes, args.every, args.max_moves))
    print(
        f"{result['races']} races, {result['moves']} moves, states {result['states']}; "
        f"memory {result['rss_first_mib']} MiB after the warm-up, {result['rss_last_mib']} MiB "
        f"at the end ({result['races_between']} races between)"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
