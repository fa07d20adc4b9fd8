"""`solrace bot`: its bots connect, create or find their race, join and play it to the end,
then the race's results are printed (`run_bots`); stopped (Ctrl-C, SIGTERM, SIGHUP), they
first leave their race if it has not started. The command line is `bot_args`'s, the bots
`bots.Bot`s."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from solrace.cli import INTERRUPTED_STATUS
from solrace.server.protocol.ids import RaceId

from .bot_args import bot_problems, build_parser, parse_noting_defaults
from .bot_names import held_names
from .bots import Bot, BotError, BotRefusedError, first_open_race, renamed_text
from .connect_failures import ConnectionFailedError
from .held_deals import deal_line
from .refusals import invite_hint
from .render import result_line
from .state import UNKNOWN
from .stopping import Stopped, run_until_stopped
from .strategy import make_strategy
from .wire_text import printable

#: How long a stopped bot waits for the answer to a create it sent (to leave that race).
CREATE_ANSWER_S = 2.0


async def run_bots(args: argparse.Namespace) -> int:
    """The bots of `solrace bot`, to the end of their race (0) or a failure (1). Stopped by
    Ctrl-C, SIGTERM or SIGHUP (`run_until_stopped`: 128 + the signal), they first leave
    their race if it has not started: nobody should join a race of bots that are gone."""
    bots = _make_bots(args)
    race_of: list[RaceId] = []  # the bots' race, once known

    async def leave() -> None:
        await _leave_on_stop(bots, race_of[0] if race_of else None)

    try:
        outcome = await run_until_stopped(
            _race(args, bots, race_of), on_stop=leave, name="solrace-bots"
        )
    finally:
        await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
    return outcome.status if isinstance(outcome, Stopped) else outcome


async def _leave_on_stop(bots: list[Bot], race_id: RaceId | None) -> None:
    """Stopped: leave the bots' race if it is open, else say it goes on without them; one
    line. A race created but not yet answered is waited for a little (`CREATE_ANSWER_S`)."""
    if race_id is None and bots:
        race_id = await bots[0].created_race(CREATE_ANSWER_S)
    if race_id is None:
        return
    me = {bot.state.player_id for bot in bots}
    creator = next(
        (bot for bot in bots if bot.race and bot.race.info and bot.race.info.creator in me), None
    )
    left: list[str] = []
    failures: list[str] = []
    # The creator last: its leave may cancel the race for the others.
    for bot in sorted(bots, key=lambda b: b is creator):
        try:
            if await bot.leave(race_id):
                left.append(bot.name)
        except (BotError, ConnectionFailedError) as exc:
            failures.append(str(exc))
    if left:
        print(printable(f"stopped: left race {race_id} ({', '.join(left)})"), flush=True)
    elif not failures:
        print(printable(_goes_on_text(bots, race_id)), flush=True)
    for failure in failures:
        print(printable(f"solrace bot: cannot leave race {race_id}: {failure}"), file=sys.stderr)


def _goes_on_text(bots: list[Bot], race_id: RaceId) -> str:
    """What becomes of the bots' race under way: the server puts the bots still in it out
    (gone) after its grace period; those out of it already (resigned, stuck...) stay so."""
    race = bots[0].race
    status = race.status if race is not None else UNKNOWN
    out: list[str] = []
    for bot in bots:
        racer = race.racers.get(bot.state.player_id) if race and bot.state.player_id else None
        if racer is not None and racer.state not in ("joined", "playing"):
            out.append(f"{bot.name} {racer.state}")
    if len(out) == len(bots):
        already = ", ".join(out)
        return f"stopped: race {race_id} ({status}) goes on; the bots are out of it ({already})"
    text = (
        f"stopped: race {race_id} ({status}) goes on without the bots; the server puts them "
        "out (gone) after its grace period"
    )
    return text + (f" ({', '.join(out)} already)" if out else "")


def _make_bots(args: argparse.Namespace) -> list[Bot]:
    return [
        Bot(
            args.server,
            name,
            make_strategy(
                args.strategy,
                seed=None if args.seed is None else args.seed + i,
                max_moves=args.max_moves,
            ),
            delay_s=args.delay,
            held=held,
        )
        for i, (name, held) in enumerate(held_names(args.server, args.name, args.count))
    ]


async def _race(args: argparse.Namespace, bots: list[Bot], race_of: list[RaceId]) -> int:
    """Connect, create or find the race (its id goes into `race_of`), join, play."""
    try:
        await asyncio.gather(*(bot.connect() for bot in bots))
        for bot in bots:
            renamed = renamed_text(bot, args.server)
            if renamed is not None:
                print(printable(f"solrace bot: {renamed}"), file=sys.stderr, flush=True)
        if args.create:
            race_id = await bots[0].create(
                args.create,
                args.seats,
                args.time_limit,
                invite_code=args.invite,
                game_number=args.game_number,
            )
            print(printable(f"race {race_id}"), flush=True)
            others = bots[1:]
        else:
            found: RaceId | None = args.race or await first_open_race(
                bots[0], invite_code=args.invite
            )
            if found is None:
                print("solrace bot: no open race to join (use --create)", file=sys.stderr)
                return 1
            race_id = found
            others = bots
        race_of.append(race_id)
        for bot in others:
            await bot.join(race_id, args.invite)
        if not args.create:  # said once joined: a race that refuses them is not announced
            print(printable(f"race {race_id}"), flush=True)
        if args.start:  # with --create (`bot_problems`): the first bot made the race
            await bots[0].start()
        results = await asyncio.gather(*(bot.play() for bot in bots))
    except (ConnectionFailedError, BotError) as exc:
        hint = ""
        if isinstance(exc, BotRefusedError):  # the race --race joins refused it, as for `play`
            hint = invite_hint(exc.code, invite_given=args.invite is not None)
        print(printable(f"solrace bot: {exc}{hint}"), file=sys.stderr)
        return 1
    race = bots[0].race
    if race is not None and race.results is not None:
        for entry in race.results:
            print(printable(result_line(entry)), flush=True)
        if race.commitment_ok is not None:
            print(printable(deal_line(race)), flush=True)
    for result in results:
        if result.reason:
            print(printable(f"{result.name}: {result.reason}"), flush=True)
    return 1 if race is not None and race.is_off_server else 0


def main(argv: Sequence[str] | None = None) -> int:
    """`solrace bot ...`."""
    args, given = parse_noting_defaults(
        build_parser(), sys.argv[1:] if argv is None else argv, ("seats", "time_limit")
    )
    problems = bot_problems(args, given)
    for problem in problems:
        print(f"solrace bot: {problem}", file=sys.stderr)
    if problems:
        return 2
    try:
        return asyncio.run(run_bots(args))
    except KeyboardInterrupt:
        return INTERRUPTED_STATUS


__all__ = ["CREATE_ANSWER_S", "main", "run_bots"]
