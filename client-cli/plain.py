"""`solrace play --plain`: a line mode for scripts, screen readers and dumb terminals.

The board prints as ASCII text; each input line is one command or one move in the notation
(`deal`, `w-t3`, `t2-t5:3`). Commands run in the order typed, each to its end before the next
(a move waits for its ack; a move, `moves`, `resign` or `wait` typed before the start waits for
the start), so a script is just lines. The input is read all the while: when a command waits
for the start of an open race (which only its creator's `start` or more players will start),
a `start` read meanwhile runs at once; at a terminal (not a script), `leave`, `board`, `list`,
`help` and `quit` typed meanwhile act at once too (`quit` unless the race is in its countdown
after all), and other lines wait their turn and say so. A
command's outcome prints once the server has confirmed it (or `refused COMMAND: why (code)`).
Events (players joining, the start, opponents' progress, the result) print as they arrive.

A player already seated in a race (back after Ctrl-C or a crash: `welcome.active_races`) is put
back in it: at the start the oldest such race it is still in becomes the current one (`sync`
first: a race it is out of, gone or resigned, says so and is not resumed), and `join RACE` of
a race one sits in resumes it. A link closed for good (4003: the same player connected
again elsewhere) ends the program with exit code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Final, TextIO

from solrace.engine import GAME_IDS, EngineError, Move
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
)
from solrace.tasks import cancel_and_wait

from .boards import rules_board
from .held_deals import deal_line
from .link_status import Incoming, LinkStatus, StatusChange
from .render import render_plain, result_line
from .session import LinkClosedError, MoveTimeoutError, Predicate, RequestError, Session
from .state import NOT_SEATED, RaceState, is_gone, is_lost
from .stopping import Stopped, run_until_stopped
from .typed_lines import Typed, TypedLines
from .wire_text import printable

HELP = """\
commands:
  MOVE                a move: deal (or d), w-t3, t6-f0, t2-t5:3 (piles s w f0.. t0.. r0..)
  board               print the board (waits for the start; an open race: says so)
  moves               list the legal moves (waits for the start)
  list                list open and running races
  create GAME [SEATS [SECONDS]]   create a race (games: {games})
  join RACE [INVITE]  sit in a race (a race you already sit in: back into it)
  start               start the race you created
  resign              give up the current race (before the start: at the start)
  wait                wait until the current race ends, then print the result
  leave               leave a race that has not started
  help                this text
  quit                leave the program (also q, exit, end of input, Ctrl-C): open races you
                      created are left; a live race is forfeited unless you come back
Commands run in the order typed; while one waits for an open race's start, start runs at
once, and at a terminal leave, board, list, help and quit too."""

CREATE_USAGE: Final = "create GAME [SEATS [SECONDS]]"
QUIT_WORDS: Final = frozenset({"quit", "exit", "q"})
#: Commands typed while another waits for an open race's start that run at once: what can
#: start the race or end the wait, and what answers without it.
TYPED_MEANWHILE: Final = frozenset({"start", "leave", "board", "list", "help"})
#: A live race's status as a sentence says it ("while it is counting down").
STATUS_WORDS: Final = {"countdown": "counting down"}
NO_RACE: Final = "no current race: create or join one first ('list' shows the races)"
#: Commands that act on the current race.
RACE_COMMANDS: Final = frozenset({"board", "moves", "start", "resign", "leave", "wait"})
#: Commands that act on the current race once it has started (before, they wait for it), as
#: a move does.
AFTER_START: Final = frozenset({"board", "moves", "resign", "wait"})
#: The command words that are no move (any other line is read as one).
COMMAND_WORDS: Final = RACE_COMMANDS | {"help", "list", "create", "join"}
#: Exit code when the link closed for good (4003, 4001...).
EXIT_CLOSED: Final = 1


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a task's failure as seen: its awaiters (if any are left) report it."""
    if not task.cancelled():
        task.exception()


def move_text(line: str) -> str:
    """The move a line types: `d` (the full-screen board's key for a deal) is `deal`, in
    either case as every move and command is (`D`, `Deal`, `W-T3`)."""
    return "deal" if line.lower() == "d" else line


def line_mode_back(race_id: RaceId) -> str:
    """How a player of `solrace play --plain` comes back to a race it left."""
    return f"come back with 'join {race_id}' (or --race {race_id})"


