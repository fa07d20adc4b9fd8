"""`solrace tournament ...`: create, join, check in, show, list, administer tournaments, run bots
in one, and read leaderboards and profiles. Each command connects, asks, prints and exits.

Only what acts as the player (join, check-in, leave, play) connects with its saved identity:
the server keeps one connection per player and closes the older one (4003), so a read-only
command or an admin act run in another terminal must not take over a racing player's
connection. Reads (show, watch, list, leaderboard, profile) and admin acts (authorized by the
admin token) connect anonymously; `create`, whose creator is named in the audit, uses the
server's separate admin identity (`identity.py`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Final, TypeVar

from pydantic import ValidationError

from solrace.cli import INTERRUPTED_STATUS
from solrace.engine import GAME_IDS
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    ClientMessage,
    Error,
    ListRaces,
    Ping,
    Pong,
    RaceList,
    ServerMessage,
)
from solrace.server.protocol.tournament_errors import InvalidSettingsError
from solrace.server.protocol.tournament_messages import (
    TOURNAMENT_LIST_LIMIT,
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
    TournamentModel,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)
from solrace.server.protocol.tournament_model import format_rules

from .connection import Connection, ConnectionFailedError
from .defaults import DEFAULT_SERVER_URL
from .identity import (
    NAME_RULE,
    connect_player,
    known_players,
    load_identity,
    name_problem,
    player_id_of,
)
from .session import (
    LinkClosedError,
    RequestError,
    answer_to,
    read_until,
    reader_of,
    request_reading,
)
from .strategy import STRATEGIES
from .tournament_bots import run_bots
from .tournament_render import (
    plural,
    render_audit,
    render_leaderboard,
    render_list,
    render_profile,
    render_tournament,
)
from .wire_text import printable

NAMES_PING = 4_242_424
#: Seconds a command waits for the answer to each request ("no answer from the server").
ANSWER_TIMEOUT_S: Final = 30.0
TOURNAMENT_HELP = "the tournament's id (t...; 'solrace tournament list' shows them)"
ADMIN_ACTS = ("open-check-in", "start", "pause", "resume", "forfeit", "correct", "drop")
FORMATS = ("single_elimination", "double_elimination", "swiss", "round_robin", "heats")
#: Commands that only read: an anonymous connection (no player's connection is taken over).
READ_ONLY = frozenset({"show", "watch", "list", "leaderboard", "profile"})
#: Admin acts: the admin token authorizes them, no identity is needed.
ADMIN_COMMANDS = frozenset({"start", "pause", "resume", "admin"})
#: Commands that act as a registered player: without `--name`, the saved identity only (never
#: a new player named after the login name, who could not be registered).
REGISTERED_COMMANDS = frozenset({"check-in", "leave", "play"})
#: Most tournaments whose players are read to find a player's id by name (three messages
#: each: with the leaderboards, within the connection's rate budget of 100).
NAME_SEARCH_TOURNAMENTS = 20
#: Most audit actors whose names `show` asks for (one request each).
AUDIT_NAMES = 10

AnswerT = TypeVar("AnswerT")


def _common_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """`--server`, `--name` and `--admin-token`, before the subcommand (`defaults`: with their
    defaults) or after it (no default: one given there overrides one given before)."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--server",
        default=default(DEFAULT_SERVER_URL),
        help=f"server URL (default {DEFAULT_SERVER_URL})",
    )
    parser.add_argument(
        "--name",
        default=default(None),
        help=f"your player name (kept with its token): {NAME_RULE}",
    )
    parser.add_argument(
        "--admin-token",
        default=default(os.environ.get("SOLRACE_ADMIN_TOKEN")),
        help="admin token (default: $SOLRACE_ADMIN_TOKEN)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="solrace tournament", description=__doc__)
    _common_options(parser, defaults=True)
    # The same options after the subcommand (`solrace tournament list --server URL`).
    after = argparse.ArgumentParser(add_help=False)
    _common_options(after, defaults=False)
    sub = parser.add_subparsers(dest="command", required=True)

    def add_command(
        name: str, text: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, parents=[after], help=text, description=description or described(text)
        )

    create = add_command(
        "create",
        "create a tournament (needs the admin token)",
        "Create a tournament. Its creator is this config folder's separate admin "
        "identity on the server (`solrace tournament --name NAME create ...` picks it; "
        "default: <your name>-admin), so creating never takes over the connection of a "
        "player who is racing.",
    )
    create.add_argument("title", help="the tournament's name (1 to 64 characters)")
    create.add_argument(
        "--game",
        choices=GAME_IDS,
        default="klondike",
        metavar="GAME",
        help="the game every race deals (default klondike): " + ", ".join(GAME_IDS),
    )
    create.add_argument(
        "--format",
        choices=FORMATS,
        default="single_elimination",
        help="how players meet (default single_elimination; docs/tournaments.md)",
    )
    create.add_argument(
        "--best-of",
        type=int,
        default=default_of("best_of"),
        metavar="N",
        help=f"races per match, 1 to 9 (default {default_of('best_of')}); odd for head-to-head "
        "formats (first to ceil(N/2) wins); heats play exactly N races",
    )
    create.add_argument(
        "--time-limit",
        type=int,
        default=default_of("time_limit_s"),
        help=f"seconds per race (default {default_of('time_limit_s')}; the server says its "
        "shortest, 10 s unless set otherwise)",
    )
    create.add_argument(
        "--max-players",
        type=int,
        metavar="N",
        help="registration closes at N players, at least 2 (default: the server's largest "
        "field for the format, at most its max_tournament_players, 256 unless set otherwise)",
    )
    create.add_argument("--no-check-in", action="store_true", help="registration is enough")
    create.add_argument(
        "--grace",
        type=grace_seconds,
        default=default_of("no_show_grace_s"),
        metavar="SECONDS",
        help=(
            f"no-show grace, seconds (default {default_of('no_show_grace_s')}; null or never: "
            "no one forfeits for not showing up)"
        ),
    )
    create.add_argument("--casual", action="store_true", help="races do not change ratings")
    create.add_argument("--rounds", type=int, help="Swiss rounds, 1 to 64 (default: automatic)")
    create.add_argument(
        "--heat-size",
        type=int,
        default=default_of("heat_size"),
        metavar="N",
        help=f"heats: players per heat race, 2 to 16 (default {default_of('heat_size')}; "
        "at most the server's seats per race)",
    )
    create.add_argument(
        "--advance",
        type=int,
        default=default_of("advance_per_heat"),
        help="heats: how many of each heat go through, 1 to 15 "
        f"(default {default_of('advance_per_heat')})",
    )
    create.add_argument(
        "--third-place",
        action="store_true",
        help="single elimination: the semi-final losers play for third place",
    )
    create.add_argument(
        "--no-bracket-reset",
        action="store_true",
        help="double elimination: the grand final is one match, even when the winners-bracket "
        "champion loses it (by default a second, deciding match follows)",
    )
    helps = {
        "join": "register in a tournament (with --play, stay and play its races)",
        "play": "play your races of a tournament you are in (stays connected)",
        "check-in": "check in to a tournament you registered in, while its check-in is open",
        "leave": "unregister from a tournament before its start; after it, drop out "
        "(forfeiting your live match)",
        "show": "print a tournament once",
        "watch": "print a tournament and every change, until it has finished (exit 0)",
    }
    for name, text in helps.items():
        one = add_command(name, text)
        one.add_argument("tournament", help=TOURNAMENT_HELP)
        if name in ("join", "play"):
            if name == "join":
                one.add_argument(
                    "--play",
                    action="store_true",
                    help="stay connected and play your races (the play screen) until the end",
                )
                plain_help = "play in line mode (implies --play)"
            else:
                plain_help = "play in line mode instead of the play screen"
            one.add_argument("--plain", action="store_true", help=plain_help)
            one.add_argument("--ascii", action="store_true", help="ASCII cards")
        if name in ("show", "watch"):
            one.add_argument(
                "--tui",
                action="store_true",
                help="a live screen: bracket or standings, live matches (Enter watches one)",
            )
            one.add_argument("--ascii", action="store_true", help="ASCII cards (with --tui)")
    text = (
        "list tournaments: every one not finished, then the latest finished "
        f"({TOURNAMENT_LIST_LIMIT} at most)"
    )
    listing = add_command("list", text)
    listing.add_argument(
        "--skip-finished",
        type=int,
        default=0,
        metavar="N",
        help="a later page: only the finished tournaments older than the N latest "
        "(the list before says which N to ask for)",
    )
    text = "an admin act on a tournament (needs the admin token)"
    admin = add_command("admin", text)
    admin.add_argument("tournament", help=TOURNAMENT_HELP)
    admin.add_argument("act", choices=ADMIN_ACTS, help="what to do: " + ", ".join(ADMIN_ACTS))
    admin.add_argument("--match", help="the match id (forfeit, correct), e.g. W1-1")
    admin.add_argument("--player", help="player id or name (forfeit, drop)")
    admin.add_argument("--race", type=int, help="the race number within the match (correct)")
    admin.add_argument(
        "--placings", help="ids or names best first, ',' between places, '=' ties (correct)"
    )
    admin.add_argument(
        "--cards",
        metavar="NAME=N,...",
        help="cards on foundations per id or name (correct; players not given keep the race's)",
    )
    admin.add_argument("--reason", default="", help="why, kept in the tournament's audit")
    acts = {
        "start": "admin: start a tournament (its field: who registered, or who checked in if "
        "check-in is required)",
        "pause": "admin: pause a tournament (no new race, round or forfeit until resume)",
        "resume": "admin: resume a paused tournament",
    }
    for act, text in acts.items():
        short = add_command(act, text)
        short.add_argument("tournament", help=TOURNAMENT_HELP)
    text = "bots join a tournament and play its races"
    bots = add_command("bots", text)
    bots.add_argument("tournament", help=TOURNAMENT_HELP)
    bots.add_argument("--count", type=int, default=2, help="how many bots (default 2)")
    bots.add_argument(
        "--strategy", choices=STRATEGIES, default="greedy", help="how they play (default greedy)"
    )
    bots.add_argument(
        "--delay",
        type=float,
        default=0.25,
        help="seconds between a bot's moves (default 0.25); at any delay a bot keeps within "
        "the rate budget its server's welcome says",
    )
    text = "print a game's rating leaderboard"
    board = add_command("leaderboard", text)
    board.add_argument(
        "game",
        nargs="?",
        default="klondike",
        choices=GAME_IDS,
        metavar="GAME",
        help="the game (default klondike): " + ", ".join(GAME_IDS),
    )
    text = "print a player's ratings and recent results"
    profile = add_command("profile", text)
    profile.add_argument(
        "player",
        nargs="?",
        help="a player's name or id (default: --name, else the name you used last)",
    )
    return parser


#: `--grace` words for no no-show grace (the protocol's `no_show_grace_s: null`).
NO_GRACE: Final = frozenset({"null", "never", "none"})


def grace_seconds(text: str) -> int | None:
    """`--grace`: seconds, or `null` (`never`) for no no-show forfeit."""
    if text.strip().lower() in NO_GRACE:
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither seconds nor null") from None


def described(text: str) -> str:
    """A subcommand's one-line help as the description its own `--help` shows."""
    return text[0].upper() + text[1:] + "."


def default_of(field_name: str) -> int:
    """The protocol's default for a `create_tournament` field (the option's default)."""
    default = CreateTournament.model_fields[field_name].default
    assert isinstance(default, int)
    return default


#: `create`'s options by the request field each sets (a refusal names the option).
CREATE_OPTIONS: Final = {
    "name": "TITLE",
    "best_of": "--best-of",
    "time_limit_s": "--time-limit",
    "max_players": "--max-players",
    "no_show_grace_s": "--grace",
    "swiss_rounds": "--rounds",
    "heat_size": "--heat-size",
    "advance_per_heat": "--advance",
}


def create_problem(args: argparse.Namespace) -> str | None:
    """Why `create`'s options cannot make a tournament, or None: the request's own bounds and
    the format rules the server holds it to (`format_rules`), checked before connecting. The
    server's own settings (its shortest time limit, its largest field) are its to say."""
    try:
        request = _request(args)
        assert isinstance(request, CreateTournament)
        format_rules(request)
    except ValidationError as exc:
        return validation_text(exc, CREATE_OPTIONS)
    except InvalidSettingsError as exc:  # "best_of 2: ..." names the field first
        field_name, _, rest = str(exc).partition(" ")
        option = CREATE_OPTIONS.get(field_name)
        return str(exc) if option is None else f"{option} {rest}"
    return None


def validation_text(exc: ValidationError, options: Mapping[str, str] | None = None) -> str:
    """A pydantic refusal of a request's fields as one line; a field set by an option named
    as the option (`options`), with the value given."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        context = error.get("ctx") or {}
        kind = error["type"]
        if kind == "less_than_equal":
            why = f"at most {context['le']}"
        elif kind == "greater_than_equal":
            why = f"at least {context['ge']}"
        elif kind == "string_too_long":
            why = f"at most {context['max_length']} characters"
        else:
            why = error["msg"].removeprefix("Value error, ")
        option = (options or {}).get(where)
        if option is None:
            parts.append(f"{where}: {why}")
        elif option.startswith("-"):
            parts.append(f"{option} {error['input']}: {why}")
        else:
            parts.append(f"{option}: {why}")
    return "; ".join(parts)


def parse_placings(text: str) -> list[list[str]]:
    """`a,b=c,d` -> [[a], [b, c], [d]] (b and c tie)."""
    return [[p for p in place.split("=") if p] for place in text.split(",") if place]


def parse_card_counts(text: str) -> dict[str, int]:
    """`a=7,b=12` -> {a: 7, b: 12}; ValueError saying what is wrong."""
    counts: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        player, equals, count = item.rpartition("=")
        if not equals or not player or not count.isdigit():
            raise ValueError(f"{item!r} is not NAME=N (N cards, 0 or more)")
        if player in counts:
            raise ValueError(f"{player!r} is given twice")
        counts[player] = int(count)
    return counts


#: What each admin act needs besides the tournament (the server refuses it without), as the
#: option names it, by the option's `args` field.
ADMIN_NEEDS: Final[dict[str, dict[str, str]]] = {
    "forfeit": {"match": "--match MATCH", "player": "--player NAME"},
    "drop": {"player": "--player NAME"},
    "correct": {"match": "--match MATCH", "race": "--race N", "placings": "--placings NAMES"},
}


def admin_problem(args: argparse.Namespace) -> str | None:
    """Why an admin act's options cannot make a request, or None (checked before
    connecting): an option the act needs is missing (`forfeit needs --player NAME`), or
    `--cards` is not NAME=N,..."""
    needs = ADMIN_NEEDS.get(args.act, {})
    missing = [
        option
        for field_name, option in needs.items()
        if getattr(args, field_name) is None
        or (field_name == "placings" and not parse_placings(args.placings))
        or (field_name in ("match", "player") and not getattr(args, field_name).strip())
    ]
    if missing:
        wants = " and ".join(needs.values())
        return f"{args.act} needs {wants} (missing {', '.join(o.split()[0] for o in missing)})"
    if args.cards is not None:
        try:
            parse_card_counts(args.cards)
        except ValueError as exc:
            return f"--cards {args.cards}: {exc}"
    return None


def _request(args: argparse.Namespace) -> ClientMessage | None:
    token = args.admin_token or ""
    command = args.command
    if command == "create":
        return CreateTournament(
            admin_token=token,
            name=args.title.strip(),
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
            bracket_reset=not args.no_bracket_reset,
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
        return ListTournaments(skip_finished=args.skip_finished)
    if command == "leaderboard":
        return GetLeaderboard(game=args.game)
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
            cards=parse_card_counts(args.cards) if getattr(args, "cards", None) else None,
            reason=getattr(args, "reason", ""),
        )
    return None


def render(message: ServerMessage, skip_finished: int = 0) -> str | None:
    """`message` as printed; a `tournament_list` asked with `skip_finished` (the page it is
    says how to ask for the next)."""
    if isinstance(message, TournamentView):
        return render_tournament(message.tournament)
    if isinstance(message, TournamentList):
        listed = render_list(message.tournaments)
        if not message.more:
            return listed
        seen = skip_finished + sum(s.phase == "finished" for s in message.tournaments)
        return (
            f"{listed}\n{plural(message.more, 'older finished tournament')} not listed: "
            f"solrace tournament list --skip-finished {seen}"
        )
    if isinstance(message, Leaderboard):
        return render_leaderboard(message)
    if isinstance(message, Profile):
        return render_profile(message)
    return None


#: What `render` prints: the answers a command waits for.
RENDERED: Final = (TournamentView, TournamentList, Leaderboard, Profile)


def is_rendered(message: ServerMessage) -> bool:
    """Is `message` one that `render` prints (an answer a command waits for)?"""
    return isinstance(message, RENDERED)


def is_over(message: ServerMessage) -> bool:
    """A view of a finished tournament: `watch` has printed its last one (nothing changes
    after that), and exits as `play --plain` does."""
    return isinstance(message, TournamentView) and message.tournament.phase == "finished"


async def _connect(args: argparse.Namespace, anonymous: bool) -> Connection:
    if anonymous:
        conn = Connection(args.server)
        await conn.connect()
        return conn
    if args.command == "create":
        return await connect_player(args.server, args.server, args.name, role="admin")
    return await connect_player(args.server, args.server, args.name)


def fail(text: str) -> int:
    print(printable(f"solrace tournament: {text}"), file=sys.stderr)
    return 1


def no_identity_problem(args: argparse.Namespace) -> str | None:
    """Why a command that acts as a registered player cannot run: no `--name` and no identity
    saved for the server (connecting would make a new player, surely not registered)."""
    if args.command not in REGISTERED_COMMANDS or args.name is not None:
        return None
    if load_identity(args.server) is not None:
        return None
    return f"no saved identity for this server ({args.server}): join first, or pass --name"


def error_text(code: str, message: str, conn: Connection) -> str:
    """The server's refusal in one line; a player id it names that is the connection's own
    shows as the player's name (the id in brackets)."""
    text = message
    me = player_id_of(conn.token) if conn.token else None
    if me is not None and conn.name and repr(me) in text:
        text = text.replace(repr(me), conn.name) + f" (player id {me})"
    return f"{code}: {text}"


