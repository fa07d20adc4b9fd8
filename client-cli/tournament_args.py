"""`solrace tournament`'s command line: the parser (every subcommand and option, with the help
that says what each does), the checks of what was given that need no server (`create_problem`,
`admin_problem`: the command exits 2 before it connects), and the request the arguments make
(`request_of`). Nothing here connects or prints: `tournament_cli` runs the command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Final

from pydantic import ValidationError

from solrace.engine import GAME_IDS
from solrace.server.protocol.messages import ClientMessage
from solrace.server.protocol.tournament_errors import InvalidSettingsError
from solrace.server.protocol.tournament_messages import (
    LEADERBOARD_LIMIT,
    TOURNAMENT_LIST_LIMIT,
    CheckIn,
    CreateTournament,
    GetLeaderboard,
    JoinTournament,
    LeaveTournament,
    ListTournaments,
    TournamentAdmin,
    WatchTournament,
)
from solrace.server.protocol.tournament_model import format_rules
from solrace.server.protocol.wire import MAX_WIRE_INT

from .arg_types import positive, seconds, whole_number
from .defaults import DEFAULT_SERVER_URL, server_url
from .identity import NAME_RULE
from .strategy import STRATEGIES

#: What `solrace tournament --help` says first: what the commands do, and which connection each
#: uses (`tournament_cli` connects so).
DESCRIPTION: Final = """`solrace tournament ...`: create, join, check in, show, list, administer
tournaments, run bots in one, and read leaderboards and profiles. Each command connects, asks,
prints and exits.

Only what acts as the player (join, check-in, leave, play) connects with its saved identity:
the server keeps one connection per player and closes the older one (4003), so a read-only
command or an admin act run in another terminal must not take over a racing player's
connection. Reads (show, watch, list, leaderboard, profile) and admin acts (authorized by the
admin token) connect anonymously; `create`, whose creator is named in the audit, connects
as this config folder's separate admin identity on the server (`create --help`)."""

TOURNAMENT_HELP = "the tournament's id (t...; 'solrace tournament list' shows them)"
ADMIN_ACTS = ("open-check-in", "start", "pause", "resume", "forfeit", "correct", "drop")
FORMATS = ("single_elimination", "double_elimination", "swiss", "round_robin", "heats")


#: What `--name` is to every command but `bots`.
NAME_HELP: Final = f"your player name (kept with its token): {NAME_RULE}"
#: What `--name` is to `create`: not the player's name, the admin identity that creates.
CREATE_NAME_HELP: Final = (
    "the name of the admin identity that creates the tournament, named in its audit (kept "
    "with its token, apart from your player's; default: the one saved, else <your name>-admin)"
    f": {NAME_RULE}"
)
#: What `--name` is to `bots`: not the player's name, the stem of its bots' names.
BOTS_NAME_HELP: Final = (
    "the bots' name, numbered: NAME-1, NAME-2, ... (default tbot-1, tbot-2, ...); each bot "
    "keeps a token of its own (bots.json), apart from your player's"
)


#: What `--name` is to `profile`: the player shown when none is named.
PROFILE_NAME_HELP: Final = (
    "your player name: the player shown when PLAYER is not given (default: the name you used last)"
)
#: Which commands `--name` and `--admin-token` are for (what the options before the command
#: say; after it, only these commands take them).
NAMED_COMMANDS: Final = ("create", "join", "play", "check-in", "leave", "bots", "profile")
TOKEN_COMMANDS: Final = ("create", "admin", "start", "pause", "resume")


