"""`solrace verify FILE`: check a finished race's replay offline.

Recomputes the commitment from game, number and salt, replays every racer's moves with the
engine (each must be legal), and recomputes the ranking. Exit status 0: the replay checks out;
1: it does not (each problem is printed); 2: the file cannot be read or is not a replay.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from solrace.replay_file import load_replay
from solrace.server.protocol.replay import ReplayFileError, shorten, verify_replay
from solrace.server.protocol.safe_text import printable


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="solrace verify",
        description="Check a finished race's replay: commitment, every move, the ranking. "
        "Exit status 0: the replay verifies; 1: it does not; 2: the file is not a replay.",
    )
    parser.add_argument("file", type=Path, help="replay as JSON (or one msgpack replay frame)")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only the problems (nothing when the replay verifies); "
        "the exit status tells the result",
    )
    args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
    try:
        replay = load_replay(args.file)
    except ReplayFileError as exc:
        print(f"solrace verify: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"solrace verify: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    report = verify_replay(replay)
    # Every value from the file in these lines went through `shorten` (escaped, one line);
    # `printable` is the net for any that did not.
    if not args.quiet:
        race, game, number = (shorten(v) for v in (replay.race_id, replay.game, replay.game_number))
        print(printable(f"race {race}: {game} deal {number}"))
        for line in report.lines:
            print(printable(line))
    for problem in report.problems:
        print(printable(f"PROBLEM: {problem}"))
    if not args.quiet:
        print(report.verdict)
    return 0 if report.is_valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