async def _run(args: argparse.Namespace) -> int:
    if args.command == "bots":
        return await run_bots(args)
    if args.command == "play" or (args.command == "join" and (args.play or args.plain)):
        from .tournament_play import run_play

        return await run_play(args)
    if getattr(args, "tui", False):
        return await _run_tui(args)
    if args.command == "create":
        problem = create_problem(args)
        if problem is not None:
            print(f"solrace tournament create: {problem}", file=sys.stderr)
            return 2
    if args.command == "admin":
        problem = admin_problem(args)
        if problem is not None:
            print(printable(f"solrace tournament admin: {problem}"), file=sys.stderr)
            return 2
    problem = no_identity_problem(args)
    if problem is not None:
        return fail(problem)
    anonymous = args.command in READ_ONLY or args.command in ADMIN_COMMANDS
    conn = await _connect(args, anonymous)
    try:
        conn.take_welcome()  # this command reads the answer to its request only
        if args.command == "profile":
            return await _profile(conn, args)
        if args.command == "admin":
            await _admin_names_to_ids(conn, args)
        try:
            request = _request(args)
        except ValidationError as exc:
            return fail(f"{args.command}: {validation_text(exc)}")
        assert request is not None
        return await _print_answers(conn, args, request)
    finally:
        await conn.close()


