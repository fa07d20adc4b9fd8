"""Bots in tournaments: join (and check in), then play every race the server seats the bot in
until the tournament is over. Used by `solrace tournament bots` (`run_bots`) and the
end-to-end tests.

`run_bots` says what goes on as lines on stdout (`Progress`): the bots registered (and that
they wait for the start), each round's pairings, each match's result, each round's end, the
admin's corrections, drops, pauses and resumes, the champion, then the final view. Before
any bot connects it asks for the tournament once (`open_problem`): an unknown tournament, or
one that is no longer open (running, finished), is one line on stderr and exit status 1, no
bot made. Stopped by Ctrl-C, SIGTERM or SIGHUP
(`stopping`; or refused) before the tournament has started, it withdraws (`leave_tournament`)
the bots it registered, so a stopped run leaves no bots behind in the registration; once the
tournament runs, stopping leaves their matches to the no-show rules.

The bot reads the tournament's phase from its state (every pushed view is folded in, also the
ones that arrive while it plays a race), watches the tournament again after every reconnect
(a new session on the server has no subscription), and asks for the view again when nothing
has come for `refresh_s` seconds, so a push it missed (another node, a lost link) cannot leave
it waiting for ever."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from enum import Enum
from typing import TextIO

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Error, ServerMessage, Sync
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    LeaveTournament,
    TournamentModel,
    TournamentView,
    WatchTournament,
)
from solrace.tasks import cancel_and_wait

from .bot_names import free_numbered
from .bots import Bot, BotError, BotRefusedError, renamed_text
from .connect_failures import ConnectionFailedError
from .connection import Connection
from .defaults import tournament_command
from .session import RequestError, Session, tournament_view_of
from .stopping import Stopped, run_until_stopped
from .strategy import make_strategy
from .tournament_render import (
    must_check_in,
    phase_word,
    plural,
    progress_lines,
    render_tournament,
)
from .wire_text import printable

REFRESH_S = 10.0
#: Seconds a stopped run waits for the server to confirm each bot's withdrawal.
LEAVE_TIMEOUT_S = 5.0
#: Phases in which a tournament has not started: a bot leaving is unregistered.
NOT_STARTED = ("registration", "check_in")


def is_player(view: TournamentModel, bot: Bot) -> bool:
    """The bot is one of the tournament's registered players in `view`."""
    me = bot.state.player_id
    return me is not None and any(p.player_id == me for p in view.players)


async def open_problem(url: str, tournament_id: str) -> str | None:
    """Why bots cannot join `tournament_id` (unknown, or no longer open), asked on one
    anonymous connection before any bot is made; None when it is open."""
    conn = Connection(url)
    await conn.connect()
    try:
        async with Session.running(conn) as session:
            reply = await session.request(
                WatchTournament(tournament_id=tournament_id), tournament_view_of(tournament_id)
            )
    except RequestError as exc:
        if exc.code == ErrorCode.UNKNOWN_TOURNAMENT:
            return f"no tournament {tournament_id}"
        return f"{exc.code}: {exc.message}"
    finally:
        await conn.close()
    assert isinstance(reply, TournamentView)
    phase = reply.tournament.phase
    if phase in NOT_STARTED:
        return None
    return (
        f"tournament {tournament_id} is {phase_word(phase)}: bots can only join one that is "
        "open (registration or check-in)"
    )


def _race_to_play(bot: Bot, played: set[RaceId]) -> RaceId | None:
    me = bot.state.player_id
    for race_id, race in bot.state.races.items():
        if race_id in played or me is None or me not in race.racers or race.is_finished:
            continue
        return race_id
    return None