def play_screen_back(race_id: RaceId) -> str:
    """How a player of `solrace play`'s screen comes back to a race it left."""
    return f"come back with solrace play (Ctrl+R resumes {race_id})"


def tournament_back(tournament_id: str) -> Callable[[RaceId], str]:
    """How a player of tournament `tournament_id` comes back to its race, from either mode."""

    def back(race_id: RaceId) -> str:
        return f"come back with 'solrace tournament play {tournament_id}'"

    return back


def leaving_line(
    me: PlayerId | None, race: RaceState, back: Callable[[RaceId], str] = line_mode_back
) -> str | None:
    """What the program's end does to `race` for player `me` (the line mode's `quit`, the
    play screen's), or None if `me` holds no seat in it; `back` says how to come back."""
    if not race.is_live or me is None or me not in race.racers:
        return None
    if race.racers[me].state not in ("joined", "playing"):
        return None
    how_back = back(race.race_id)
    grace = "its grace period" if race.info is None else f"{race.info.grace_ms / 1000:g} s"
    if race.status == "open":
        return (
            f"leaving race {race.race_id} before its start: your seat is given up after "
            f"{grace} away unless you {how_back}"
        )
    status = STATUS_WORDS.get(race.status, race.status)
    return (
        f"leaving race {race.race_id} while it is {status}: you forfeit (gone) after "
        f"{grace} away unless you {how_back}"
    )


def held_race_lines(session: Session, back: Callable[[RaceId], str]) -> list[str]:
    """`leaving_line` of every live race the session's player still holds."""
    me = session.me
    lines = (leaving_line(me, race, back) for race in session.state.races.values())
    return [line for line in lines if line is not None]


def acts_after_start(line: str) -> bool:
    """Does `line` act on the current race once it has started (a move, `board`, `moves`,
    `resign`, `wait`), so that typed before the start it waits for it? A line that cannot be
    read as a move does not: it is said at once."""
    word = line.split(maxsplit=1)[0].lower()
    if word in AFTER_START:
        return True
    if word in COMMAND_WORDS:
        return False
    try:
        Move.parse(move_text(line))
    except EngineError:
        return False
    return True


def closed_text(detail: str) -> str:
    """The line for a link closed for good (`detail`: the close as `connection.close_text`
    says it, maybe within the hello's failure)."""
    if f"({CloseCode.REPLACED.value}" in detail:
        return (
            f"connection closed: {detail}; another program uses the same identity, this one stops"
        )
    return f"connection closed: {detail}; this program stops"