async def _admin_names_to_ids(conn: Connection, args: argparse.Namespace) -> None:
    """An admin act may name players by name: `args` with the tournament's ids instead (a
    name it does not know stays as given, for the server to refuse)."""
    if not (args.player or args.placings or args.cards):
        return
    names = await _player_ids(conn, args.tournament)
    if args.player:
        args.player = names.get(args.player, args.player)
    if args.placings:
        groups = parse_placings(args.placings)
        args.placings = ",".join("=".join(names.get(p, p) for p in g) for g in groups)
    if args.cards:
        counts = parse_card_counts(args.cards)
        args.cards = ",".join(f"{names.get(p, p)}={n}" for p, n in counts.items())


async def _print_answers(conn: Connection, args: argparse.Namespace, request: ClientMessage) -> int:
    """Send `request` and print its answer (`watch`: then every view, for as long as the
    tournament runs, until it is over): 0, or 1 after printing the server's refusal."""
    read = reader_of(conn)
    try:
        answer = await request_reading(conn, read, request, is_rendered, ANSWER_TIMEOUT_S)
    except LinkClosedError:
        raise
    except RequestError as exc:
        return print_refusal(exc.code, exc.message, conn)
    while True:
        text = render(answer, getattr(args, "skip_finished", 0))
        assert text is not None
        if args.command == "show" and isinstance(answer, TournamentView):
            view = answer.tournament
            text += "\n\n" + render_audit(view, await _actor_names(conn, view))
        print(printable(text), flush=True)
        if args.command != "watch" or is_over(answer):
            return 0
        print(flush=True)
        # No time limit: a view comes when something changes (a reconnect watches again).
        answer = await read_until(read, answer_to(request, is_rendered), None)
        if isinstance(answer, Error):  # watching again after a reconnect was refused
            return print_refusal(answer.code, answer.message, conn)


