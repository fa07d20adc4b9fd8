"""`solrace tournament ...`: create, join, check in, show, list, administer tournaments, run bots
in one, and read leaderboards and profiles. Each command connects, asks, prints and exits."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from solrace.server.protocol.messages import ClientMessage, Error, Ping, Pong, ServerMessage
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    CreateTournament,
    GetLeaderboard,
    GetProfile,
    JoinTournament,
    Leaderboard,
    LeaveTournament,
    ListTournaments,
    Profile,
    TournamentAdmin,
    TournamentList,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)

from .bots import Bot, BotError
from .connection import Connection, ConnectionFailedError, StatusChange
from .identity import connect_player
from .strategy import STRATEGIES, make_strategy
from .tournament_bots import play_tournament
from .tournament_render import (
    render_leaderboard,
    render_list,
    render_profile,
    render_tournament,
)

NAMES_PING = 4_242_424
ADMIN_ACTS = ("open-check-in", "start", "pause", "resume", "forfeit", "correct", "drop")
FORMATS = ("single_elimination", "double_elimination", "swiss", "round_robin", "heats")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="solrace tournament", description=__doc__)
    parser.add_argument("--server", default="ws://127.0.0.1:8765", help="server URL")
    parser.add_argument("--name", help="your player name (kept with its token)")
    parser.add_argument(
        "--admin-token",
        default=os.environ.get("SOLRACE_ADMIN_TOKEN"),
        help="admin token (default: $SOLRACE_ADMIN_TOKEN)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="create a tournament (needs the admin token)")
    create.add_argument("title", help="the tournament's name")
    create.add_argument("--game", default="klondike")
    create.add_argument("--format", choices=FORMATS, default="single_elimination")
    create.add_argument("--best-of", type=int, default=1)
    create.add_argument("--time-limit", type=int, default=600, help="seconds per race")
    create.add_argument("--max-players", type=int)
    create.add_argument("--no-check-in", action="store_true", help="registration is enough")
    create.add_argument("--grace", type=int, default=120, help="no-show grace, seconds")
    create.add_argument("--casual", action="store_true", help="races do not change ratings")
    create.add_argument("--rounds", type=int, help="Swiss rounds (default: automatic)")
    create.add_argument("--heat-size", type=int, default=4)
    create.add_argument("--advance", type=int, default=2, help="heats: how many go through")
    create.add_argument("--third-place", action="store_true")
    for name in ("join", "play", "check-in", "leave", "show", "watch"):
        helps = {"play": "play your races of a tournament you are in (stays connected)"}
        one = sub.add_parser(name, help=helps.get(name, f"{name} a tournament"))
        one.add_argument("tournament")
        if name in ("join", "play"):
            if name == "join":
                one.add_argument(
                    "--play",
                    action="store_true",
                    help="stay connected and play your races (the play screen) until the end",
                )
            one.add_argument(
                "--plain", action="store_true", help="play in line mode (implies --play)"
            )
            one.add_argument("--ascii", action="store_true", help="ASCII cards")
        if name in ("show", "watch"):
            one.add_argument(
                "--tui",
                action="store_true",
                help="a live screen: bracket or standings, live matches (Enter watches one)",
            )
            one.add_argument("--ascii", action="store_true", help="ASCII cards (with --tui)")
    sub.add_parser("list", help="list tournaments")
    admin = sub.add_parser("admin", help="an admin act (needs the admin token)")
    admin.add_argument("tournament")
    admin.add_argument("act", choices=ADMIN_ACTS)
    admin.add_argument("--match")
    admin.add_argument("--player", help="player id or name")
    admin.add_argument("--race", type=int)
    admin.add_argument("--placings", help="ids or names best first, ',' between places, '=' ties")
    admin.add_argument("--reason", default="")
    for act in ("start", "pause", "resume"):
        short = sub.add_parser(act, help=f"admin: {act} a tournament")
        short.add_argument("tournament")
    bots = sub.add_parser("bots", help="bots join the tournament and play its races")
    bots.add_argument("tournament")
    bots.add_argument("--count", type=int, default=2)
    bots.add_argument("--strategy", choices=STRATEGIES, default="greedy")
    bots.add_argument("--delay", type=float, default=0.25)
    board = sub.add_parser("leaderboard", help="a game's rating leaderboard")
    board.add_argument("game", nargs="?", default="klondike")
    profile = sub.add_parser("profile", help="a player's ratings and recent results")
    profile.add_argument("player", nargs="?")
    return parser


def parse_placings(text: str) -> list[list[str]]:
    """`a,b=c,d` -> [[a], [b, c], [d]] (b and c tie)."""
    return [[p for p in place.split("=") if p] for place in text.split(",") if place]


def _request(args: argparse.Namespace) -> ClientMessage | None:
    token = args.admin_token or ""
    command = args.command
    if command == "create":
        return CreateTournament(
            admin_token=token,
            name=args.title,
            game=args.game,
            format=args.format,
            best_of=args.best_of,
            time_limit_s=args.time_limit,
            max_players=args.max_players,
            check_in_required=not args.no_check_in,
            no_show_grace_s=args.grace,
            rated=not args.casual,
            swiss_rounds=args.rounds,
            heat_size=args.heat_size,
            advance_per_heat=args.advance,
            third_place_match=args.third_place,
        )
    tid = getattr(args, "tournament", None)
    simple: dict[str, ClientMessage] = {}
    if tid is not None:
        simple = {
            "join": JoinTournament(tournament_id=tid),
            "check-in": CheckIn(tournament_id=tid),
            "leave": LeaveTournament(tournament_id=tid),
            "show": WatchTournament(tournament_id=tid),
            "watch": WatchTournament(tournament_id=tid),
        }
    if command in simple:
        return simple[command]
    if command == "list":
        return ListTournaments()
    if command == "leaderboard":
        return GetLeaderboard(game=args.game)
    if command == "profile":
        return GetProfile(player_id=args.player)
    if command in ("start", "pause", "resume", "admin"):
        act = args.act if command == "admin" else command
        act = {"open-check-in": "open_check_in", "correct": "correct_result"}.get(act, act)
        return TournamentAdmin(
            tournament_id=str(tid),
            admin_token=token,
            act=act,
            match_id=getattr(args, "match", None),
            player_id=getattr(args, "player", None),
            race_number=getattr(args, "race", None),
            placings=parse_placings(args.placings) if getattr(args, "placings", None) else None,
            reason=getattr(args, "reason", ""),
        )
    return None


def render(message: ServerMessage) -> str | None:
    if isinstance(message, TournamentView):
        return render_tournament(message.tournament)
    if isinstance(message, TournamentList):
        return render_list(message.tournaments)
    if isinstance(message, Leaderboard):
        return render_leaderboard(message)
    if isinstance(message, Profile):
        return render_profile(message)
    return None


async def _connect(args: argparse.Namespace, anonymous: bool) -> Connection:
    if anonymous:
        conn = Connection(args.server)
        await conn.connect()
        return conn
    return await connect_player(args.server, args.server, args.name)


async def _run(args: argparse.Namespace) -> int:
    if args.command == "bots":
        return await _run_bots(args)
    if args.command == "play" or (args.command == "join" and (args.play or args.plain)):
        from .tournament_play import run_play

        return await run_play(args)
    if getattr(args, "tui", False):
        return await _run_tui(args)
    anonymous = args.command in ("show", "watch", "list", "leaderboard")
    conn = await _connect(args, anonymous)
    try:
        conn.recv_nowait()  # the welcome
        if args.command == "admin" and (args.player or args.placings):
            names = await _player_ids(conn, args.tournament)
            if args.player:
                args.player = names.get(args.player, args.player)
            if args.placings:
                groups = parse_placings(args.placings)
                args.placings = ",".join("=".join(names.get(p, p) for p in g) for g in groups)
        request = _request(args)
        assert request is not None
        await conn.send(request)
        while True:
            incoming = await asyncio.wait_for(conn.recv(), 30.0)
            if isinstance(incoming, StatusChange):
                continue
            if isinstance(incoming, Error):
                print(f"solrace tournament: {incoming.code}: {incoming.message}", file=sys.stderr)
                return 1
            text = render(incoming)
            if text is None:
                continue
            print(text, flush=True)
            if args.command != "watch":
                return 0
            print(flush=True)
    finally:
        await conn.close()


async def _player_ids(conn: Connection, tournament_id: str) -> dict[str, str]:
    """The tournament's player names -> ids (an admin act may name players instead of ids)."""
    await conn.send(WatchTournament(tournament_id=tournament_id))
    names: dict[str, str] = {}
    while True:
        incoming = await asyncio.wait_for(conn.recv(), 30.0)
        if isinstance(incoming, TournamentView):
            names = {p.name: p.player_id for p in incoming.tournament.players}
            break
        if isinstance(incoming, Error):
            return {}  # the act itself will say what is wrong
    await conn.send(UnwatchTournament(tournament_id=tournament_id))
    await conn.send(Ping(nonce=NAMES_PING))
    while True:  # views pushed before the unwatch came first: skip them
        incoming = await asyncio.wait_for(conn.recv(), 30.0)
        if isinstance(incoming, Pong) and incoming.nonce == NAMES_PING:
            return names