async def play_tournament(
    bot: Bot, tournament_id: str, *, join: bool = True, refresh_s: float = REFRESH_S
) -> TournamentModel:
    """Run one (connected) bot through a tournament; returns its final view."""
    if join:
        await bot.conn.send(JoinTournament(tournament_id=tournament_id))
    await bot.conn.send(WatchTournament(tournament_id=tournament_id))
    for active in bot.state.active_races:  # back after a restart or a lost link
        await bot.conn.send(Sync(race_id=active))
    me = bot.state.player_id
    checked_in = False
    played: set[RaceId] = set()
    loop = asyncio.get_running_loop()
    last_view = loop.time()
    seen_version = -1
    while True:
        view = bot.state.tournaments.get(tournament_id)
        if view is not None and view.version != seen_version:
            seen_version = view.version
            last_view = loop.time()
            if must_check_in(view, me) and not checked_in:
                checked_in = True
                await bot.conn.send(CheckIn(tournament_id=tournament_id))
        if view is not None and view.phase == "finished":
            return view
        race_id = _race_to_play(bot, played)
        if race_id is not None:
            played.add(race_id)
            bot.follow(race_id)
            await bot.play()
            continue
        wait = last_view + refresh_s - loop.time()
        if wait <= 0:  # nothing for a while: ask again (a missed push)
            last_view = loop.time()
            await bot.conn.send(WatchTournament(tournament_id=tournament_id))
            continue
        incoming = await bot.next_message(wait)  # views are read from the state at the top
        if isinstance(incoming, Error) and incoming.request in ("join_tournament", "check_in"):
            raise BotError(f"{bot.name}: {incoming.code}: {incoming.message}")


class Progress:
    """The lines `solrace tournament bots` prints as the tournament moves on, from the views
    its bots get (every bot's: the first to get a new version says what changed)."""

    def __init__(self, tournament_id: str, bots: Sequence[Bot], out: TextIO) -> None:
        self.tournament_id = tournament_id
        self.bots = bots
        self.out = out
        #: The newest view seen (by version).
        self.latest: TournamentModel | None = None
        self._registered_said = False

    def say(self, text: str) -> None:
        print(printable(text), file=self.out, flush=True)

    def seen(self, message: ServerMessage) -> None:
        """A bot's hook (`Bot.on_message`)."""
        if (
            isinstance(message, TournamentView)
            and message.tournament.tournament_id == self.tournament_id
        ):
            self.show(message.tournament)

    def show(self, view: TournamentModel) -> None:
        if self.latest is not None and view.version <= self.latest.version:
            return
        if not any(is_player(view, bot) for bot in self.bots):
            # Not the bots' tournament (yet): its history is not news (a join that was
            # refused must not replay an old tournament's log as if it went on now).
            self.latest = view
            return
        lines: list[str] = []
        mine = {bot.state.player_id for bot in self.bots}
        if not self._registered_said and mine <= {p.player_id for p in view.players}:
            self._registered_said = True
            if view.phase in NOT_STARTED:
                names = ", ".join(bot.name for bot in self.bots)
                lines.append(
                    f"{plural(len(self.bots), 'bot')} registered in {self.tournament_id} "
                    f"({names}); waiting for the start ({self._how_to_start(view)})"
                )
        lines += progress_lines(self.latest, view)
        self.latest = view
        for line in lines:
            self.say(line)

    def _how_to_start(self, view: TournamentModel) -> str:
        """The admin's command that starts `view` (not started yet); one that needs check-in
        and has not opened it: opening it comes first (a start is refused before)."""
        url, tid = self.bots[0].url, self.tournament_id
        start = tournament_command(url, f"start {tid}")
        if view.check_in_required and view.phase == "registration":
            return f"{tournament_command(url, f'admin {tid} open-check-in')}, then {start}"
        return start


async def _play_all(bots: Sequence[Bot], tournament_id: str) -> TournamentModel:
    """Connect the bots (a bot whose name is someone else's on the server says on stderr
    what it plays as) and run each through the tournament; the first failure stops all."""
    await asyncio.gather(*(bot.connect() for bot in bots))
    for bot in bots:
        renamed = renamed_text(bot, bot.conn.url)
        if renamed is not None:
            print(printable(f"solrace tournament: {renamed}"), file=sys.stderr, flush=True)
    runs = [asyncio.create_task(play_tournament(bot, tournament_id)) for bot in bots]
    try:
        done, _ = await asyncio.wait(runs, return_when=asyncio.FIRST_EXCEPTION)
        failures = [run.exception() for run in done]  # every one read: none logged as lost
        for failure in failures:
            if failure is not None:
                raise failure
        return runs[0].result()
    finally:
        # Only the runs still going: a run that failed is raised above, not logged again
        # with its traceback (`cancel_and_wait` logs a reaped task's failure).
        await cancel_and_wait([run for run in runs if not run.done()])


