"""`solrace play --plain`: a line mode for scripts, screen readers and dumb terminals.

The board prints as ASCII text; each input line is one command or one move in the notation
(`deal`, `w-t3`, `t2-t5:3`). Every command finishes before the next line is read (a move waits
for its ack, a move typed before the start waits for the start), so a script is just lines.
Events (players joining, the start, opponents' progress, the result) print as they arrive.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from typing import TextIO

from solrace.engine import GAME_IDS, EngineError, Move
from solrace.server.protocol.messages import (
    Board,
    Error,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
)

from .boards import rules_board
from .connection import Incoming, LinkStatus, StatusChange
from .held_deals import deal_line
from .render import render_plain
from .session import RequestError, Session
from .state import RaceState

HELP = """\
commands:
  MOVE                a move: deal, w-t3, t6-f0, t2-t5:3 (piles s w f0.. t0.. r0..)
  board               print the board again
  moves               list the legal moves
  list                list open and running races
  create GAME [SEATS [SECONDS]]   create a race (games: {games})
  join RACE [INVITE]  sit in a race
  start               start the race you created
  resign              give up the current race
  wait                wait until the current race ends, then print the result
  leave               leave a race that has not started
  help                this text
  quit                leave the program (also end of input)"""


async def stdin_lines() -> AsyncIterator[str]:
    """Lines of standard input without blocking the event loop.

    A daemon thread reads them: a program that ends on its own (a tournament that finishes)
    must not wait for one more line of input before it can exit."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def read() -> None:
        while True:
            line = sys.stdin.readline()
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
            except RuntimeError:  # the loop is closed: the program is ending
                return
            if not line:
                return

    threading.Thread(target=read, name="solrace-stdin", daemon=True).start()
    while True:
        got = await queue.get()
        if got is None:
            return
        yield got


class PlainMode:
    def __init__(self, session: Session, out: TextIO, *, width: int = 80) -> None:
        self.session = session
        self.out = out
        self.width = width
        self.race_id: str | None = None
        self._seen: dict[str, tuple[int, str]] = {}
        self._status: dict[str, str] = {}
        session.listeners.append(self.on_event)

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    @property
    def race(self) -> RaceState | None:
        return None if self.race_id is None else self.session.state.races.get(self.race_id)

    def name_of(self, race: RaceState, player_id: str) -> str:
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
                self.say(f"reconnecting… ({incoming.detail})")
            elif incoming.status is LinkStatus.CONNECTED:
                self.say("reconnected")
            else:
                self.say(f"connection closed: {incoming.detail}")
            return
        race_id = getattr(incoming, "race_id", None)
        if race_id is None or race_id != self.race_id:
            return
        race = self.session.state.races[race_id]
        if isinstance(incoming, RaceUpdate | RaceSnapshot):
            self._on_update(race)
        elif isinstance(incoming, RaceStarted):
            limit = (incoming.ends_at_ms - incoming.started_at_ms) // 1000
            self.say(f"race started ({limit}s); commitment {incoming.commitment}")
        elif isinstance(incoming, Board) and incoming.player_id == self.session.me:
            self.print_board()
        elif isinstance(incoming, Progress) and incoming.progress.player_id != self.session.me:
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
        elif isinstance(incoming, Error):
            self.say(f"error: {incoming.message} ({incoming.code})")

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
            self.say(
                f"{entry.rank}. {entry.name} {entry.state} {entry.on_foundations}/{entry.total} "
                f"{entry.elapsed_ms / 1000:.1f}s"
            )
        if race.commitment_ok is not None:
            self.say(deal_line(race))
        elif race.deal_held:
            self.say("deal held until the tournament round ends (checked then)")

    # --- commands ------------------------------------------------------------------------

    async def run(self, lines: AsyncIterator[str]) -> int:
        async for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line in ("quit", "exit", "q"):
                break
            try:
                await self.command(line)
            except RequestError as exc:
                self.say(f"refused: {exc.message} ({exc.code})")
            except TimeoutError:
                self.say("no answer from the server")
        return 0

    async def command(self, line: str) -> None:
        word, *args = line.split()
        word = word.lower()
        if word == "help":
            self.say(HELP.format(games=", ".join(GAME_IDS)))
        elif word == "board":
            self.print_board()
        elif word == "moves":
            self.list_moves()
        elif word == "list":
            await self.list_races()
        elif word == "create":
            await self.create(args)
        elif word == "join" and args:
            await self.session.join_race(args[0], args[1] if len(args) > 1 else None)
            self.race_id = args[0]
            self.say(f"joined race {args[0]}")
        elif word == "start" and self.race_id:
            await self.session.start_race(self.race_id)
        elif word == "leave" and self.race_id:
            await self.session.leave_race(self.race_id)
            self.say(f"left race {self.race_id}")
        elif word == "resign" and self.race_id:
            await self.session.resign(self.race_id)
            self.say("resigned")
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
                f"{' private' if info.private else ''}: {names}"
            )

    async def create(self, args: list[str]) -> None:
        if not args or args[0] not in GAME_IDS:
            self.say(f"create GAME [SEATS [SECONDS]]; games: {', '.join(GAME_IDS)}")
            return
        seats = int(args[1]) if len(args) > 1 and args[1].isdigit() else 2
        limit = int(args[2]) if len(args) > 2 and args[2].isdigit() else 600
        race_id = await self.session.create_race(args[0], seats, limit)
        self.race_id = race_id
        self.say(f"race {race_id} created ({args[0]}, {seats} seats, {limit}s)")

    async def wait_start(self) -> bool:
        """Wait for the own board of the current race (the start); False if it cannot come."""
        race_id = self.race_id
        if race_id is None:
            self.say("no race: create or join one first")
            return False
        while self.session.state.my_board(race_id) is None:
            race = self.session.state.races.get(race_id)
            if race is not None and race.is_finished:
                return False
            self.say("waiting for the start…")
            await self.session.wait_for(
                lambda m: (
                    getattr(m, "race_id", None) == race_id
                    and isinstance(m, Board | RaceFinished | RaceUpdate)
                ),
                timeout_s=24 * 3600,
            )
        return True

    async def wait_end(self) -> None:
        race = self.race
        if race is None:
            self.say("no race")
            return
        race_id = race.race_id
        while not race.is_finished:
            await self.session.wait_for(
                lambda m: getattr(m, "race_id", None) == race_id, timeout_s=24 * 3600
            )

    async def move(self, text: str) -> None:
        try:
            Move.parse(text)
        except EngineError as exc:
            self.say(f"{exc} (type 'help')")
            return
        if not await self.wait_start():
            return
        assert self.race_id is not None
        outcome = await self.session.move(self.race_id, text)
        if outcome.ok:
            self.say(f"ok {outcome.move}")
            self.print_board()
        else:
            self.say(f"refused {outcome.move}: {outcome.reason}")
