"""Alternated A/B runs of the node under load: the solrace phase of `load.py` against nodes
started from different source trees or with different settings, in turns, so that the
machine's drift falls on every variant alike.

Run: python bench/compare.py --rounds 2 --players 1000 --seconds 6 \\
         before=/tmp/old-tree after=. nofold=.:SOLRACE_PROGRESS_INTERVAL_S=600

Each variant is `LABEL=TREE[:NAME=VALUE,...]`: the node runs with `PYTHONPATH=TREE` (a clean
export of another commit: `git archive COMMIT | tar -x -C DIR`) and the given environment on
top of `load.py`'s `server_env()`. Rounds alternate the order (A B, B A, ...). Per run it
prints moves/s, p99 and the server's CPU per move; at the end each variant's medians. The
server's CPU per move is the steadiest figure: runs of one code differ by up to 15% in
moves/s on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
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


@dataclass
class Variant:
    label: str
    tree: Path
    env: dict[str, str]
    runs: list[dict[str, float]] = field(default_factory=list)


def parse_variant(spec: str) -> Variant:
    """`LABEL=TREE[:NAME=VALUE,...]` as a `Variant`."""
    label, sep, rest = spec.partition("=")
    if not sep or not label:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected LABEL=TREE[:NAME=VALUE,...]")
    tree, _, settings = rest.partition(":")
    env: dict[str, str] = {}
    for item in filter(None, settings.split(",")):
        name, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"{item!r}: expected NAME=VALUE")
        env[name] = value
    path = Path(tree).resolve()
    if not (path / "solrace").is_dir():
        raise argparse.ArgumentTypeError(f"{tree!r} holds no solrace package")
    return Variant(label, path, env)


def run_once(variant: Variant, players: int, seconds: float) -> dict[str, float]:
    """One node of `variant` under `players` closed-loop players for `seconds`."""
    env = server_env() | variant.env | {"PYTHONPATH": str(variant.tree)}
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        node = start_process(
            [sys.executable, "-m", "solrace.cli", "serve", "--port", str(port), "--data-dir", data],
            env,
        )
        try:
            wait_port(port, node)
            numbers = race_numbers(players)
            return asyncio.run(
                measure_solrace(players, seconds, port, numbers, server_pid=node.pid)
            )
        finally:
            stop_process(node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="+", type=parse_variant, metavar="LABEL=TREE[:ENV]")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each variant")
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=6.0, help="measured window per run")
    args = parser.parse_args()
    variants: list[Variant] = args.variants
    width = max(len(v.label) for v in variants)
    for round_number in range(args.rounds):
        order = variants if round_number % 2 == 0 else variants[::-1]
        for variant in order:
            result = run_once(variant, args.players, args.seconds)
            variant.runs.append(result)
            print(
                f"{variant.label:<{width}}  {result['moves_per_s']:>7,.0f} moves/s  "
                f"p99 {result['p99_ms']:>6.1f} ms  server {result['server_cpu_us']:>5.0f} us/move",
                flush=True,
            )
    for variant in variants:
        cpu = statistics.median(r["server_cpu_us"] for r in variant.runs)
        rate = statistics.median(r["moves_per_s"] for r in variant.runs)
        print(f"median {variant.label:<{width}}  {rate:>7,.0f} moves/s  server {cpu:>5.0f} us/move")


if __name__ == "__main__":
    main()