def print_refusal(code: str, message: str, conn: Connection) -> int:
    """Print the server's refusal of the command's request (`error_text`; for `not_admin`,
    where the token may be missing): 1."""
    hint = ""
    if code == ErrorCode.NOT_ADMIN:
        hint = (
            " (check --admin-token or $SOLRACE_ADMIN_TOKEN; a server started "
            "without --admin-token has tournament administration turned off)"
        )
    text = f"solrace tournament: {error_text(code, message, conn)}{hint}"
    print(printable(text), file=sys.stderr)
    return 1


async def _actor_names(conn: Connection, view: TournamentModel) -> dict[PlayerId, str]:
    """The names of the audit's actors who are not players of the tournament (its admin, as a
    rule), asked with `get_profile`; an actor the server has no profile for stays an id."""
    players = {p.player_id for p in view.players}
    names: dict[PlayerId, str] = {}
    for actor in dict.fromkeys(entry.actor for entry in view.audit):
        if actor in players or len(names) >= AUDIT_NAMES:
            continue
        profile = await _ask(conn, GetProfile(player_id=actor), Profile)
        if profile is not None:
            names[actor] = profile.name
    return names


async def _ask(conn: Connection, message: ClientMessage, kind: type[AnswerT]) -> AnswerT | None:
    """Send `message`: its answer of type `kind`, or None if the server refused it (a link
    closed for good raises `LinkClosedError`, no answer in time `TimeoutError`)."""
    try:
        reply = await request_reading(
            conn, reader_of(conn), message, lambda m: isinstance(m, kind), ANSWER_TIMEOUT_S
        )
    except LinkClosedError:
        raise
    except RequestError:
        return None
    assert isinstance(reply, kind)
    return reply