class Left(Enum):
    """What became of one bot asked to withdraw."""

    LEFT = "left"  # a view showed it registered, then out
    NOT_IN = "not in"  # never registered (never connected, its join refused)
    KEPT = "kept"  # registered, its withdrawal not confirmed (refused, no answer, link lost)


async def _leave(bot: Bot, tournament_id: str, timeout_s: float) -> Left:
    """Withdraw one bot. It has left once a view shows it out after one showed it in (the
    server answers in order: a join that went through is answered, with the bot in, before
    the leave); a refusal naming it unregistered means it never was in."""
    if bot.state.player_id is None:
        return Left.NOT_IN  # never connected
    known = bot.state.tournaments.get(tournament_id)
    was_in = known is not None and is_player(known, bot)

    def out(message: ServerMessage) -> bool:
        nonlocal was_in
        view = bot.state.tournaments.get(tournament_id)
        if view is None or not isinstance(message, TournamentView):
            return False
        if is_player(view, bot):
            was_in = True
            return False
        return was_in

    try:
        await bot.request(LeaveTournament(tournament_id=tournament_id), out, timeout_s)
        return Left.LEFT
    except BotRefusedError as exc:
        if exc.code in (ErrorCode.UNKNOWN_PLAYER, ErrorCode.UNKNOWN_TOURNAMENT):
            return Left.NOT_IN  # its join never went through
    except (BotError, ConnectionError, ConnectionFailedError):
        pass  # no answer in time, or the link is lost
    return Left.KEPT if was_in else Left.NOT_IN


async def withdraw(bots: Sequence[Bot], progress: Progress) -> None:
    """After a stop: unregister the bots if the tournament has not started, else say that
    their matches go on without them."""
    tid = progress.tournament_id
    view = progress.latest
    if view is not None and view.phase not in NOT_STARTED:
        if view.phase != "finished" and any(is_player(view, bot) for bot in bots):
            progress.say(
                f"stopped while {tid} is {phase_word(view.phase)}: the bots' races go on "
                "without them (they forfeit as no-shows)"
            )
        return
    outcomes = await asyncio.gather(*(_leave(bot, tid, LEAVE_TIMEOUT_S) for bot in bots))
    registered = [o for o in outcomes if o is not Left.NOT_IN]
    if registered:  # none: nothing to withdraw, nothing to say
        left = registered.count(Left.LEFT)
        progress.say(f"withdrew {left} of {len(registered)} bots from {tid} (it had not started)")


def make_bots(args: argparse.Namespace) -> list[Bot]:
    """The bots `tbot-1`, ... (or `--name` numbered), each name held so that its identity is
    kept for the next run (`bot_identities`): the first numbers no other program holds (a
    second run at once plays as the next ones, as `solrace bot` does)."""
    held = free_numbered(args.server, args.name or "tbot", args.count)
    bots = [
        Bot(args.server, name.asked, make_strategy(args.strategy, seed=i), held=name)
        for i, name in enumerate(held)
    ]
    for bot in bots:
        bot.delay_s = args.delay
    return bots


async def run_bots(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """`solrace tournament bots ID`: the bots join and play; progress lines on `out`.

    Exit 0 with the final view once the tournament has finished; 1 when the tournament is
    unknown or not open (one line on stderr, no bot made), or a bot could not connect or
    join; 130 after Ctrl-C (SIGINT), 143 after SIGTERM, 129 after SIGHUP (a closed
    terminal: `run_until_stopped`), the bots withdrawn if the tournament had not started."""
    problem = await open_problem(args.server, args.tournament)
    if problem is not None:
        print(printable(f"solrace tournament: {problem}"), file=sys.stderr, flush=True)
        return 1
    bots = make_bots(args)
    progress = Progress(args.tournament, bots, out or sys.stdout)
    for bot in bots:
        bot.on_message = progress.seen

    async def stop() -> None:
        await withdraw(bots, progress)

    try:
        outcome = await run_until_stopped(
            _play_all(bots, args.tournament), on_stop=stop, name="solrace-tournament-bots"
        )
    except (BotError, ConnectionFailedError) as exc:
        print(printable(f"solrace tournament: {exc}"), file=sys.stderr, flush=True)
        await withdraw(bots, progress)
        return 1
    except Exception:
        await withdraw(bots, progress)
        raise
    finally:
        await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
    if isinstance(outcome, Stopped):
        return outcome.status
    progress.say(render_tournament(outcome, server=args.server))
    return 0