async def _run_tui(args: argparse.Namespace) -> int:
    """`show|watch ID --tui`: the tournament screen, as a spectator."""
    from .app import _log_to_file
    from .identity import data_dir
    from .session import Session
    from .tournament_screen import TournamentApp

    _log_to_file(data_dir())  # the screen owns the terminal
    conn = await _connect(args, anonymous=True)
    session = Session(conn)
    conn.recv_nowait()  # the welcome, applied by Session
    pump = asyncio.create_task(session.pump(), name="solrace-pump")
    try:
        await TournamentApp(session, args.tournament, ascii=args.ascii).run_async()
        return 0
    finally:
        pump.cancel()
        await conn.close()


async def _run_bots(args: argparse.Namespace) -> int:
    bots = [
        Bot(args.server, f"{args.name or 'tbot'}-{i + 1}", make_strategy(args.strategy, seed=i))
        for i in range(args.count)
    ]
    for bot in bots:
        bot.delay_s = args.delay
    try:
        await asyncio.gather(*(bot.connect() for bot in bots))
        views = await asyncio.gather(*(play_tournament(bot, args.tournament) for bot in bots))
    except (ConnectionFailedError, BotError) as exc:
        print(f"solrace tournament: {exc}", file=sys.stderr)
        return 1
    finally:
        await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
    print(render_tournament(views[0]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`solrace tournament COMMAND ...`."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
    try:
        return asyncio.run(_run(args))
    except ConnectionFailedError as exc:
        print(f"solrace tournament: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