async def _profile(conn: Connection, args: argparse.Namespace) -> int:
    """`profile [PLAYER]` on an anonymous connection: PLAYER is an id or a name (default:
    --name, else the name used last), its id found from the saved identities, the live
    races, the leaderboards or the tournaments' players."""
    wanted = args.player or args.name
    if wanted is None:
        last = load_identity(args.server)
        if last is None:
            return fail(f"profile: no identity saved for {args.server}; name a player")
        wanted = last.name
    player_id = known_players(args.server).get(wanted)
    candidates = [player_id] if player_id else []
    if wanted != player_id and len(wanted) <= 64:
        candidates.append(PlayerId(wanted))  # maybe an id already
    for candidate in candidates:
        profile = await _ask(conn, GetProfile(player_id=candidate), Profile)
        if profile is not None:
            print(printable(render(profile) or ""), flush=True)
            return 0
    player_id = await _find_player(conn, wanted)
    if player_id is not None:
        profile = await _ask(conn, GetProfile(player_id=player_id), Profile)
        if profile is not None:
            print(printable(render(profile) or ""), flush=True)
            return 0
    return fail(
        f"unknown_player: no player named {wanted!r} (or with that id) on {args.server} "
        "(names are looked up in your saved identities, the live races, the leaderboards "
        "and the tournaments)"
    )