class PlainMode:
    #: Seconds a typed move waits for its answer before the prompt comes back (the move is
    #: still sent again until answered; the late answer is printed when it comes).
    MOVE_WAIT_S = 30.0

    def __init__(
        self,
        session: Session,
        out: TextIO,
        *,
        width: int = 80,
        interactive: bool = False,
        no_race: str = NO_RACE,
        back: Callable[[RaceId], str] = line_mode_back,
    ) -> None:
        self.session = session
        self.out = out
        self.width = width
        #: How the player comes back to a race once the program has ended (`leaving_line`).
        self.back = back
        #: What a command on the current race says when there is none (a tournament's line
        #: mode has races that come, not races to create or join).
        self.no_race = no_race
        #: The input is a person at a terminal, not a script (a pipe, a file): while a command
        #: waits for an open race's start, what they type meanwhile may act at once.
        self.interactive = interactive
        self.race_id: RaceId | None = None
        #: Set when the link is closed for good: `run` ends.
        self.closed = asyncio.Event()
        self._seen: dict[PlayerId, tuple[int, str]] = {}
        #: Races this program created: those still open are left on `quit`.
        self._created: set[RaceId] = set()
        self._status: dict[RaceId, str] = {}
        #: Moves whose wait ran out (sequence numbers): their answer is said when it comes,
        #: once. Any other answer not waited for is a second answer to a move sent again
        #: (`duplicate`), already said.
        self._late: set[int] = set()
        #: The one `quit` (the end of the input and a stop signal may both ask for it).
        self._quitting: asyncio.Task[None] | None = None
        #: The command lines read and not run yet (read all the while `run` runs).
        self._input = TypedLines()
        #: `quit` typed while a command waited for an open race's start: it ends `run`.
        self._quit_asked = False
        #: The last `reconnecting…` line said while the link is down: a failed try that gives
        #: the same reason again is not said again (a server down for a minute is tried a
        #: dozen times).
        self._reconnecting_said: str | None = None
        session.listeners.append(self.on_event)

    def say(self, text: str) -> None:
        self.out.write(printable(text) + "\n")
        self.out.flush()

    @property
    def race(self) -> RaceState | None:
        return None if self.race_id is None else self.session.state.races.get(self.race_id)

    def name_of(self, race: RaceState, player_id: PlayerId) -> str:
        racer = race.racers.get(player_id)
        return racer.name if racer else player_id

    def print_board(self) -> None:
        board = None if self.race_id is None else self.session.state.my_board(self.race_id)
        if board is None:
            self.say("no board yet")
            return
        self.say(render_plain(board, self.width))

    # --- events --------------------------------------------------------------------------

    def on_event(self, incoming: Incoming) -> None:
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.RECONNECTING:
                line = f"reconnecting… ({incoming.detail})"
                if line != self._reconnecting_said:
                    self.say(line)
                self._reconnecting_said = line
            elif incoming.status is LinkStatus.CONNECTED:
                self._reconnecting_said = None
                self.say("reconnected")
            else:
                self.say(closed_text(incoming.detail))
                self.closed.set()
            return
        race_id = getattr(incoming, "race_id", None)
        if race_id is None and isinstance(incoming, Error):
            if not self.session.was_awaited(incoming):  # a refusal of a request not waited for
                self.say(f"error: {incoming.message} ({incoming.code})")
            return
        if race_id is None or race_id != self.race_id:
            return
        race = self.session.state.races[race_id]
        if isinstance(incoming, Board | MoveAck) and race.unusable is not None:
            self.say(f"error: {race.unusable}")  # dropped: the board stays as it was
            return
        if isinstance(incoming, RaceUpdate | RaceSnapshot):
            self._on_update(race)
        elif isinstance(incoming, RaceStarted):
            limit = (incoming.ends_at_ms - incoming.started_at_ms) // 1000
            chosen = ""
            if race.deal_chosen and race.info and race.info.creator != self.session.me:
                chosen = ", the creator chose its deal"
            self.say(f"race started ({limit}s{chosen}); commitment {incoming.commitment}")
        elif isinstance(incoming, Board) and incoming.player_id == self.session.me:
            self.print_board()
        elif isinstance(incoming, Progress) and incoming.progress.player_id == self.session.me:
            entry = incoming.progress  # a change of the own state: the resign's confirmation
            if (
                entry.state == "resigned"
                and self._seen.get(entry.player_id, (0, ""))[1] != "resigned"
            ):
                self.say(f"resigned from race {race_id}")
            self._seen[entry.player_id] = (entry.on_foundations, entry.state)
        elif isinstance(incoming, Progress):
            entry = incoming.progress
            mark = (entry.on_foundations, entry.state)
            if self._seen.get(entry.player_id) != mark:
                self._seen[entry.player_id] = mark
                name = self.name_of(race, entry.player_id)
                self.say(
                    f"progress {name} {entry.on_foundations}/{entry.total} {entry.state} "
                    f"({entry.moves} moves)"
                )
        elif isinstance(incoming, RaceFinished):
            self.print_result(race)
        elif isinstance(incoming, MoveAck | MoveRejected) and not self.session.was_awaited(
            incoming
        ):
            # The answer to a move whose wait ran out (the link was down: the move was sent
            # again once it was back): said now, so that nobody plays it twice; once, though
            # a move sent twice may be answered twice.
            if incoming.seq not in self._late:
                return
            self._late.discard(incoming.seq)
            if isinstance(incoming, MoveAck):
                self.say(f"ok {incoming.move} (answered late)")
                self.print_board()
            else:
                self.say(f"refused {incoming.move}: {incoming.reason} (answered late)")
        elif isinstance(incoming, Error) and race.lost is not None and incoming.request is None:
            self.say_lost(race)  # said even to a wait: it ends any wait on the race
        elif is_gone(incoming) and race.gone is not None and not self.session.was_awaited(incoming):
            self.say(self.gone_text(race, race.gone))  # a wait says it when it ends
        elif isinstance(incoming, Error) and not self.session.was_awaited(incoming):
            self.say(f"error: {incoming.message} ({incoming.code})")

    def say_lost(self, race: RaceState) -> None:
        """Say that the server lost `race` (its `lost`), and what the player can do."""
        line = f"race {race.race_id}: {race.lost}: it cannot go on and will have no result"
        if self.session.state.tournament_of(race.race_id) is None:
            line += " ('create' or 'join' another race, or 'quit')"
        self.say(line)

    def _on_update(self, race: RaceState) -> None:
        info = race.info
        if info is None:
            return
        names = sorted(r.name for r in info.racers)
        joined = ",".join(names)
        key = f"{info.status}|{joined}"
        if self._status.get(race.race_id) == key:
            return
        self._status[race.race_id] = key
        if info.status == "countdown" and info.start_at_ms is not None:
            wait = max(0, info.start_at_ms - self.session.conn.server_now_ms()) / 1000
            self.say(f"countdown: starting in {wait:.0f}s ({joined})")
        elif info.status == "open":
            self.say(f"waiting for players: {len(names)}/{info.seats} ({joined})")
        elif info.status == "cancelled":
            self.say("race cancelled")

    def print_result(self, race: RaceState) -> None:
        self.say("race finished")
        for entry in race.results or []:
            self.say(result_line(entry))
        if race.commitment_ok is not None:
            self.say(deal_line(race))
        elif race.deal_held:
            self.say("deal held until the tournament round ends (checked then)")

    # --- the program ---------------------------------------------------------------------

    async def run(self, lines: AsyncIterator[str]) -> int:
        """Read commands until `quit` or the end of the input (0), or until the link is
        closed for good (`EXIT_CLOSED`). Stopped by Ctrl-C, SIGTERM or SIGHUP (a service
        stop, a closed terminal: `run_until_stopped`), it does what `quit` does, then
        returns 128 + the signal's number."""
        if self.session.closed is not None:
            self.say(closed_text(self.session.closed))
            return EXIT_CLOSED
        outcome = await run_until_stopped(self._run(lines), on_stop=self.stop, name="solrace-plain")
        if self.closed.is_set() or self.session.closed is not None:
            return EXIT_CLOSED
        if isinstance(outcome, Stopped):
            return outcome.status
        return outcome

    async def stop(self) -> None:
        """Stopped by a signal: as on `quit`, its open races are left and each live race
        held says what becomes of it. The end of the input may have begun quitting already
        (a closed terminal ends the input as it sends SIGHUP): `quit` runs once, this waits
        for it."""
        with contextlib.suppress(LinkClosedError):
            await self.quit()

    async def _run(self, lines: AsyncIterator[str]) -> int:
        """The commands (`_read_commands`) until they end or the link closes for good."""
        reading = asyncio.create_task(self._read_commands(lines), name="solrace-plain-reading")
        closing = asyncio.create_task(self.closed.wait(), name="solrace-plain-closed")
        try:
            await asyncio.wait({reading, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait((reading, closing))
        if self.closed.is_set() or self.session.closed is not None:
            return EXIT_CLOSED
        return reading.result()

    async def _read_commands(self, lines: AsyncIterator[str]) -> int:
        """Run the commands in the order typed, each to its end; the input is read all the
        while (`TypedLines.reading`), so that a command waiting for the start of an open race
        can take `start`, `leave`, `quit`... typed meanwhile (`_typed_meanwhile`)."""
        try:
            await self.take_back_seat()
        except LinkClosedError:
            return EXIT_CLOSED
        async with self._input.reading(lines, name="solrace-plain-input"):
            while (line := await self._input.next_line()) is not None and line not in QUIT_WORDS:
                try:
                    await self.command(line)
                except LinkClosedError:
                    return EXIT_CLOSED
                if self._quit_asked:
                    self._say_not_run(line)
                    break
        try:
            await self.quit()
        except LinkClosedError:
            return EXIT_CLOSED
        return 0

    def _say_not_run(self, interrupted: str) -> None:
        """`quit` came while `interrupted` waited for a start: what it leaves undone."""
        undone = [interrupted, *(t.text for t in self._input.waiting)]
        self._input.waiting.clear()
        self.say(f"quit before the start: not run: {', '.join(undone)}")

    async def quit(self) -> None:
        """`quit`, the end of the input or a stop signal (Ctrl-C, SIGTERM, SIGHUP): the open
        races this player created are left (no one should join a race nobody will play);
        each live race still held says what becomes of it. It runs once: a later call (a
        stop signal while the end of the input quits) waits for the first, whose reader may
        be cancelled meanwhile."""
        if self._quitting is None:
            self._quitting = asyncio.ensure_future(self._quit())
            self._quitting.add_done_callback(_retrieve)
        await asyncio.shield(self._quitting)

    async def _quit(self) -> None:
        me = self.session.me
        for race_id in list(self._created):
            race = self.session.state.races.get(race_id)
            if race is None or race.status != "open" or me not in race.racers:
                continue
            try:
                await self.session.leave_race(race_id)
            except LinkClosedError:
                raise
            except TimeoutError:
                self.say(f"cannot leave race {race_id}: no answer from the server")
                continue
            except RequestError as exc:
                self.say(f"cannot leave race {race_id}: {exc}")
                continue
            if self.race_id == race_id:
                self.race_id = None
            self.say(f"left race {race_id}")
        for line in self.leaving_lines():
            self.say(line)

    def leaving_lines(self) -> list[str]:
        """What leaving now does to each live race this player still holds here (the program
        ends), the current race last."""
        races = [r for r in self.session.state.races.values() if r.race_id != self.race_id]
        if self.race is not None:
            races.append(self.race)
        return [line for race in races if (line := self.leaving_line(race)) is not None]

    def leaving_line(self, race: RaceState) -> str | None:
        """What leaving now does to `race`, or None if this player holds no seat in it."""
        return leaving_line(self.session.me, race, self.back)

    async def take_back_seat(self) -> None:
        """Races this player already sits in (`welcome.active_races`): without a current race
        the oldest it is still in is resumed and shown; the others are named. A current race
        set before (`--race`: `join` resumed it and said so already) is not shown again.

        Each is synced first: only its snapshot tells whether the player is still in it (a
        race it is out of, gone or resigned, is said so and offered no more)."""
        mine = [r for r in self.session.state.races_to_play() if r != self.race_id]
        others = []
        for race_id in mine:
            try:
                await self.session.resume(race_id)
            except LinkClosedError:
                raise
            except (RequestError, TimeoutError) as exc:
                self.say(f"cannot resume race {race_id}: {exc}")
                continue
            if not self.still_in(race_id):
                continue
            if self.race_id is None:
                self.race_id = race_id
                self.say_back(race_id)
            else:
                others.append(race_id)
        if others:
            self.say(f"your races in progress: {', '.join(others)} ('join RACE' resumes one)")

    def still_in(self, race_id: RaceId) -> bool:
        """After a resume (its snapshot is in): is this player still in the race (a finished
        race's result says the rest)? If not, says so."""
        race = self.session.state.races.get(race_id)
        out = self.session.state.out_of(race_id)
        if race is None or race.is_finished or out is None:
            return True
        if out == NOT_SEATED:
            self.say(f"race {race_id}: you no longer sit in it (your seat was given up)")
        else:
            self.say(f"race {race_id}: you are out of it ({out}); it goes on without you")
        return False

    def say_back(self, race_id: RaceId) -> None:
        """The current race is one this player was already seated in (and still is:
        `still_in`): where it stands."""
        race = self.session.state.races.get(race_id)
        if race is None:
            return
        if race.is_finished:
            self.say(f"race {race_id} is over")
            if race.results is not None:
                self.print_result(race)
            return
        left = race.remaining_ms(self.session.conn.server_now_ms())
        clock = f", {left // 1000}s left" if race.status == "running" and left else ""
        self.say(f"back in race {race_id} ({race.status}{clock}): your seat was kept")
        if self.session.state.my_board(race_id) is not None:
            self.print_board()

    # --- commands ------------------------------------------------------------------------

    async def command(self, line: str) -> None:
        """Run one command line; a refusal prints `refused WORD: why (code)`. A link closed
        for good raises `LinkClosedError`."""
        parts = line.split(maxsplit=1)
        if not parts:
            return
        word = parts[0].lower()
        try:
            await self._command(line)
        except LinkClosedError:
            raise
        except RequestError as exc:
            self.say(f"refused {word}: {exc.message} ({exc.code})")
        except TimeoutError:
            self.say(f"no answer from the server ({word})")

    async def _command(self, line: str) -> None:
        word, *args = line.split()
        word = word.lower()
        if word == "help":
            self.say(HELP.format(games=", ".join(GAME_IDS)))
        elif word == "list":
            await self.list_races()
        elif word == "create":
            await self.create(args)
        elif word == "join":
            await self.join(args)
        elif word in RACE_COMMANDS and self.race_id is None:
            self.say(self.no_race)
        elif word == "board":
            race = self.race
            if self.race_id is not None and self.session.state.my_board(self.race_id) is not None:
                self.print_board()
            elif race is not None and race.status == "open":
                # Nothing may start it but a `start` (or players) to come: said at once.
                self.say(f"no board yet: the race has not started ({self._open_text(race)})")
            else:
                await self.wait_start()  # the board prints when it comes
        elif word == "moves":
            if await self.wait_start():
                self.list_moves()
        elif word == "start":
            await self.start()
        elif word == "leave":
            await self.leave()
        elif word == "resign":
            await self.resign()
        elif word == "wait":
            await self.wait_end()
        else:
            await self.move(line)

    def list_moves(self) -> None:
        board = None if self.race_id is None else self.session.state.my_board(self.race_id)
        if board is None:
            self.say("no board yet")
            return
        moves = rules_board(board).legal_moves()
        self.say("legal moves: " + (" ".join(str(m) for m in moves) or "none"))

    async def list_races(self) -> None:
        races = await self.session.list_races()
        if not races:
            self.say("no live races")
        for info in races:
            names = ", ".join(r.name for r in info.racers)
            self.say(
                f"{info.race_id} {info.game} {info.status} {len(info.racers)}/{info.seats} "
                f"{info.time_limit_s}s{' rated' if info.rated else ''}"
                f"{' private' if info.private else ''}"
                f"{' chosen-deal' if info.deal_chosen else ''}: {names}"
            )

    async def create(
        self,
        args: list[str],
        *,
        rated: bool = False,
        game_number: str | None = None,
        invite_code: str | None = None,
    ) -> None:
        """`create GAME [SEATS [SECONDS]]`; anything else is refused with the usage (a typo
        must not become a race with other settings that others can join). `invite_code`
        (`--invite` at the start) makes the race private."""
        if not args or args[0] not in GAME_IDS or len(args) > 3:
            wrong = ""
            if args and args[0] not in GAME_IDS:
                wrong = f": no game {args[0]!r}"
            elif len(args) > 3:
                wrong = f": too many words ({' '.join(args[3:])!r})"
            self.say(f"{CREATE_USAGE}{wrong}; games: {', '.join(GAME_IDS)}")
            return
        bad = next((a for a in args[1:] if not (a.isascii() and a.isdigit())), None)
        if bad is not None:
            self.say(f"{CREATE_USAGE}: SEATS and SECONDS are positive whole numbers, not {bad!r}")
            return
        seats = int(args[1]) if len(args) > 1 else 2
        limit = int(args[2]) if len(args) > 2 else 600
        race_id = await self.session.create_race(
            args[0], seats, limit, rated=rated, game_number=game_number, invite_code=invite_code
        )
        self.own(race_id)
        kind = "rated" if rated else "casual" if game_number is None else f"deal {game_number}"
        private = "" if invite_code is None else f", private: invite code {invite_code}"
        self.say(f"race {race_id} created ({args[0]}, {seats} seats, {limit}s, {kind}{private})")

    def own(self, race_id: RaceId) -> None:
        """`race_id` was created by this program (not with `create`): the current race, left
        on `quit` while it is still open."""
        self._created.add(race_id)
        self.race_id = race_id

    async def join(self, args: list[str]) -> None:
        if not args:
            self.say("join RACE [INVITE]: the race id ('list' shows the races)")
            return
        race_id = RaceId(args[0])
        # No current race while joining: a resumed race's board prints once, by `say_back`.
        previous, self.race_id = self.race_id, None
        try:
            joined = await self.session.join_race(race_id, args[1] if len(args) > 1 else None)
        except BaseException:
            self.race_id = previous
            raise
        self.race_id = race_id
        if joined:
            race = self.session.state.races.get(race_id)
            chosen = " (the creator chose its deal)" if race and race.deal_chosen else ""
            self.say(f"joined race {race_id}{chosen}")
        elif self.still_in(race_id):
            self.say_back(race_id)
        else:  # out of it: not the current race
            self.race_id = previous

    async def start(self) -> None:
        """Confirmed by the countdown (printed as the race's update comes)."""
        assert self.race_id is not None
        await self.session.start_race(self.race_id)

    async def leave(self) -> None:
        race_id = self.race_id
        assert race_id is not None
        await self.session.leave_race(race_id)
        self.race_id = None
        self.say(f"left race {race_id}")

    async def resign(self) -> None:
        race = self.race
        if (
            race is not None
            and race.status in ("open", "countdown")
            and not await self.wait_start()
        ):
            return
        assert self.race_id is not None
        await self.session.resign(self.race_id)  # confirmed: `on_event` said so

    async def wait_start(self) -> bool:
        """Wait for the own board of the current race (the start); False if it cannot come
        (the race is over, the player left it, the server lost it or no longer has it, or
        `quit` was typed meanwhile)."""
        race_id = self.race_id
        if race_id is None:
            self.say(self.no_race)
            return False
        said = told = False
        while self.session.state.my_board(race_id) is None:
            race = self.session.state.races.get(race_id)
            if self.race_id is None:
                return False  # left (`leave` typed meanwhile said so)
            if race is not None and race.is_finished:
                self.say(f"race {race_id} is over ({race.status})")
                return False
            if race is not None and race.lost is not None:
                if not told:  # lost during the wait: `on_event` said so
                    self.say_lost(race)
                return False
            if race is not None and race.gone is not None:
                self.say(self.gone_text(race, race.gone))
                return False
            if race is not None and race.info is not None and self.session.me not in race.racers:
                self.say(f"race {race_id}: you no longer sit in it")
                return False
            if not said:
                more = f" ({self._open_text(race)})" if race and race.status == "open" else ""
                self.say(f"waiting for the start…{more}")
                said = True
            news = await self._race_news(
                race_id,
                lambda m: (
                    getattr(m, "race_id", None) == race_id
                    and (
                        isinstance(m, Board | RaceFinished | RaceUpdate | RaceSnapshot)
                        or is_lost(m)
                        or is_gone(m)
                    )
                ),
            )
            if not news:
                return False
            told = self._is_lost(race_id)
        return True

    def _is_lost(self, race_id: RaceId) -> bool:
        race = self.session.state.races.get(race_id)
        return race is not None and race.lost is not None

    def _open_text(self, race: RaceState) -> str:
        """Where an open race stands, and what starts it."""
        info = race.info
        if info is None:
            return "the race is open"
        mine = info.creator == self.session.me
        starts = "'start' starts it" if mine else "its creator starts it"
        where = f"race {race.race_id} is open, {len(info.racers)}/{info.seats} seated"
        if self.interactive:
            return f"{where}; {starts}, 'leave' leaves it, 'quit' quits"
        # A script's lines keep their order (but for `start`): a `leave` or `quit` after this
        # line runs only once the race has started.
        return f"{where}; {starts}; the script's next lines run once it starts (Ctrl-C quits)"

    async def _race_news(self, race_id: RaceId, until: Predicate) -> bool:
        """Wait for the next message about `race_id` that `until` accepts: True once it came.
        While the race is open (nothing sure starts it), lines typed meanwhile are looked at
        (`_typed_meanwhile`): False if one of them ends the wait (`quit`)."""
        news = self.session.expect(until)
        try:
            while not news.done():
                self._input.more.clear()  # before looking: a line typed meanwhile wakes the wait
                race = self.session.state.races.get(race_id)
                if race is not None and race.status == "open":
                    if not await self._typed_meanwhile(race_id):
                        return False
                    if news.done():
                        break
                await self._input.wait_more(news)
            news.result()  # a link closed for good raises here
            return True
        finally:
            if not news.done():
                news.cancel()
            elif not news.cancelled():
                news.exception()  # retrieved: a link closed meanwhile is not logged

    async def _typed_meanwhile(self, race_id: RaceId) -> bool:
        """Lines typed while a command waits for the start of the open race `race_id`
        (`_first_to_run_now`: at a terminal `start`, `leave`, `board`, `list` and `help` run
        now, `quit` or the end of the input (Ctrl-D) ends the wait (False) unless the start
        is on its way after all, and any
        other line keeps its place, after the start, and says so; in a script only `start`
        runs now). Lines after a `create` or a `join` (of another race) keep their
        place too. Returns once none is left to run now, or the race is no longer open."""
        while True:
            race = self.session.state.races.get(race_id)
            if race is None or race.status != "open" or self.race_id != race_id:
                return True
            typed = self._first_to_run_now()
            if typed is None:
                # At a terminal the end of the input (Ctrl-D) is a `quit` typed: a person ended it.
                if self.interactive and self._input.ended:
                    return not await self._quits_the_wait(race_id, None)
                return True
            if typed.text in QUIT_WORDS:
                return not await self._quits_the_wait(race_id, typed)
            self._input.waiting.remove(typed)
            await self.command(typed.text)

    async def _quits_the_wait(self, race_id: RaceId, typed: Typed | None) -> bool:
        """`quit` (`typed`; None: the end of a terminal's input) while a command waits for the
        start of `race_id`: True if it ends the wait, False if the start is on its way after
        all (a countdown: everything runs in order)."""
        if await self._start_on_its_way(race_id):
            return False
        if typed is not None:
            self._input.waiting.remove(typed)
        self._quit_asked = True
        return True

    def _first_to_run_now(self) -> Typed | None:
        """The first line typed that runs at once while a command waits for an open race's
        start (`_typed_meanwhile`); at a terminal, those before it that wait their turn say
        so, once. A script's lines keep their order, but for a `start` (which only its creator
        may give: waiting for it would wait for good)."""
        for typed in self._input.waiting:
            word = typed.text.split()[0].lower()
            if word == "start" or (
                self.interactive and (typed.text in QUIT_WORDS or word in TYPED_MEANWHILE)
            ):
                return typed
            if self.interactive and not typed.said:
                typed.said = True
                self.say(f"waiting for the start… ('{typed.text}' runs then)")
            if word in ("create", "join"):
                return None  # what follows is about another race
        return None

    async def _start_on_its_way(self, race_id: RaceId) -> bool:
        """Is the start of `race_id` on its way after all (a countdown)? Asked of the server
        (its snapshot), so that a join it has already seen (the race filled: the countdown)
        is known here before `quit` gives up waiting."""
        try:
            race = await self.session.resume(race_id)
        except LinkClosedError:
            raise
        except (RequestError, TimeoutError):
            return False
        return race.status != "open"

    async def wait_end(self) -> None:
        race = self.race
        if race is None:
            self.say(self.no_race)
            return
        race_id = race.race_id
        # None: left meanwhile; lost: the server lost the race (`on_event` said so).
        while not race.is_finished and race.lost is None and self.race_id is not None:
            if race.gone is not None:
                self.say(self.gone_text(race, race.gone))
                return
            # Not an error (awaited, it would count as reported and `on_event` would not say
            # it), but the one that says the race is lost (which `on_event` always says), or
            # the answer to the race's sync after a reconnect that finds it gone (said here).
            news = await self._race_news(
                race_id,
                lambda m: (
                    getattr(m, "race_id", None) == race_id
                    and (not isinstance(m, Error) or is_lost(m) or is_gone(m))
                ),
            )
            if not news:
                return

    def gone_text(self, race: RaceState, gone: str) -> str:
        """What is said of `race` once the server no longer has it (`gone`: its words)."""
        where = self.session.race_on_server(race.race_id)
        return (
            f"race {race.race_id}: the server no longer has it ({gone}); if it has finished, "
            f"'solrace replay {where}' shows it"
        )

    async def move(self, text: str) -> None:
        text = move_text(text)
        try:
            Move.parse(text)
        except EngineError as exc:
            self.say(f"{exc} (type 'help')")
            return
        if not await self.wait_start():
            return
        assert self.race_id is not None
        race = self.race
        if race is not None and race.lost is not None:
            self.say_lost(race)  # not sent: the server no longer has the race
            return
        if race is not None and race.gone is not None:
            self.say(self.gone_text(race, race.gone))  # not sent either
            return
        try:
            outcome = await self.session.move(self.race_id, text, self.MOVE_WAIT_S)
        except MoveTimeoutError as exc:
            self._late.add(exc.seq)
            self.say(
                f"no answer yet to {text}: it is sent again until the server answers, and the "
                "answer is shown when it comes ('board' shows where the race stands)"
            )
            return
        if outcome.ok:
            self.say(f"ok {outcome.move}")
            if race is None or race.unusable is None:
                self.print_board()  # (an ack ignored: the board its sync brings prints)
        else:
            self.say(f"refused {outcome.move}: {outcome.reason}")
