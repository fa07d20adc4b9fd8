"""Running `solrace tournament ...`: each command connects, sends the request its arguments
make (`tournament_args` parses them and builds it), prints the answer and exits; `bots`, `play`
and `--tui` hand over to their own modules.

Only what acts as the player connects with the saved identity (`_connect`; the help says so too,
`tournament_args.DESCRIPTION`): the server keeps one connection per player and closes the older
one (4003), so a read or an admin act must not take over a racing player's connection."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Final, TypeVar

from pydantic import ValidationError

from solrace.cli import INTERRUPTED_STATUS
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId, looks_like_player_id
from solrace.server.protocol.messages import (
    ClientMessage,
    Error,
    Ping,
    Pong,
    ServerMessage,
)
from solrace.server.protocol.tournament_messages import (
    GetProfile,
    Leaderboard,
    Profile,
    TournamentAdmin,
    TournamentList,
    TournamentModel,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)

from .bot_identities import known_bots
from .connect_failures import ConnectionFailedError
from .connection import Connection
from .defaults import DEFAULT_SERVER_URL, tournament_command
from .identity import (
    connect_player,
    known_players,
    load_identity,
    name_problem,
    player_id_of,
)
from .plain_events import closed_text
from .session import (
    LinkClosedError,
    RequestError,
    answer_to,
    read_until,
    reader_of,
    request_reading,
)
from .tournament_args import (
    admin_problem,
    build_parser,
    create_problem,
    parse_card_counts,
    parse_placings,
    request_of,
    validation_text,
)
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

# `build_parser` and `parse_placings` are `tournament_args`'; named here too, for what asks the
# command's module for them.
__all__ = ["build_parser", "fail", "main", "no_identity_problem", "parse_placings", "render"]

NAMES_PING = 4_242_424
#: Seconds a command waits for the answer to each request ("no answer from the server").
ANSWER_TIMEOUT_S: Final = 30.0
#: Commands that only read: an anonymous connection (no player's connection is taken over).
READ_ONLY = frozenset({"show", "watch", "list", "leaderboard", "profile"})
#: Admin acts: the admin token authorizes them, no identity is needed.
ADMIN_COMMANDS = frozenset({"start", "pause", "resume", "admin"})
#: Commands that act as a registered player: without `--name`, the saved identity only (never
#: a new player named after the login name, who could not be registered).
REGISTERED_COMMANDS = frozenset({"check-in", "leave", "play"})
#: What `admin correct` adds in a rated tournament: each race was rated once, as it ended.
RATINGS_KEPT: Final = (
    "ratings stay as the race was rated: a correction changes the tournament's result "
    "(standings, winners, champion), not ratings or profiles"
)
#: Most audit actors whose names `show` asks for (one request each).
AUDIT_NAMES = 10

AnswerT = TypeVar("AnswerT")


def render(
    message: ServerMessage,
    skip_finished: int = 0,
    limit: int | None = None,
    *,
    server: str = DEFAULT_SERVER_URL,
) -> str | None:
    """`message` as printed; a `tournament_list` asked with `skip_finished` (the page it is
    says how to ask for the next), a `leaderboard` of `leaderboard --limit` (`limit` rows at
    most: one more says it goes on); the commands it names name `server`."""
    if isinstance(message, TournamentView):
        return render_tournament(message.tournament, server=server)
    if isinstance(message, TournamentList):
        listed = render_list(message.tournaments)
        if not message.more:
            return listed
        seen = skip_finished + sum(s.phase == "finished" for s in message.tournaments)
        return (
            f"{listed}\n{plural(message.more, 'older finished tournament')} not listed: "
            f"{tournament_command(server, f'list --skip-finished {seen}')}"
        )
    if isinstance(message, Leaderboard):
        return render_leaderboard(message, limit, server=server)
    if isinstance(message, Profile):
        return render_profile(message)
    return None


#: What `render` prints: the answers a command waits for.
RENDERED: Final = (TournamentView, TournamentList, Leaderboard, Profile)


def is_rated_correction(request: ClientMessage, answer: ServerMessage) -> bool:
    """`answer` answers a correction in a rated tournament (its output says ratings stay)."""
    return (
        isinstance(request, TournamentAdmin)
        and request.act == "correct_result"
        and isinstance(answer, TournamentView)
        and answer.tournament.rated
    )


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
            request = request_of(args)
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
        text = render(
            answer,
            getattr(args, "skip_finished", 0),
            getattr(args, "limit", None),
            server=args.server,
        )
        assert text is not None
        if args.command == "show" and isinstance(answer, TournamentView):
            view = answer.tournament
            text += "\n\n" + render_audit(view, await _actor_names(conn, view))
        if is_rated_correction(request, answer):
            text += "\n\n" + RATINGS_KEPT
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
    """`profile [PLAYER]` on an anonymous connection: PLAYER is a name or an id (default:
    --name, else the name used last). A name of the saved identities (the player's and the
    bots') is asked for by its id; any other is asked for by name (the server knows every
    name it registered), then as an id; text shaped like an id is asked for as an id first,
    since a name may copy another player's id."""
    wanted = args.player or args.name
    if wanted is None:
        last = load_identity(args.server)
        if last is None:
            return fail(f"profile: no identity saved for {args.server}; name a player")
        wanted = last.name
    player_id = {**known_bots(args.server), **known_players(args.server)}.get(wanted)
    requests = [GetProfile(player_id=player_id)] if player_id else []
    if len(wanted) <= 64:
        by_name = GetProfile(name=wanted)
        if wanted == player_id:
            requests.append(by_name)
        elif looks_like_player_id(wanted):
            requests += [GetProfile(player_id=wanted), by_name]
        else:
            requests += [by_name, GetProfile(player_id=wanted)]  # maybe an id
    for request in requests:
        profile = await _ask(conn, request, Profile)
        if profile is not None:
            print(printable(render(profile) or ""), flush=True)
            return 0
    return fail(f"unknown_player: no player named {wanted!r} (or with that id) on {args.server}")


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
    except LinkClosedError as exc:  # closed for good (4003...): said as `play --plain` says it
        print(printable(f"solrace tournament: {closed_text(exc.detail)}"), file=sys.stderr)
        return 1
    except TimeoutError:
        print("solrace tournament: no answer from the server", file=sys.stderr)
        return 1
    except ConnectionFailedError as exc:
        print(printable(f"solrace tournament: {exc}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return INTERRUPTED_STATUS