def _server_option(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    parser.add_argument(
        "--server",
        type=server_url,
        default=DEFAULT_SERVER_URL if defaults else argparse.SUPPRESS,
        help=f"server URL (default {DEFAULT_SERVER_URL})",
    )


def _name_option(parser: argparse.ArgumentParser, *, defaults: bool, name_help: str) -> None:
    parser.add_argument("--name", default=None if defaults else argparse.SUPPRESS, help=name_help)


def _admin_token_option(
    parser: argparse.ArgumentParser, *, defaults: bool, commands: tuple[str, ...] = ()
) -> None:
    """`--admin-token`; `commands`: the ones it is for, said before the command."""
    parser.add_argument(
        "--admin-token",
        default=os.environ.get("SOLRACE_ADMIN_TOKEN") if defaults else argparse.SUPPRESS,
        help=(f"for {_listed(commands)}: " if commands else "")
        + "admin token (default: $SOLRACE_ADMIN_TOKEN)",
    )


def _listed(commands: tuple[str, ...]) -> str:
    return f"{', '.join(commands[:-1])} and {commands[-1]}"


def _after(*, name_help: str | None = None, token: bool = False) -> argparse.ArgumentParser:
    """The options a command takes after it (`solrace tournament list --server URL`): always
    `--server`; `--name` (`name_help`: what it names) and `--admin-token` only for the commands
    they act in, so that no command's `--help` lists an option that does nothing there. No
    defaults: one given after the command overrides one given before it."""
    after = argparse.ArgumentParser(add_help=False)
    _server_option(after, defaults=False)
    if name_help is not None:
        _name_option(after, defaults=False, name_help=name_help)
    if token:
        _admin_token_option(after, defaults=False)
    return after


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="solrace tournament", description=DESCRIPTION)
    # Before the command, with their defaults (every command's `args` has all three).
    _server_option(parser, defaults=True)
    _name_option(
        parser,
        defaults=True,
        name_help=f"for {_listed(NAMED_COMMANDS)} (COMMAND --help says whose name it is): "
        f"{NAME_RULE}",
    )
    _admin_token_option(parser, defaults=True, commands=TOKEN_COMMANDS)
    sub = parser.add_subparsers(dest="command", required=True)

    server_only = _after()
    player = _after(name_help=NAME_HELP)
    admin_after = _after(token=True)
    # `bots`' own --name names the bots; `create`'s, the admin identity; `profile`'s, the
    # player shown.
    bots_after = _after(name_help=BOTS_NAME_HELP)
    create_after = _after(name_help=CREATE_NAME_HELP, token=True)
    profile_after = _after(name_help=PROFILE_NAME_HELP)

    def add_command(
        name: str,
        text: str,
        description: str | None = None,
        common: argparse.ArgumentParser = server_only,
    ) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, parents=[common], help=text, description=description or described(text)
        )

    create = add_command(
        "create",
        "create a tournament (needs the admin token)",
        "Create a tournament. Its creator is this config folder's separate admin "
        "identity on the server (`solrace tournament --name NAME create ...` picks it; "
        "default: <your name>-admin), so creating never takes over the connection of a "
        "player who is racing.",
        create_after,
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
        one = add_command(name, text, common=player if name in NAMED_COMMANDS else server_only)
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
        type=whole_number(0, MAX_WIRE_INT),
        default=0,
        metavar="N",
        help="a later page: only the finished tournaments older than the N latest "
        "(the list before says which N to ask for)",
    )
    text = "an admin act on a tournament (needs the admin token)"
    admin = add_command("admin", text, common=admin_after)
    admin.add_argument("tournament", help=TOURNAMENT_HELP)
    admin.add_argument("act", choices=ADMIN_ACTS, help="what to do: " + ", ".join(ADMIN_ACTS))
    admin.add_argument("--match", help="the match id (forfeit, correct), e.g. W1-1")
    admin.add_argument("--player", help="player id or name (forfeit, drop)")
    admin.add_argument(
        "--race",
        type=whole_number(1, MAX_WIRE_INT),
        metavar="N",
        help="the race number within the match, from 1 (correct)",
    )
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
        short = add_command(act, text, common=admin_after)
        short.add_argument("tournament", help=TOURNAMENT_HELP)
    text = "bots join a tournament and play its races"
    bots = add_command("bots", text, common=bots_after)
    bots.add_argument("tournament", help=TOURNAMENT_HELP)
    bots.add_argument("--count", type=positive, default=2, help="how many bots (default 2)")
    bots.add_argument(
        "--strategy", choices=STRATEGIES, default="greedy", help="how they play (default greedy)"
    )
    bots.add_argument(
        "--delay",
        type=seconds,
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
    board.add_argument(
        "--limit",
        type=leaderboard_limit,
        default=20,
        metavar="N",
        help=f"how many players, 1 to {LEADERBOARD_LIMIT} (default 20); a board cut short "
        "says so and which --limit shows more",
    )
    text = "print a player's ratings and recent results"
    profile = add_command("profile", text, common=profile_after)
    profile.add_argument(
        "player",
        nargs="?",
        help="a player's name or id (default: --name, else the name you used last)",
    )
    return parser


def leaderboard_limit(text: str) -> int:
    """`leaderboard --limit`: a whole number of players, 1 to `LEADERBOARD_LIMIT` (the most
    one `get_leaderboard` may ask for)."""
    value = positive(text)
    if value > LEADERBOARD_LIMIT:
        raise argparse.ArgumentTypeError(f"{value}: at most {LEADERBOARD_LIMIT}")
    return value


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
        request = request_of(args)
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


def request_of(args: argparse.Namespace) -> ClientMessage | None:
    """The one request `args`' command sends (`create`, `join`, `show`, `list`, an admin act...);
    None for a command that sends no single request of its arguments (`profile`, `bots`,
    `play`). A field the protocol refuses raises pydantic's `ValidationError`."""
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
        # One row more than shown says whether the board goes on (the answer has no count).
        return GetLeaderboard(game=args.game, limit=min(args.limit + 1, LEADERBOARD_LIMIT))
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
