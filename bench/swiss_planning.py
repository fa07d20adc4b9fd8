"""Planning a Swiss round: the CPU one `plan_round` call holds the event loop for.

Run: python bench/swiss_planning.py [--fields 256:auto 237:16 133:31 113:37 89:48 69:63]
     [--drops] [--seed 0] [--repeat 3]

Each field (PLAYERS:ROUNDS, `auto` for the default ceil(log2 N) rounds; the defaults are the
largest field a best-of-1 Swiss of those rounds takes under the server's view budget) plays
a whole Swiss with random results (either player wins each race), as the service plans it:
each round is planned from the rounds played. Every `plan_round` call is timed `--repeat`
times (process CPU time, best of them: the call is deterministic) and the mean and worst
round are printed, with the rematches of the whole Swiss. With `--drops`, a player drops out
after every third round from round 2 on, which makes the field odd every other round (the
case with a candidate for the bye per player who has not had one).

Then a round with no rematch-free pairing at all, built on purpose: 88 players in two groups
of 43 and 45 whose players have each met the whole other group (45 rounds), so every search
runs out before the pairing with the fewest rematches is taken.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from swiss_play import played_at_random

from solrace.server.protocol.pairing import plan_round
from solrace.server.protocol.tournament_errors import MatchId, PlayerId
from solrace.server.protocol.tournament_model import (
    Format,
    FormatRules,
    Pairing,
    PlayedRound,
    RoundPlan,
)

DEFAULT_FIELDS = ("256:auto", "237:16", "133:31", "113:37", "89:48", "69:63")


def timed_plan(
    rules: FormatRules,
    seeds: list[PlayerId],
    history: list[PlayedRound],
    dropped: list[PlayerId],
    repeat: int,
) -> tuple[RoundPlan | None, float]:
    """The round planned and the best CPU time (s) of `repeat` plannings."""
    best = float("inf")
    plan: RoundPlan | None = None
    for _ in range(repeat):
        started = time.process_time()
        plan = plan_round(rules, seeds, history, dropped)
        best = min(best, time.process_time() - started)
    return plan, best


def rematches(history: list[PlayedRound]) -> int:
    seen: set[frozenset[PlayerId]] = set()
    again = 0
    for rnd in history:
        for pairing in rnd.plan.pairings:
            pair = frozenset(pairing.players)
            again += pair in seen
            seen.add(pair)
    return again


def whole_swiss(field: str, *, drops: bool, seed: int, repeat: int) -> str:
    count_text, _, rounds_text = field.partition(":")
    count = int(count_text)
    rounds = None if rounds_text == "auto" else int(rounds_text)
    rules = FormatRules(Format.SWISS, swiss_rounds=rounds)
    seeds = [PlayerId(f"p{i}") for i in range(1, count + 1)]
    rng = random.Random(seed)
    history: list[PlayedRound] = []
    dropped: list[PlayerId] = []
    times: list[float] = []
    while True:
        plan, spent = timed_plan(rules, seeds, history, dropped, repeat)
        if plan is None:
            break
        times.append(spent)
        history.append(played_at_random(rules, seeds, plan, rng))
        if drops and len(history) % 3 == 2:
            dropped.append(seeds[(7 * len(history)) % count])
    worst = max(range(len(times)), key=times.__getitem__)
    return (
        f"{count:4} players {len(history):3} rounds{' drops' if drops else '      '}"
        f"  mean {statistics.mean(times) * 1000:6.1f} ms"
        f"  worst {times[worst] * 1000:6.1f} ms (round {worst + 1:2})"
        f"  rematches {rematches(history)}"
    )


def no_pairing(repeat: int) -> str:
    seeds = [PlayerId(f"p{i}") for i in range(1, 89)]
    first, second = seeds[:43], seeds[43:]
    rules = FormatRules(Format.SWISS, swiss_rounds=46)
    rng = random.Random(1)
    history: list[PlayedRound] = []
    for number in range(1, 46):
        pairs = [(a, second[(i + number) % len(second)]) for i, a in enumerate(first)]
        seated = {p for pair in pairs for p in pair}
        plan = RoundPlan(
            tuple(Pairing(MatchId(f"R{number}-{i + 1}"), pair) for i, pair in enumerate(pairs)),
            tuple(p for p in second if p not in seated),
        )
        history.append(played_at_random(rules, seeds, plan, rng))
    planned, spent = timed_plan(rules, seeds, history, [], repeat)
    assert planned is not None
    met = {frozenset(pairing.players) for rnd in history for pairing in rnd.plan.pairings}
    again = sum(frozenset(pairing.players) in met for pairing in planned.pairings)
    return f"  88 players, no rematch-free pairing: {spent * 1000:6.1f} ms, rematches {again}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fields", nargs="+", default=list(DEFAULT_FIELDS))
    parser.add_argument("--drops", action="store_true", help="also with drop-outs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for field in args.fields:
        print(whole_swiss(field, drops=False, seed=args.seed, repeat=args.repeat), flush=True)
        if args.drops:
            print(whole_swiss(field, drops=True, seed=args.seed, repeat=args.repeat), flush=True)
    print(no_pairing(args.repeat))


if __name__ == "__main__":
    main()