async def _find_player(conn: Connection, name: str) -> PlayerId | None:
    """The id of the player called `name` (names are unique on a server), from what the
    protocol lists with names: live races, leaderboards, tournaments' players."""
    races = await _ask(conn, ListRaces(), RaceList)
    if races is not None:
        for info in races.races:
            for racer in info.racers:
                if racer.name == name:
                    return racer.player_id
    for game in GAME_IDS:
        board = await _ask(conn, GetLeaderboard(game=game, limit=100), Leaderboard)
        if board is not None:
            for row in board.entries:
                if row.name == name:
                    return row.player_id
    listed = await _ask(conn, ListTournaments(), TournamentList)
    if listed is None:
        return None
    for summary in listed.tournaments[:NAME_SEARCH_TOURNAMENTS]:
        names = await _player_ids(conn, summary.tournament_id)
        if name in names:
            return names[name]
    return None


async def _player_ids(conn: Connection, tournament_id: str) -> dict[str, PlayerId]:
    """The tournament's player names -> ids (an admin act may name players instead of ids);
    none if the server refuses to show it (the act itself will say what is wrong)."""
    shown = await _ask(conn, WatchTournament(tournament_id=tournament_id), TournamentView)
    if shown is None:
        return {}
    await conn.send(UnwatchTournament(tournament_id=tournament_id))
    # Views pushed before the unwatch come before the answer to a ping sent after it: read
    # past them, so that none is taken for the answer to the act.
    await request_reading(
        conn,
        reader_of(conn),
        Ping(nonce=NAMES_PING),
        lambda m: isinstance(m, Pong) and m.nonce == NAMES_PING,
        ANSWER_TIMEOUT_S,
    )
    return {p.name: p.player_id for p in shown.tournament.players}


