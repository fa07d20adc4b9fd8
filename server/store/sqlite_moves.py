"""The `sqlite:` store's moves' writer (`SqliteMoves`, mixed into `SqliteStore`): group
commit on the event loop's own thread.

Moves, the hot path, are written on the event loop's thread, on a connection of their own:
the moves that arrive during one turn of the loop share one transaction and one commit
(group commit), a few microseconds each and no thread hand-off. Only a batch that finds the
database locked for longer than `LOOP_BUSY_TIMEOUT_S` (another process writing) goes to a
thread of the moves' own, which waits for the lock while the loop goes on; later moves wait
behind it. Each move of a batch gets its own answer: stored, or refused with nothing stored
for it (a race not stored, a ply not the player's next, a seq already stored).

Those checks are made here, in memory, on each racer's `Tally` (its next ply and the seqs it
used), read from the table the first time the racer moves: the store is the only writer of its
file's moves (it holds the file's lock while open, `sqlite_files.py`), and `moves` is its
primary key's B-tree alone (`sqlite_schema.MOVES`), whose key still refuses a ply stored twice.
The checks in the insert (a subquery for the ply, a foreign key, a unique index on the seq) made
a move's insert and commit about twice as dear (`bench/moves_table.py`). A racer's tally is
forgotten when its race is stored finished or cancelled (`forget_race`), and every tally when the
store closes.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from solrace.server.protocol.records import MoveRecord
from solrace.server.store.base import PlyConflictError, StoreError, UnknownRaceError
from solrace.server.store.sqlite_errors import primary_code, store_error
from solrace.server.store.sqlite_tx import transaction

log = logging.getLogger("solrace.server.store")

#: How long the moves' writer, on the event loop's thread, waits for a write lock before it
#: hands its batch to a thread of its own, which waits `busy_timeout_s`: a lock held outside the
#: server (an operator's `sqlite3` session) must not stall every connection with the loop.
LOOP_BUSY_TIMEOUT_S = 0.02


_INSERT = "INSERT INTO moves (race_id, player_id, ply, seq, move, at_ms) VALUES (?, ?, ?, ?, ?, ?)"

#: A move's row, in the table's column order.
Row = tuple[str, str, int, int, str, int]


def worker(name: str = "solrace-sqlite") -> ThreadPoolExecutor:
    """The thread every call but the moves' writes runs on (or, named otherwise, the one the
    moves' writer waits for a lock on)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)


@dataclass(slots=True)
class Tally:
    """What the store holds of one racer's stored moves: the ply its next move must have and
    the seqs its moves used."""

    next_ply: int
    seqs: set[int] = field(default_factory=set)


def _read_tally(db: sqlite3.Connection, race_id: str, player_id: str) -> Tally | None:
    """A racer's tally from the table; None if its race is not stored."""
    if db.execute("SELECT 1 FROM races WHERE race_id = ?", (race_id,)).fetchone() is None:
        return None
    rows = db.execute(
        "SELECT ply, seq FROM moves WHERE race_id = ? AND player_id = ?", (race_id, player_id)
    ).fetchall()
    return Tally(next_ply=max((ply for ply, _ in rows), default=-1) + 1, seqs={s for _, s in rows})


def _row(move: MoveRecord) -> Row:
    """The move's row (numbered parameters: a tuple is cheaper than a map)."""
    return (move.race_id, move.player_id, move.ply, move.seq, move.move, move.at_ms)


def _insert(db: sqlite3.Connection, rows: list[Row]) -> None:
    """Insert the rows in one transaction, committed before this returns (the table's key
    refuses a ply stored already: `sqlite3.IntegrityError`, nothing stored)."""
    transaction(db, lambda: db.executemany(_INSERT, rows))


def _is_busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the write lock (SQLite gave up waiting for it)."""
    return primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


Pending = list[tuple[MoveRecord, asyncio.Future[None]]]


def _settle(batch: Pending, outcomes: list[StoreError | None] | StoreError) -> None:
    """Answer each move of a batch: stored (None), refused, or the batch's one error."""
    for i, (_, future) in enumerate(batch):
        if future.done():  # the caller went away; the move is stored all the same
            continue
        outcome = outcomes if isinstance(outcomes, StoreError) else outcomes[i]
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(outcome)


