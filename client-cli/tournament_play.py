"""A person plays a tournament: `solrace tournament join ID --play` (join, then play) and
`solrace tournament play ID` (already in it: play on, e.g. after closing the terminal).

Both stay connected until the tournament is over. The Textual app (`PlayApp` on the tournament's
screen) opens each race the server seats the player in; with `--plain` the line mode of `solrace
play --plain` plays it: every `tournament_race` notice makes that race the current one (the
board prints at the start), moves and commands are read line by line, and `next` waits for the
next race (or the end). A move (or `board`, `moves`, `resign`, `wait`) typed while no race has
come yet waits for it, as one typed before a start waits for the start: in a tournament nobody
creates or joins a race, it comes. So does a move (or `moves`) typed once the player is out
of the current race, for the next one. The program ends by itself once the tournament has
finished (`tournament finished: champion NAME`, exit code 0), or on `quit` (at a terminal, one
typed while a line waits for a race ends the wait and says what is not run, and `show`, `list`
and `help` typed then run at once; a script's lines wait their turn, its `quit` too, as in `play
--plain`); at the end of the input it runs the lines read, then follows the tournament to its
end without playing. Ctrl-C, SIGTERM and SIGHUP stop the line mode as they stop `play --plain`
(`PlainMode.stop`: each race held says what becomes of it), with exit code 128 + the signal's
number.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any, Final, TextIO

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board, RaceFinished, Sync
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    TournamentModel,
    TournamentRace,
    TournamentView,
    WatchTournament,
)
from solrace.tasks import cancel_and_wait

from .connect_failures import ConnectionFailedError
from .defaults import tournament_command
from .held_deals import HeldDeals, race_label
from .identity import connect_player
from .leaving import held_race_lines, tournament_back
from .link_status import Incoming, StatusChange
from .plain import EXIT_CLOSED, PlainMode
from .plain_words import QUIT_WORDS, acts_after_start
from .session import RequestError, Session, tournament_view_of
from .stopping import Stopped, run_until_stopped
from .tournament_render import (
    field_size,
    must_check_in,
    names_of,
    phase_word,
    plural,
    render_tournament,
)
from .typed_lines import TypedLines, stdin_lines
from .wire_text import printable

TOURNAMENT_HELP = """\
tournament commands:
  next                wait for your next race (or the end of the tournament)
  show                print the tournament (standings or bracket, live matches)
  (every command of `solrace play --plain` works on the current race: a move, board, moves,
   resign, wait...; `quit` leaves: it says what becomes of the race you are in, which
   runs on without you; while no race has come yet, a move, board, moves, resign or wait
   waits for it, and once you are out of a race a move or moves waits for the next; at a
   terminal show, list, help and quit typed meanwhile act at once)"""
#: `start` or `leave` without a race: a tournament's races start by themselves.
NO_TOURNAMENT_RACE: Final = "no tournament race yet: 'next' waits for it"
#: Commands that act on the race just played even once the player is out of it: a move and
#: `moves` then wait for the next one. A `resign` typed just after one's race ended means that
#: race, surely not the next (it is refused: the race is over).
PLAYED_RACE_COMMANDS: Final = frozenset({"board", "wait", "resign"})
#: Lines typed at a terminal while a line waits for a race that run at once: they only read
#: (as plain mode's `board`, `list` and `help` while a line waits for an open race's start).
READ_MEANWHILE: Final = frozenset({"show", "list", "help"})


class TournamentPlain:
    """The plain line mode of one tournament: `PlainMode` plus the tournament's notices."""

    def __init__(
        self, session: Session, tournament_id: str, out: TextIO, *, interactive: bool = False
    ) -> None:
        self.session = session
        self.tournament_id = tournament_id
        self.mode = PlainMode(
            session,
            out,
            interactive=interactive,
            no_race=NO_TOURNAMENT_RACE,
            back=tournament_back(tournament_id, session.conn.url),
        )
        self.finished = asyncio.Event()
        self._shown: tuple[str, int, bool] | None = None
        self._checked_in = False
        #: The deals of this player's races, checked when their round ends.
        self.deals = HeldDeals(session)
        self._checks: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        #: `quit` and a stop signal may both come: where the player stands is said once.
        self._said_still_registered = False
        #: The player is out of the tournament (eliminated or dropped): said once.
        self._said_out = False
        session.listeners.append(self.on_event)

    def say(self, text: str) -> None:
        self.mode.say(text)

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            with contextlib.suppress(RequestError, TimeoutError, ConnectionError):
                await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def view(self) -> TournamentModel | None:
        return self.session.state.tournaments.get(self.tournament_id)

    def name_of(self, player_id: PlayerId) -> str:
        view = self.view
        names = names_of(view) if view else {}
        return names.get(player_id, player_id)

    # --- events --------------------------------------------------------------------------

    def on_event(self, incoming: Incoming) -> None:
        if isinstance(incoming, StatusChange):  # the connection watches again after a reconnect
            return
        if isinstance(incoming, TournamentRace) and incoming.tournament_id == self.tournament_id:
            if self.session.me in incoming.players:
                self.take(incoming)
        elif (
            isinstance(incoming, TournamentView)
            and incoming.tournament.tournament_id == self.tournament_id
        ):
            self.on_view(incoming.tournament)
        elif isinstance(incoming, RaceFinished):  # its round may have ended already
            self._check_deals()

    def take(self, notice: TournamentRace) -> None:
        """The server seated the player in a race: it becomes the current race."""
        players = " vs ".join(self.name_of(p) for p in notice.players)
        self.say(
            f"tournament race {notice.race_id}: match {notice.match_id}, round {notice.round}, "
            f"race {notice.race_number}: {players}"
        )
        self.mode.race_id = notice.race_id
        if self.session.state.my_board(notice.race_id) is not None:
            self.mode.print_board()
        else:  # resync: the race's first events may have come before (or without) us
            self._spawn(self.session.conn.send(Sync(race_id=notice.race_id)))

    def on_view(self, view: TournamentModel) -> None:
        if must_check_in(view, self.session.me) and not self._checked_in:
            self._checked_in = True
            self._spawn(self.session.conn.send(CheckIn(tournament_id=self.tournament_id)))
        self._check_deals()
        out = out_of(view, self.session.me)
        if out is not None and view.phase != "finished" and not self._said_out:
            self._said_out = True
            self.say(
                f"you are out of {self.tournament_id} ({out}): no race of it comes for you "
                "now; this follows it to its end ('show' prints it, 'quit' leaves)"
            )
        rounds = len(view.rounds)
        key = (view.phase, rounds, view.paused)
        if key == self._shown:
            return
        self._shown = key
        if view.phase == "finished":
            champion = self.name_of(view.champion) if view.champion else "nobody"
            self._spawn(self._finish(champion))
            return
        paused = " (paused)" if view.paused else ""
        where = f", round {rounds}" if rounds else ""
        players = plural(field_size(view), "player")
        self.say(f"tournament {phase_word(view.phase)}{where}{paused}: {players}")

    async def _finish(self, champion: str) -> None:
        """Say the end once the last round's deals are checked."""
        await asyncio.gather(*self._checks, return_exceptions=True)
        self.say(f"tournament finished: champion {champion}")
        self.finished.set()

    def _check_deals(self) -> None:
        """Check the held deals of the player's races whose round has ended."""
        loop = asyncio.get_running_loop()
        for race_id in self.deals.claim(self.tournament_id):
            self._checks.append(loop.create_task(self._check_deal(race_id)))

    async def _check_deal(self, race_id: RaceId) -> None:
        """The round ended: fetch the race's replay and check its deal (`held_deals.py`); the
        line names the race (round, match, race number: a best-of-N checks several)."""
        check = await self.deals.check(race_id)
        self.say(f"{race_label(self.session.state, race_id)}: {check.text}")

    # --- commands ------------------------------------------------------------------------

    def current(self) -> RaceId | None:
        """The oldest live race of this tournament the player is seated in and can play."""
        waiting = self.session.state.races_to_play(self.tournament_id)
        return next((race_id for race_id in waiting if self.can_play(race_id)), None)

    async def race_comes(self) -> RaceId | None:
        """Wait for a live race of this tournament the player is seated in and make it the
        current one (synced, unless its notice made it current already); None if the
        tournament is over first, or the player is out of it (`out_of`: no race comes)."""
        while not self.finished.is_set():
            race_id = self.current()
            if race_id is not None:
                if race_id != self.mode.race_id:
                    self.mode.race_id = race_id
                    await self.session.conn.send(Sync(race_id=race_id))
                return race_id
            if self.view is not None and out_of(self.view, self.session.me) is not None:
                return None
            await self.session.wait_for(
                lambda m: isinstance(m, TournamentRace | TournamentView | Board),
                timeout_s=24 * 3600,
            )
        return None

    async def next_race(self) -> None:
        """`next`: wait for the player's next race (or the tournament's end)."""
        race_id = await self.race_comes()
        self.say(f"next race {race_id}" if race_id else f"no next race: {self.why_none()}")

    def why_none(self) -> str:
        """Why no race comes (`race_comes` gave none): the player is out, or it is over."""
        out = out_of(self.view, self.session.me) if self.view is not None else None
        if out is not None and not self.finished.is_set():
            return f"you are out of the tournament ({out})"
        return "the tournament is over"

    def waits_for_a_race(self, line: str) -> bool:
        """Does `line` wait for the player's next race? What acts on a race once it has
        started (`acts_after_start`) does while none has come yet; a move or `moves` does too
        once the player is out of the current race (won, stuck, resigned, or the race is over:
        the next comes by itself, a best-of's next race or the next round's), while `board`,
        `wait` and `resign` still act on the race just played (`PLAYED_RACE_COMMANDS`)."""
        if not acts_after_start(line):
            return False
        race_id = self.mode.race_id
        if race_id is None:
            return True
        if line.split(maxsplit=1)[0].lower() in PLAYED_RACE_COMMANDS:
            return False
        return not self.can_play(race_id)

    def can_play(self, race_id: RaceId) -> bool:
        """Is something left to play in `race_id` for this player, as far as the client knows
        (its own board's ack says a win or a stuck board before the server's progress does)?"""
        if race_id not in self.session.state.races_to_play():
            return False
        board = self.session.state.my_board(race_id)
        return board is None or not (board.won or board.stuck)

    async def race_for(self, line: str) -> None:
        """`line` acts on a race and there is none to play now (`waits_for_a_race`): wait for
        the player's race, as plain mode waits for a start, then run it there."""
        self.say(f"waiting for your tournament race… ('{line}' runs then)")
        if await self.race_comes() is None:
            self.say(f"{self.why_none()}: '{line}' not run")
            return
        await self.mode.command(line)

    async def commands(self, lines: AsyncIterator[str]) -> bool:
        """Run the commands in the order typed until `quit` (True) or the end of the input
        (False). The input is read all the while: at a terminal, while `next` (or a move
        before its race) waits for a race (for a round to start, maybe hours), `show`, `list`
        and `help` typed meanwhile run at once and a `quit` ends the wait; other lines wait
        their turn. A script's lines all wait their turn, its `quit` too, as in `play
        --plain`: piped at once, they would all be typed meanwhile."""
        typed = TypedLines()
        async with typed.reading(lines, name="solrace-tournament-input"):
            while (line := await typed.next_line()) is not None:
                if line in QUIT_WORDS:
                    return True
                try:
                    if line == "next":
                        if await self._unless_quit(typed, line, self.next_race()):
                            return True
                    elif self.waits_for_a_race(line):
                        # The race comes by itself: what acts on it waits for it.
                        if await self._unless_quit(typed, line, self.race_for(line)):
                            return True
                    else:
                        await self.run_now(line)
                except RequestError as exc:
                    self.say(f"refused: {exc.message} ({exc.code})")
                except TimeoutError:
                    self.say("no answer from the server")
        return False

    async def run_now(self, line: str) -> None:
        """A line that does not wait for a race: `show`, `help`, or plain mode's command."""
        if line == "show":
            view = self.view
            self.say(
                render_tournament(view, server=self.session.conn.url) if view else "no view yet"
            )
        elif line == "help":
            await self.mode.command("help")
            self.say(TOURNAMENT_HELP)
        else:
            await self.mode.command(line)

    async def _unless_quit(
        self, typed: TypedLines, line: str, command: Coroutine[Any, Any, None]
    ) -> bool:
        """`line`'s `command`, which waits for a race (`next`, a move before its race);
        at a terminal, looking at the lines typed meanwhile (`_typed_meanwhile`): True if one
        is `quit` (the wait is given up), else False once the command has run. A script's
        lines are not looked at: they are all read at once, and keep their order (its `quit`
        is for after the lines before it)."""
        waiting = asyncio.create_task(command, name="solrace-tournament-waiting")
        try:
            while True:
                await typed.wait_more(waiting)
                if waiting.done():
                    waiting.result()  # its failure, if any, is the command's
                    return False
                typed.more.clear()  # before looking: a line typed later wakes the wait again
                if self.mode.interactive and await self._typed_meanwhile(typed, line):
                    return True
        finally:
            if not waiting.done():
                await cancel_and_wait([waiting])

    async def _typed_meanwhile(self, typed: TypedLines, line: str) -> bool:
        """The lines typed at a terminal while `line` waits for a race: `show`, `list` and
        `help` run at once (`READ_MEANWHILE`: before the start, the wait may be hours), `quit`
        ends the wait (True), saying what is not run, and any other line keeps its place,
        after the wait, and says so (once)."""
        for item in list(typed.waiting):
            if item.text in QUIT_WORDS:
                typed.waiting.remove(item)
                undone = [line, *(t.text for t in typed.waiting)]
                typed.waiting.clear()
                self.say(f"quit before your tournament race: not run: {', '.join(undone)}")
                return True
            if item.text in READ_MEANWHILE:
                typed.waiting.remove(item)
                await self.run_now(item.text)
            elif not item.said:
                item.said = True
                self.say(f"waiting for your tournament race… ('{item.text}' runs then)")
        return False

    async def run(self, lines: AsyncIterator[str]) -> int:
        await self.session.conn.send(WatchTournament(tournament_id=self.tournament_id))
        race_id = self.current()  # back while a race of ours is on (welcome.active_races)
        if race_id is not None:
            self.mode.race_id = race_id
            self.say(f"your race {race_id} is on")
            await self.session.conn.send(Sync(race_id=race_id))
        try:
            # Ctrl-C, SIGTERM, SIGHUP: what `quit` does (`_quit`).
            outcome = await run_until_stopped(
                self._follow(lines), on_stop=self._quit, name="solrace-tournament-plain"
            )
        finally:
            await cancel_and_wait(self._tasks)
        if isinstance(outcome, Stopped):
            return outcome.status
        if self.mode.closed.is_set() and not self.finished.is_set():
            return EXIT_CLOSED
        if self.finished.is_set() and self.view is not None:
            self.say(render_tournament(self.view, server=self.session.conn.url))
        return 0

    async def _quit(self) -> None:
        """`quit`, or a stop signal (Ctrl-C, SIGTERM, SIGHUP): each race held says what
        becomes of it, as in `play --plain` (`PlainMode.stop`), then where the player stands
        in the tournament, once."""
        await self.mode.stop()
        if not self._said_still_registered:
            self._said_still_registered = True
            self._say_still_registered()

    def _say_still_registered(self) -> None:
        line = still_in_text(self.view, self.tournament_id, self.session.me, self.session.conn.url)
        if line is not None:
            self.say(line)

    async def _follow(self, lines: AsyncIterator[str]) -> None:
        """The commands until `quit`, the tournament's end or the link's (for good); after
        the end of the input, the tournament to its end or the link's."""
        reading = asyncio.create_task(self.commands(lines))
        ending = asyncio.create_task(self.finished.wait())
        closing = asyncio.create_task(self.mode.closed.wait())  # 4003, 4001: for good
        waits = {reading, ending, closing}
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if reading in done and reading.result():
                await self._quit()  # as on a stop signal
            elif reading in done:
                # End of input: follow the tournament to its end (or the link's).
                await asyncio.wait({ending, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(waits)


def out_of(view: TournamentModel, me: PlayerId | None) -> str | None:
    """How the player `me` is out of a tournament under way (`eliminated`, `dropped`: it has
    no race left to play), or None."""
    for standing in view.standings:
        if standing.player_id == me and standing.is_dropped:
            return "dropped"
        if standing.player_id == me and standing.is_eliminated:
            return "eliminated"
    return None


def still_in_text(
    view: TournamentModel | None, tid: str, me: PlayerId | None, server: str
) -> str | None:
    """Quitting leaves the player `me` registered: what to say of it, and how to withdraw (a
    player who just goes away is later forfeited as a no-show), on `server`; None once it has
    finished, or when `me` is not one of its players (never registered, left the field
    unseeded, out)."""
    if view is None or view.phase == "finished" or me is None:
        return None
    if all(p.player_id != me for p in view.players) or me in view.dropped:
        return None
    if view.seeds and me not in view.seeds:
        return None  # registered, did not check in: the field started without them
    if out_of(view, me) is not None:
        return None
    play, leave = (tournament_command(server, f"{word} {tid}") for word in ("play", "leave"))
    if view.phase == "running":
        return (
            f"you are still playing in {tid}: '{play}' comes back; "
            f"'{leave}' drops out (your live match forfeited)"
        )
    return f"you are still registered in {tid}: '{leave}' withdraws before the start"


async def join(session: Session, tournament_id: str) -> str | None:
    """Register; None when the player is in (already registered counts), else the refusal."""
    try:
        await session.request(
            JoinTournament(tournament_id=tournament_id), tournament_view_of(tournament_id)
        )
        return None
    except RequestError as exc:
        refusal = f"{exc.code}: {exc.message}"
    except TimeoutError:
        return "no answer from the server"
    try:
        reply = await session.request(
            WatchTournament(tournament_id=tournament_id),
            tournament_view_of(tournament_id),
        )
    except (RequestError, TimeoutError):
        return refusal
    assert isinstance(reply, TournamentView)
    if any(p.player_id == session.me for p in reply.tournament.players):
        return None
    return refusal


async def not_a_player(session: Session, tournament_id: str) -> str | None:
    """Why the connected player cannot play the tournament (it is unknown, or the player is
    not one of its players: what they can do instead), or None. Once the tournament has
    started, its players are its field (`seeds`): who registered but did not check in (when
    check-in was required) is not one of them, and can only watch."""
    try:
        reply = await session.request(
            WatchTournament(tournament_id=tournament_id), tournament_view_of(tournament_id)
        )
    except RequestError as exc:
        return f"{exc.code}: {exc.message}"
    assert isinstance(reply, TournamentView)
    view = reply.tournament
    registered = any(p.player_id == session.me for p in view.players)
    # Once seeded, the field is the seeds: who registered and did not check in is not in it.
    if registered and (not view.seeds or session.me in view.seeds):
        return None
    me = session.state.name or session.me
    url = session.conn.url
    watch, join_it, show = (
        tournament_command(url, f"{word} {tournament_id}") for word in ("watch", "join", "show")
    )
    if registered and view.phase != "finished":
        return (
            f"{me} did not check in to {tournament_id}, which is {phase_word(view.phase)} "
            f"without them: you can only watch it (`{watch}`, or "
            f"`show {tournament_id} --tui`)"
        )
    if view.phase in ("registration", "check_in"):
        return f"{me} is not registered in {tournament_id}: `{join_it} --plain` registers and plays"
    if view.phase == "finished":
        champion = names_of(view).get(view.champion, "nobody") if view.champion else "nobody"
        return (
            f"{me} was not a player of {tournament_id}, which has finished (champion "
            f"{champion}): `{show}` prints it"
        )
    return (
        f"{me} is not a player of {tournament_id}, which is {phase_word(view.phase)}: you can only "
        f"watch it (`{watch}`, or `show {tournament_id} --tui`)"
    )


async def run_play(args: argparse.Namespace) -> int:
    """`join ID --play` and `play ID`: connect as the player and play until the end."""
    from .app import _log_to_file
    from .identity import data_dir
    from .tournament_cli import fail, no_identity_problem

    problem = no_identity_problem(args)
    if problem is not None:
        return fail(problem)
    _log_to_file(data_dir())
    try:
        conn = await connect_player(args.server, args.server, args.name)
    except ConnectionFailedError as exc:
        print(printable(f"solrace tournament: {exc}"), file=sys.stderr)
        return 1
    try:
        async with Session.running(conn) as session:
            return await _play_in(session, args)
    finally:
        await conn.close()


async def _play_in(session: Session, args: argparse.Namespace) -> int:
    """`run_play` once connected: join if asked, then the line mode or the play app."""
    tid = args.tournament
    if args.command == "join":
        refusal = await join(session, tid)
        if refusal is not None:
            print(printable(f"solrace tournament: {refusal}"), file=sys.stderr)
            return 1
    if args.plain and args.command == "play":
        problem = await not_a_player(session, tid)
        if problem is not None:
            print(printable(f"solrace tournament: {problem}"), file=sys.stderr)
            return 1
    if args.plain:
        plain = TournamentPlain(session, tid, sys.stdout, interactive=sys.stdin.isatty())
        plain.say(f"connected to {args.server} as {session.state.name}; tournament {tid}")
        return await plain.run(stdin_lines())
    from .app import run_app
    from .tui import PlayApp

    options = argparse.Namespace(ascii=args.ascii, time_limit=600, race=None, invite=None)
    app = PlayApp(session, args=options, tournament_id=tid)
    status = await run_app(app)
    # Once the terminal is back: the races quitting left, then those still held.
    for line in (*app.farewell, *held_race_lines(session, tournament_back(tid, session.conn.url))):
        print(printable(f"solrace tournament: {line}"))
    still = still_in_text(session.state.tournaments.get(tid), tid, session.me, session.conn.url)
    if still is not None:  # as the line mode says on quitting
        print(printable(f"solrace tournament: {still}"))
    return status


__all__ = ["TournamentPlain", "join", "run_play"]
