"""Entry points: `solrace play`, `solrace watch` and `solrace replay`.

Each parses its flags, connects (or starts the embedded server for `play` without `--server`)
and runs either the Textual application or, with `--plain`, the line mode.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from solrace.cli import INTERRUPTED_STATUS
from solrace.engine import GAME_IDS
from solrace.replay_file import load_replay
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import ReplayModel
from solrace.server.protocol.replay import verify_replay
from solrace.tasks import cancel_and_wait

from .arg_types import game_number, invite_code, positive, race_id, seconds
from .bot_args import MIN_SEATS, option_list, parse_noting_defaults
from .bots import Bot
from .connect_failures import ConnectionFailedError
from .connection import Connection
from .defaults import DEFAULT_SERVER_URL, server_option, server_url
from .embedded import EmbeddedServer, EmbeddedServerError
from .identity import NAME_RULE, connect_player, data_dir, embedded_key, name_problem
from .leaving import held_race_lines, play_screen_back
from .plain import PlainMode
from .refusals import invite_hint
from .replay import replay_lines
from .session import RequestError, Session
from .strategy import STRATEGIES, make_strategy
from .typed_lines import stdin_lines
from .wire_text import printable

if TYPE_CHECKING:
    from textual.app import App as TextualApp


def _log_to_file(folder: Path) -> None:
    """Keep log lines off the screen: the TUI owns the terminal, the plain mode stdout."""
    folder.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=folder / "client.log",
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


async def run_app(app: TextualApp[None], *, headless: bool = False) -> int:
    """Run a Textual app to its end: 0, or its return code (1 when it crashed: Textual prints
    the traceback once the screen is restored)."""
    await app.run_async(headless=headless)
    return app.return_code or 0


# --- play --------------------------------------------------------------------------------


def build_play_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solrace play",
        description="Play patience races in the terminal. Without --server an embedded server "
        "starts in this process and a bot opponent takes the second seat.",
    )
    parser.add_argument(
        "--server",
        type=server_url,
        help=f"server URL, e.g. {DEFAULT_SERVER_URL} (default: none: an embedded server "
        "runs in this process, the --bot opponent in the second seat)",
    )
    parser.add_argument("--name", help=f"your player name (kept with its token): {NAME_RULE}")
    parser.add_argument("--plain", action="store_true", help="line mode: text board, typed moves")
    parser.add_argument(
        "--game",
        choices=GAME_IDS,
        metavar="GAME",
        help="game against the bot (embedded; default klondike): " + ", ".join(GAME_IDS),
    )
    # One race to begin with: a new one, or one to join.
    first_race = parser.add_mutually_exclusive_group()
    first_race.add_argument("--create", metavar="GAME", choices=GAME_IDS, help="create a race")
    parser.add_argument(
        "--seats",
        type=positive,
        default=2,
        help=f"seats of the race --create makes, {MIN_SEATS} or more (default 2; the race "
        "against the embedded bot has 2)",
    )
    parser.add_argument(
        "--time-limit",
        type=positive,
        default=600,
        help="seconds the race this command creates lasts (default 600)",
    )
    parser.add_argument(
        "--rated", action="store_true", help="the created race changes ratings (default casual)"
    )
    parser.add_argument(
        "--game-number",
        metavar="N",
        type=game_number,
        help="deal N in the created race (casual only: its racers are told the creator chose "
        "the deal; default a number drawn by the server in secret)",
    )
    first_race.add_argument("--race", type=race_id, help="join this race id (not with --create)")
    parser.add_argument(
        "--invite",
        type=invite_code,
        help="invite code: of the private race --race joins, or makes the race --create makes "
        "private (with --server)",
    )
    parser.add_argument(
        "--bot",
        choices=(*STRATEGIES, "none"),
        default="greedy",
        help="the embedded server's bot opponent, none for no opponent (default greedy; not "
        "with --server)",
    )
    parser.add_argument(
        "--bot-delay",
        type=seconds,
        default=1.5,
        help="the bot opponent's seconds per move (default 1.5; not with --server)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="the embedded server's folder (default: 'embedded' in the user data folder, "
        "$SOLRACE_USER_DATA_DIR; not with --server)",
    )
    parser.add_argument("--ascii", action="store_true", help="ASCII cards (TD, not T♦)")
    return parser


class Opponents:
    """Bots seated by `play` on its embedded server."""

    def __init__(self, url: str, strategy: str, delay_s: float, *, identity_key: str) -> None:
        """`identity_key`: the bots' key in `identity.json` (`embedded_key(folder,
        "embedded-bot")`: the bot player of that data folder's server)."""
        self.url = url
        self.identity_key = identity_key
        self.strategy = strategy
        self.delay_s = delay_s
        self.tasks: list[asyncio.Task[object]] = []
        self.bots: list[Bot] = []

    async def seat(self, race_id: RaceId) -> None:
        if self.strategy == "none":
            return
        conn = await connect_player(self.url, self.identity_key, "solrace-bot")
        bot = Bot(
            self.url,
            conn.name or "solrace-bot",
            make_strategy(self.strategy),
            delay_s=self.delay_s,
            connection=conn,
            resign_when_alone=True,
        )
        await bot.connect()
        await bot.join(race_id)
        self.bots.append(bot)
        self.tasks.append(asyncio.create_task(bot.play()))

    async def close(self) -> None:
        await cancel_and_wait(self.tasks)
        for bot in self.bots:
            await bot.close()
        self.tasks.clear()
        self.bots.clear()


async def _play(args: argparse.Namespace) -> int:
    embedded: EmbeddedServer | None = None
    folder = (args.data_dir or data_dir() / "embedded") if args.server is None else data_dir()
    try:
        _log_to_file(folder)
    except OSError as exc:
        print(f"solrace play: cannot use the data folder {folder}: {exc.strerror}", file=sys.stderr)
        return 1
    if args.server is None:
        embedded = EmbeddedServer(folder)
        try:
            url = await embedded.start()
        except EmbeddedServerError as exc:
            print(printable(f"solrace play: {exc}"), file=sys.stderr)
            return 1
        key = embedded_key(folder)
    else:
        url = args.server
        key = url
    opponents = (
        Opponents(url, args.bot, args.bot_delay, identity_key=embedded_key(folder, "embedded-bot"))
        if embedded
        else None
    )
    conn: Connection | None = None
    try:
        conn = await connect_player(url, key, args.name)
        async with Session.running(conn) as session:
            return await _play_session(session, args, url, opponents)
    except ConnectionFailedError as exc:
        print(printable(f"solrace play: {exc}"), file=sys.stderr)
        return 1
    except RequestError as exc:  # the race --race joins refused it (line mode), as for `bot`
        hint = invite_hint(exc.code, invite_given=args.invite is not None)
        print(printable(f"solrace play: {exc}{hint}"), file=sys.stderr)
        return 1
    finally:
        if opponents is not None:
            await opponents.close()
        if conn is not None:
            await conn.close()
        if embedded is not None:
            await embedded.stop()


async def _play_session(
    session: Session, args: argparse.Namespace, url: str, opponents: Opponents | None
) -> int:
    """`solrace play` once connected: the Textual app, or the line mode."""
    if not args.plain:
        from .tui import PlayApp

        app = PlayApp(session, opponents=opponents, game=args.game, args=args)
        status = await run_app(app)
        # Once the terminal is back: the races quitting left, then those still held.
        for line in (*app.farewell, *held_race_lines(session, play_screen_back)):
            print(printable(f"solrace play: {line}"))
        return status
    mode = PlainMode(session, sys.stdout, interactive=sys.stdin.isatty())
    mode.say(f"connected to {url} as {session.state.name}")
    if opponents is not None and not args.race:
        try:
            race_id = await session.create_race(
                args.game,
                2,
                args.time_limit,
                rated=args.rated,
                game_number=args.game_number,
            )
        except RequestError as exc:  # e.g. too many open races: the prompt can leave them
            mode.say(f"cannot create a race: {exc.message} ({exc.code}); 'list' shows the races")
        else:
            mode.own(race_id)
            against = "no bot" if args.bot == "none" else f"you against a {args.bot} bot"
            mode.say(f"race {race_id} created ({args.game}, {against})")
            await opponents.seat(race_id)
    elif args.create:
        await mode.create(
            [args.create, str(args.seats), str(args.time_limit)],
            rated=args.rated,
            game_number=args.game_number,
            invite_code=args.invite,
        )
    elif args.race:  # as `join RACE [INVITE]` (a seat already held is resumed)
        await mode.join([args.race] + ([args.invite] if args.invite else []))
    return await mode.run(stdin_lines())


#: `play`'s options whose default `play_problems` must tell from a value given.
PLAY_DEFAULTED: Final = ("seats", "time_limit", "bot", "bot_delay")
#: The race `play` creates at the start, which some options are for.
CREATED_RACE: Final = (
    "the race created at the start (--create GAME with --server, else the race against the "
    "embedded bot; not with --race)"
)


def play_problems(args: argparse.Namespace, given: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with `play`'s options, each said (not only the first found); an option
    that would change nothing is one of them. `given`: which of `PLAY_DEFAULTED` were given."""
    problems = []
    embedded = args.server is None
    # Does a race get created at the start? With a server only by --create; the embedded
    # server makes one against the bot unless --race goes back to a race.
    creates = not args.race if embedded else bool(args.create)
    if args.name is not None and (problem := name_problem(args.name)) is not None:
        problems.append(problem)
    if not embedded and args.game is not None:
        problems.append("--game is the embedded server's game; with --server, --create GAME")
    if embedded and args.create:
        problems.append("--create goes with --server; the embedded server's game is --game GAME")
    if (args.rated or args.game_number) and not creates:
        problems.append(f"--rated and --game-number go with {CREATED_RACE}")
    if args.rated and args.game_number:
        problems.append("--game-number is for casual races: not with --rated")
    if "seats" in given and (embedded or not args.create):
        problems.append(
            "--seats goes with --server and --create GAME (the race against the embedded bot "
            "has 2 seats)"
        )
    elif "seats" in given and args.seats < MIN_SEATS:
        problems.append(
            f"--seats {args.seats}: a race has {MIN_SEATS} seats or more (the server refuses fewer)"
        )
    if "time_limit" in given and not creates:
        problems.append(f"--time-limit goes with {CREATED_RACE}")
    if args.invite is not None and not (args.race or (args.create and not embedded)):
        problems.append(
            "--invite goes with --race RACE (the private race's code) or with --server and "
            "--create GAME (makes that race private)"
        )
    if not embedded:
        unused = [f"--{dest.replace('_', '-')}" for dest in ("bot", "bot_delay") if dest in given]
        unused += ["--data-dir"] if args.data_dir is not None else []
        if unused:
            problems.append(f"{option_list(unused)} with the embedded server: not with --server")
    elif "bot_delay" in given and args.bot == "none":
        problems.append("--bot-delay is the bot opponent's: not with --bot none")
    return problems


def play_main(argv: Sequence[str] | None = None) -> int:
    """`solrace play ...`."""
    args, given = parse_noting_defaults(
        build_play_parser(), sys.argv[1:] if argv is None else argv, PLAY_DEFAULTED
    )
    problems = play_problems(args, given)
    for problem in problems:
        print(f"solrace play: {problem}", file=sys.stderr)
    if problems:
        return 2
    args.game = args.game or "klondike"
    if not args.plain and not sys.stdout.isatty():
        # The Textual screen needs a terminal; a pipe or a file gets the line mode.
        print("solrace play: output is not a terminal: line mode (--plain)", file=sys.stderr)
        args.plain = True
    try:
        return asyncio.run(_play(args))
    except KeyboardInterrupt:
        return INTERRUPTED_STATUS


# --- watch -------------------------------------------------------------------------------


def build_watch_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solrace watch",
        description="Watch live races: every player's board as the server sends it (delayed "
        "in rated races), progress bars, and a follow mode (TV) that moves on to the next "
        "live race when one ends.",
    )
    parser.add_argument(
        "race", nargs="?", type=race_id, help="race id (default: pick from the live races)"
    )
    parser.add_argument(
        "--server",
        type=server_url,
        default=DEFAULT_SERVER_URL,
        help=f"server URL (default {DEFAULT_SERVER_URL})",
    )
    parser.add_argument("--follow", action="store_true", help="TV mode: go on to the next race")
    parser.add_argument("--ascii", action="store_true", help="ASCII cards")
    return parser


async def _watch(args: argparse.Namespace) -> int:
    _log_to_file(data_dir())
    conn = Connection(args.server)
    try:
        await conn.connect()
    except ConnectionFailedError as exc:
        print(printable(f"solrace watch: {exc}"), file=sys.stderr)
        return 1
    try:
        async with Session.running(conn) as session:
            if args.race is not None:
                problem = await watch_problem(session, args.race, args.server)
                if problem is not None:
                    print(printable(f"solrace watch: {problem}"), file=sys.stderr)
                    return EXIT_NOT_WATCHABLE
            from .tui import WatchApp

            app = WatchApp(
                session,
                race_id=args.race,
                follow=args.follow,
                ascii=args.ascii,
                watching=args.race is not None,
            )
            return await run_app(app)
    finally:
        await conn.close()


#: Exit status of `solrace watch RACE` for a race the server does not hold live.
EXIT_NOT_WATCHABLE: Final = 2


async def watch_problem(session: Session, race_id: RaceId, server: str) -> str | None:
    """Watch `race_id`; None once it is watched, else why it cannot be (the server's error;
    a finished race, whose replay the server has, is pointed to `solrace replay`)."""
    try:
        await session.watch(race_id)
    except RequestError as exc:
        if exc.code != ErrorCode.UNKNOWN_RACE:
            return str(exc)
        try:
            await session.get_replay(race_id)
        except RequestError:
            return f"{exc}; 'solrace watch' lists the live races"
        return (
            f"race {race_id} is finished, so there is nothing live to watch; step through it "
            f"with 'solrace replay {race_id} --server {server}' (--plain prints it as text)"
        )
    return None


def watch_main(argv: Sequence[str] | None = None) -> int:
    """`solrace watch [RACE]`."""
    args = build_watch_parser().parse_args(list(argv) if argv is not None else sys.argv[1:])
    if not sys.stdout.isatty():
        # The race and the server named, so that the command can be pasted as it is.
        replay = f"solrace replay {args.race or 'RACE'}{server_option(args.server)} --plain"
        print(
            "solrace watch: needs a terminal (a full-screen view); a finished race prints as "
            f"text with '{printable(replay)}'",
            file=sys.stderr,
        )
        return 2
    try:
        return asyncio.run(_watch(args))
    except KeyboardInterrupt:
        return INTERRUPTED_STATUS


# --- replay ------------------------------------------------------------------------------


def build_replay_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solrace replay",
        description="Step through a finished race move by move, for each player. The source "
        "is a race id on a server or a replay file (the server's replay JSON). The replay is "
        "checked as `solrace verify` does; a forged one stops at its first illegal move. Exit "
        "status as verify's: 0 the replay verifies (or was shown), 1 it does not (--plain), 2 "
        "there is no replay to check (unreadable file, not a replay, server or race not found, "
        "race not finished or cancelled) or --save cannot write it.",
    )
    parser.add_argument("source", help="race id, or path of a replay .json file")
    parser.add_argument(
        "--server",
        type=server_url,
        default=DEFAULT_SERVER_URL,
        help=f"server URL (default {DEFAULT_SERVER_URL})",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="no TUI: print the checks (commitment, every move, ranking) and the verdict, then "
        "each racer's moves, each with the board after it; exit status 1 if the replay does not "
        "verify",
    )
    parser.add_argument("--save", type=Path, help="also write the replay JSON to this file")
    parser.add_argument("--ascii", action="store_true", help="ASCII cards")
    return parser


async def _fetch_replay(server: str, race_id: RaceId) -> ReplayModel:
    """The replay of `race_id`; a race not finished yet is `RequestError` (`not_finished`)
    saying so in words (`not_finished_text`)."""
    conn = Connection(server, name=None)
    await conn.connect()
    try:
        async with Session.running(conn) as session:
            try:
                return await session.get_replay(race_id)
            except RequestError as exc:
                if exc.code != ErrorCode.NOT_FINISHED:
                    raise
                text = await not_finished_text(session, race_id, server)
                raise RequestError(exc.code, text or exc.message) from None
    finally:
        await conn.close()


async def not_finished_text(session: Session, race_id: RaceId, server: str) -> str | None:
    """Why the server has no replay of `race_id` yet, and what to do meanwhile, for a race it
    holds live (open, counting down or running: asked by watching it); None for another
    (finished, its tournament round holding the deal: the server's own words say so)."""
    try:
        await session.watch(race_id)
    except RequestError:
        return None
    status = session.state.race(race_id).status
    watch = f"'solrace watch {race_id}{server_option(server)}'"
    if status == "running":
        return (
            f"race {race_id} is still running: its replay can be fetched once it ends; "
            f"watch it live with {watch}"
        )
    if status in ("open", "countdown"):
        return (
            f"race {race_id} has not started yet: its replay can be fetched once it has "
            f"finished; watch it live with {watch}"
        )
    return None


#: Exit status of `solrace replay --plain` for a replay that does not verify (as `verify`).
EXIT_NOT_VERIFIED: Final = 1
#: Exit status when there is no replay to check, or it cannot be saved (as `verify`'s 2).
EXIT_NO_REPLAY: Final = 2


def replay_main(argv: Sequence[str] | None = None) -> int:
    """`solrace replay RACE|FILE`: exit status 0, `EXIT_NOT_VERIFIED` or `EXIT_NO_REPLAY`."""
    args = build_replay_parser().parse_args(list(argv) if argv is not None else sys.argv[1:])
    path = Path(args.source)
    is_file = path.suffix == ".json" or path.exists()
    try:
        if is_file:
            replay = load_replay(path)
        else:
            replay = asyncio.run(_fetch_replay(args.server, RaceId(args.source)))
    except OSError as exc:
        what = f"cannot read {path}" if is_file else f"cannot fetch race {args.source}"
        print(f"solrace replay: {what}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_NO_REPLAY
    except (ValueError, ConnectionFailedError, RequestError) as exc:
        print(printable(f"solrace replay: {exc}"), file=sys.stderr)
        return EXIT_NO_REPLAY
    if args.save:
        try:
            args.save.write_text(replay.model_dump_json(indent=2))
        except OSError as exc:
            print(
                f"solrace replay: cannot save to {args.save}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_NO_REPLAY
    if not args.plain and not sys.stdout.isatty():
        # The Textual screen needs a terminal; a pipe or a file gets the text (as `play`).
        print("solrace replay: output is not a terminal: text (--plain)", file=sys.stderr)
        args.plain = True
    if args.plain:
        report = verify_replay(replay)
        for line in replay_lines(replay, report):
            print(printable(line))
        return 0 if report.is_valid else EXIT_NOT_VERIFIED
    from .tui import ReplayApp

    app = ReplayApp(replay, ascii=args.ascii)
    app.run()
    return app.return_code or 0


__all__ = ["not_finished_text", "play_main", "replay_main", "watch_main"]
