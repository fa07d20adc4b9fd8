"""`solrace verify FILE`: check a finished race's replay offline.

Recomputes the commitment from game, number and salt, replays every racer's moves with the
engine (each must be legal), and recomputes the ranking. Exit status 0: the replay checks out;
1: it does not (each problem is printed); 2: the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from solrace.server.protocol.codec import unpack_map
from solrace.server.protocol.errors import DecodeError
from solrace.server.protocol.messages import ReplayModel
from solrace.server.protocol.replay import verify_replay


def load_replay(path: Path) -> ReplayModel:
    """A replay from a JSON file (a bare replay, or a `replay` message) or a msgpack frame."""
    data = path.read_bytes()
    value = json.loads(data) if data.lstrip()[:1] == b"{" else unpack_map(data)
    if isinstance(value, dict) and value.get("type") == "replay":
        value = value.get("replay")
    return ReplayModel.model_validate(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="solrace verify",
        description="Check a finished race's replay: commitment, every move, the ranking.",
    )
    parser.add_argument("file", type=Path, help="replay as JSON (or one msgpack replay frame)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
    try:
        replay = load_replay(args.file)
    except (OSError, ValueError, DecodeError, ValidationError) as exc:
        print(f"solrace verify: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    report = verify_replay(replay)
    if not args.quiet:
        print(f"race {replay.race_id}: {replay.game} #{replay.game_number}")
        for line in report.lines:
            print(line)
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    print("replay verified" if report.is_valid else "replay does NOT verify")
    return 0 if report.is_valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
