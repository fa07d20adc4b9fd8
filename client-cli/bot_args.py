"""`solrace bot`'s command line: the parser (every option, with the help that says what it
does) and the checks of what was given that need no server (`bot_problems`: the command exits
2 before it connects). `parse_noting_defaults` and `option_list` serve `solrace play`'s
command line too. Nothing here connects: `bot_cli` runs the command."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Final

from solrace.engine import GAME_IDS

from . import arg_types
from .arg_types import seconds
from .defaults import DEFAULT_SERVER_URL, server_url
from .identity import NAME_RULE, name_problem
from .pacing import SERVER_RATE_CAPACITY, SERVER_RATE_REFILL_PER_S
from .strategy import STRATEGIES

#: The fewest seats a race may have: the server refuses a `create_race` with fewer
#: (`invalid_settings`, "seats: 2..MAX"; MAX is the server's `max_seats` setting, 16 unless
#: its operator changed it, so only the server can say whether a number is too high).
MIN_SEATS: Final = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solrace bot",
        description="Run one or many bot players against a race server. With --create the "
        "first bot creates the race and prints 'race ID'; the others join it. With --race "
        "every bot joins that race; with neither, they join the first open race. Stopped (Ctrl-C, "
        "SIGTERM, SIGHUP), the bots leave their race if it has not started.",
    )
    parser.add_argument(
        "--server",
        type=server_url,
        default=DEFAULT_SERVER_URL,
        help=f"server URL (default {DEFAULT_SERVER_URL})",
    )
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="greedy",
        help="how the bots pick moves: greedy (the move that gains most: cards out, cards "
        "turned over) or random (any legal move) (default greedy)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--race", type=arg_types.race_id, help="join this race id")
    where.add_argument("--create", metavar="GAME", choices=GAME_IDS, help="create a race")
    parser.add_argument(
        "--seats",
        type=int,
        default=2,
        help=f"seats of the race --create makes: {MIN_SEATS} or more, up to the server's most "
        "(default 2)",
    )
    parser.add_argument(
        "--time-limit", type=int, default=600, help="seconds of the created race (default 600)"
    )
    parser.add_argument(
        "--game-number",
        metavar="N",
        type=arg_types.game_number,
        help="deal N in the created race (default: a number drawn by the server in secret)",
    )
    parser.add_argument(
        "--invite",
        type=arg_types.invite_code,
        help="invite code (to create a private race or join one)",
    )
    parser.add_argument(
        "--start",
        action="store_true",
        help="start the race once every bot has joined (needs --create: only a race's "
        "creator may start it)",
    )
    parser.add_argument(
        "--count", type=arg_types.positive, default=1, help="how many bots (default 1)"
    )
    parser.add_argument(
        "--name",
        default=None,
        help=f"bot name (numbered when --count > 1; default bot-1, bot-2, ...): {NAME_RULE}. "
        "A bot's token is kept (bots.json in the config folder), so the next run is the same "
        "player; a name someone else has on the server gets a random suffix (kept too), and "
        "a line on stderr says the name the bot plays as",
    )
    parser.add_argument(
        "--delay",
        type=seconds,
        default=0.25,
        help="seconds between moves (default 0.25); at any delay, 0 too, a bot keeps within "
        "the rate budget its server's welcome says (by default "
        f"{SERVER_RATE_CAPACITY:.0f} messages at once, {SERVER_RATE_REFILL_PER_S:.0f} a second)",
    )
    parser.add_argument(
        "--max-moves",
        type=arg_types.positive,
        default=1000,
        help="a bot resigns after this many moves (default 1000)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the strategies: bot i (0, 1, ...) picks its moves with SEED+i, so a run "
        "can be played again (default: a fresh seed each run)",
    )
    return parser


def parse_noting_defaults(
    parser: argparse.ArgumentParser, argv: Sequence[str], dests: Sequence[str]
) -> tuple[argparse.Namespace, frozenset[str]]:
    """`parser.parse_args(argv)`, and which of `dests` (options with a default) were given:
    argparse leaves an attribute the namespace already has alone unless its option is given
    (abbreviated, `--opt=value` or not), so each starts as None and gets its default after."""
    args = parser.parse_args(list(argv), namespace=argparse.Namespace(**dict.fromkeys(dests)))
    given = frozenset(dest for dest in dests if getattr(args, dest) is not None)
    for dest in dests:
        if dest not in given:
            setattr(args, dest, parser.get_default(dest))
    return args, given


def option_list(options: Sequence[str]) -> str:
    """`--a`, `--a and --b`, `--a, --b and --c`, with the verb that goes with them."""
    if len(options) == 1:
        return f"{options[0]} goes"
    return f"{', '.join(options[:-1])} and {options[-1]} go"


def bot_problems(args: argparse.Namespace, given: frozenset[str]) -> list[str]:
    """What is wrong with `solrace bot`'s options (`given`: the options with a default that
    were given), each said; an option that would change nothing is one of them."""
    problems = []
    if args.name is not None and (problem := name_problem(args.name)) is not None:
        problems.append(problem)
    if not args.create:
        unused = ["--seats"] if "seats" in given else []
        unused += ["--time-limit"] if "time_limit" in given else []
        unused += ["--game-number"] if args.game_number is not None else []
        if unused:
            problems.append(f"{option_list(unused)} with --create GAME (the race the bots make)")
        if args.start:
            problems.append(
                "--start needs --create GAME: only a race's creator may start it (the bots "
                "start the race they create)"
            )
    elif args.seats < MIN_SEATS:
        problems.append(
            f"--seats {args.seats}: a race has {MIN_SEATS} seats or more (the server refuses fewer)"
        )
    elif args.count > args.seats:
        problems.append(
            f"--count {args.count} is more than --seats {args.seats}: every bot needs a seat "
            f"of the race it creates (give --seats {args.count}, or fewer bots)"
        )
    return problems


__all__ = [
    "MIN_SEATS",
    "bot_problems",
    "build_parser",
    "option_list",
    "parse_noting_defaults",
]