class SqliteMoves:
    """The moves' writer of `SqliteStore`: `append_move`, the group commit behind it and the
    racers' tallies it checks moves on. Its connection and state are the store's (made by its
    `__init__` and `open`); the store's `checkpoint` holds the writer, and its `close` commits
    the moves still waiting."""

    path: Path
    busy_timeout_s: float
    _writer: sqlite3.Connection | None
    _pending: Pending
    _flush_due: asyncio.Handle | None
    _writer_held: bool
    _handed_over: asyncio.Task[None] | None
    _locked_writes: ThreadPoolExecutor | None
    #: Per race (not over) and player, of the racers that moved since the store opened.
    _tallies: dict[str, dict[str, Tally]]

    async def append_move(self, move: MoveRecord) -> None:
        """Store one move, committed before this returns.

        The moves appended during one turn of the event loop share one transaction and its
        one commit, made right after that turn on the loop's thread (group commit): each gets
        its own answer, and none returns before the commit that holds it. A batch that finds
        the database locked waits for it off the loop (`_hand_over`).
        """
        if self._writer is None:
            raise StoreError("store is not open")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((move, future))
        self._flush_soon()
        await future

    @property
    def _loop_wait_s(self) -> float:
        """How long the writer waits for a lock on the loop's thread."""
        return min(LOOP_BUSY_TIMEOUT_S, self.busy_timeout_s)

    @property
    def moves_wait_for_lock(self) -> bool:
        """A batch of moves the writer found locked waits for the lock off the loop."""
        return self._handed_over is not None

    def _flush_soon(self) -> None:
        """Flush the waiting moves after the loop's current turn (the moves of every
        connection read meanwhile share the commit), unless a flush is due already or the
        writer is held (`checkpoint`, `_hand_over`: they call this once done)."""
        if (
            self._pending
            and self._flush_due is None
            and not self._writer_held
            and self._handed_over is None
        ):
            self._flush_due = asyncio.get_running_loop().call_soon(self._flush_moves)

    def _flush_moves(self) -> None:
        self._flush_due = None
        if self._writer_held or self._handed_over is not None:
            return  # flushed once the writer is free
        batch, self._pending = self._pending, []
        if not batch:
            return
        writer = self._writer
        assert writer is not None
        moves = [move for move, _ in batch]
        outcomes: list[StoreError | None] = []
        try:
            for move in moves:
                outcomes.append(self._take(writer, move))
        except sqlite3.Error as exc:  # a racer's tally could not be read: nothing stored
            self._not_stored(batch, outcomes, exc)
            return
        rows = [_row(m) for m, outcome in zip(moves, outcomes, strict=True) if outcome is None]
        if rows:
            try:
                _insert(writer, rows)
            except sqlite3.Error as exc:
                if _is_busy(exc):  # locked past `LOOP_BUSY_TIMEOUT_S`: wait off the loop
                    self._handed_over = asyncio.create_task(self._hand_over(batch, outcomes, rows))
                    return
                self._not_stored(batch, outcomes, exc)
                return
        _settle(batch, outcomes)

    def _take(self, db: sqlite3.Connection, move: MoveRecord) -> StoreError | None:
        """Check `move` on its racer's tally: if it is the racer's next one, count its ply and
        seq in (None; `_give_back` takes them out if the batch is not stored), else why not."""
        racers = self._tallies.get(move.race_id)
        tally = None if racers is None else racers.get(move.player_id)
        if tally is None:
            tally = _read_tally(db, move.race_id, move.player_id)
            if tally is None:
                return UnknownRaceError(move.race_id)
            self._tallies.setdefault(move.race_id, {})[move.player_id] = tally
        if move.ply != tally.next_ply:
            return PlyConflictError(f"expected ply {tally.next_ply}, got {move.ply}")
        if move.seq in tally.seqs:
            return PlyConflictError(f"seq {move.seq} is already stored")
        tally.next_ply += 1
        tally.seqs.add(move.seq)
        return None

    def _give_back(self, moves: list[MoveRecord], outcomes: list[StoreError | None]) -> None:
        """Take the moves `_take` counted in (their outcome None; `outcomes` stops short where
        a tally could not be read) out of their tallies again: the batch was not stored."""
        for move, outcome in reversed(list(zip(moves, outcomes, strict=False))):
            tally = self._tallies.get(move.race_id, {}).get(move.player_id)
            if outcome is None and tally is not None:  # (None: its race is over since)
                tally.next_ply = move.ply
                tally.seqs.discard(move.seq)

    def _not_stored(
        self, batch: Pending, outcomes: list[StoreError | None], exc: sqlite3.Error
    ) -> None:
        """The batch failed (`exc`) where `outcomes` stop, or as it was stored: nothing of it
        is stored. Each move gets its refusal, if `_take` refused it, else the error. A ply the
        table's key refused means a tally behind the table (a bug; the lock keeps other writers
        out): the batch's racers are read again at their next move."""
        moves = [move for move, _ in batch]
        self._give_back(moves, outcomes)
        if isinstance(exc, sqlite3.IntegrityError):
            log.error("moves not stored in %s, refused by the table: %s", self.path, exc)
            for move in moves:
                self._tallies.get(move.race_id, {}).pop(move.player_id, None)
        error = store_error(exc, f"moves not stored in {self.path}")
        left = len(moves) - len(outcomes)
        _settle(batch, [error if o is None else o for o in [*outcomes, *[None] * left]])

    async def _hand_over(
        self, batch: Pending, outcomes: list[StoreError | None], rows: list[Row]
    ) -> None:
        """Write a batch the writer found locked on a thread of its own (`_locked_writes`:
        not the worker, where it would wait for every read and checkpoint queued there),
        which waits up to `busy_timeout_s` for the lock; the moves that come meanwhile wait,
        in order. The loop does not use the writer meanwhile."""
        writer = self._writer
        assert writer is not None

        def write() -> None:
            writer.execute(f"PRAGMA busy_timeout={round(self.busy_timeout_s * 1000)}")
            try:
                _insert(writer, rows)
            finally:  # back to the loop's wait (as the writer was opened)
                writer.execute(f"PRAGMA busy_timeout={round(self._loop_wait_s * 1000)}")

        if self._locked_writes is None:
            self._locked_writes = worker("solrace-sqlite-moves")
        try:
            await asyncio.get_running_loop().run_in_executor(self._locked_writes, write)
        except sqlite3.Error as exc:
            self._not_stored(batch, outcomes, exc)
        else:
            _settle(batch, outcomes)
        finally:
            self._handed_over = None
            self._flush_soon()

    def forget_race(self, race_id: str) -> None:
        """The race is over (stored finished or cancelled): its racers' tallies are dropped
        (read again from the table should a move of it come all the same)."""
        self._tallies.pop(race_id, None)


__all__ = ["LOOP_BUSY_TIMEOUT_S", "SqliteMoves", "Tally", "worker"]
