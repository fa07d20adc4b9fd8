"""Engine speed: deals/s, validated moves/s (alone, from text, with the stuck test), legal-move
generation/s, 200-move replay time.

Run: python bench/engine_bench.py [--seconds 1.0] [--json bench/results/engine.json]

Moves come from seeded random playouts (foundation moves preferred half the time, like the
conformance playouts), recorded first and then timed through ``Game.play`` (full legality check
and automatic follow-ups), so the timing excludes the choosing. "stuck moves/s" plays each
move from text and then asks `is_stuck()`, as the server does for every move it accepts.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path

from solrace.engine import GAME_IDS, Move, deal, replay

NUMBERS = [str(n) for n in range(1, 40)] + [str(10**16 + 7 * n) for n in range(40)]


def random_playout(game_id: str, number: str, rng: random.Random, limit: int = 400) -> list[Move]:
    game = deal(game_id, number)
    for _ in range(limit):
        moves = game.legal_moves()
        if not moves:
            break
        to_foundation = [m for m in moves if m.dst.startswith("f") and not m.src.startswith("f")]
        move = rng.choice(to_foundation if to_foundation and rng.random() < 0.5 else moves)
        game.play(move)
    return list(game.history)


def rate(fn: Callable[[], int], seconds: float) -> float:
    """Units per second of ``fn`` (which returns the units it did), best of repeated runs."""
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += fn()
    return done / elapsed


def bench_game(game_id: str, seconds: float) -> dict[str, float]:
    rng = random.Random(f"bench-{game_id}")
    playouts = [(n, random_playout(game_id, n, rng)) for n in NUMBERS[:24]]

    def deals() -> int:
        for n in NUMBERS:
            deal(game_id, n)
        return len(NUMBERS)

    def timed_plays(as_text: bool, stuck_test: bool = False) -> float:
        """Moves per second through ``play`` (and ``is_stuck`` after each, with
        `stuck_test`); boards are dealt outside the timer."""
        done, spent = 0, 0.0
        while spent < seconds:
            boards = [
                (deal(game_id, n), [str(m) for m in ms] if as_text else ms) for n, ms in playouts
            ]
            start = time.perf_counter()
            for game, moves in boards:
                for m in moves:
                    game.play(m)
                    if stuck_test:
                        game.is_stuck()
                done += len(moves)
            spent += time.perf_counter() - start
        return done / spent

    boards = []
    for n, moves in playouts[:6]:
        g = deal(game_id, n)
        for m in moves[: len(moves) // 2]:
            g.play(m)
        boards.append(g)

    def legal_generation() -> int:
        for g in boards:
            g.legal_moves()
        return len(boards)

    longest_n, longest = max(playouts, key=lambda p: len(p[1]))
    replay_moves = [str(m) for m in longest[:200]]

    def one_replay() -> int:
        replay(game_id, longest_n, replay_moves)
        return 1

    replay_rate = rate(one_replay, seconds)
    return {
        "deals_per_s": rate(deals, seconds),
        "validated_moves_per_s": timed_plays(as_text=False),
        "validated_text_moves_per_s": timed_plays(as_text=True),
        "stuck_tested_moves_per_s": timed_plays(as_text=True, stuck_test=True),
        "legal_generations_per_s": rate(legal_generation, seconds),
        "replay_moves": len(replay_moves),
        "replay_ms": 1000.0 / replay_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--games", nargs="*", default=list(GAME_IDS))
    args = parser.parse_args()
    rows = {}
    header = (
        f"{'game':<22} {'deals/s':>9} {'moves/s':>10} {'text moves/s':>13} "
        f"{'stuck moves/s':>14} {'legal/s':>9} {'replay':>14}"
    )
    print(header)
    for game_id in args.games:
        r = bench_game(game_id, args.seconds)
        rows[game_id] = r
        print(
            f"{game_id:<22} {r['deals_per_s']:>9,.0f} {r['validated_moves_per_s']:>10,.0f} "
            f"{r['validated_text_moves_per_s']:>13,.0f} {r['stuck_tested_moves_per_s']:>14,.0f} "
            f"{r['legal_generations_per_s']:>9,.0f} "
            f"{r['replay_ms']:>7.2f} ms/{r['replay_moves']:>3.0f}",
            flush=True,
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"python": platform.python_version(), "machine": platform.machine()}
        args.json.write_text(json.dumps({"meta": meta, "games": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