async def _run_tui(args: argparse.Namespace) -> int:
    """`show|watch ID --tui`: the tournament screen, as a spectator."""
    from .app import _log_to_file, run_app
    from .identity import data_dir
    from .session import Session
    from .tournament_screen import TournamentApp

    _log_to_file(data_dir())  # the screen owns the terminal
    conn = await _connect(args, anonymous=True)
    try:
        async with Session.running(conn) as session:
            return await run_app(TournamentApp(session, args.tournament, ascii=args.ascii))
    finally:
        await conn.close()


def _without_a_terminal(args: argparse.Namespace) -> None:
    """Output into a pipe or a file: a full-screen view (`--tui`, the play screen) becomes its
    text form, said on stderr, as `solrace play` does."""
    if getattr(args, "tui", False):
        print("solrace tournament: output is not a terminal: text (without --tui)", file=sys.stderr)
        args.tui = False
    playing = args.command == "play" or (args.command == "join" and args.play)
    if playing and not args.plain:
        print("solrace tournament: output is not a terminal: line mode (--plain)", file=sys.stderr)
        args.plain = True


def main(argv: Sequence[str] | None = None) -> int:
    """`solrace tournament COMMAND ...`."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else sys.argv[1:])
    problem = None if args.name is None else name_problem(args.name)
    if problem is not None:
        print(f"solrace tournament: {problem}", file=sys.stderr)
        return 2
    if not sys.stdout.isatty():
        _without_a_terminal(args)
    try:
        return asyncio.run(_run(args))
    except (TimeoutError, LinkClosedError):  # closed for good: no answer can come either
        print("solrace tournament: no answer from the server", file=sys.stderr)
        return 1
    except ConnectionFailedError as exc:
        print(printable(f"solrace tournament: {exc}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return INTERRUPTED_STATUS
