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

The mode is a class in layers, each in its own module: `PlainEvents` (plain_events.py) keeps
the state and says the server's messages as they arrive, `PlainWaiting` (plain_waiting.py)
waits for the current race's start or end and looks at the lines typed meanwhile, and
`PlainMode` (here) runs the program and its commands. The command words and the help are in
plain_words.py, the lines that say what the program's end does to each race in leaving.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from solrace.engine import GAME_IDS, EngineError, Move
from solrace.server.protocol.ids import RaceId
from solrace.tasks import cancel_and_wait

from .boards import rules_board
from .leaving import leaving_line
from .plain_events import closed_text
from .plain_waiting import PlainWaiting
from .plain_words import (
    CREATE_USAGE,
    HELP,
    QUIT_WORDS,
    RACE_COMMANDS,
    move_text,
    unreadable_move_text,
)
from .session import LinkClosedError, MoveTimeoutError, RequestError
from .state import NOT_SEATED, RaceState
from .stopping import Stopped, run_until_stopped

#: Exit code when the link closed for good (4003, 4001...).
EXIT_CLOSED: Final = 1


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a task's failure as seen: its awaiters (if any are left) report it."""
    if not task.cancelled():
        task.exception()


class PlainMode(PlainWaiting):
    #: Seconds a typed move waits for its answer before the prompt comes back (the move is
    #: still sent again until answered; the late answer is printed when it comes).
    MOVE_WAIT_S = 30.0

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
        bad = next((a for a in args[1:] if not (a.isascii() and a.isdigit() and int(a))), None)
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

    async def move(self, text: str) -> None:
        text = move_text(text)
        try:
            Move.parse(text)
        except EngineError as exc:
            self.say(unreadable_move_text(text, str(exc)))
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


__all__ = ["EXIT_CLOSED", "PlainMode"]
