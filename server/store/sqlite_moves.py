"""The `sqlite:` store's moves' writer (`SqliteMoves`, mixed into `SqliteStore`): group
commit on the event loop's own thread.

Moves, the hot path, are written on the event loop's thread, on a connection of their own:
the moves that arrive during one turn of the loop share one transaction and one commit
(group commit), a few microseconds each and no thread hand-off. Only a batch that finds the
database locked for longer than `LOOP_BUSY_TIMEOUT_S` (another process writing) goes to a
thread of the moves' own, which waits for the lock while the loop goes on; later moves wait
behind it. Each move of a batch gets its own answer: stored, or refused with nothing stored
for it (a race not stored, a ply not the player's next, a seq already stored).
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from solrace.server.protocol.records import MoveRecord
from solrace.server.store.base import PlyConflictError, StoreError, UnknownRaceError
from solrace.server.store.sqlite_errors import primary_code, store_error
from solrace.server.store.sqlite_tx import transaction

#: How long the moves' writer, on the event loop's thread, waits for a write lock before it
#: hands its batch to a thread of its own, which waits `busy_timeout_s`: a lock held outside the
#: server (an operator's `sqlite3` session) must not stall every connection with the loop.
LOOP_BUSY_TIMEOUT_S = 0.02


# The usual case in one statement (it runs on the event loop's thread: each Python call
# counts): stored only if `ply` is the player's next one; a race not stored fails the foreign
# key (the writer enforces it) and a seq already stored the UNIQUE constraint. Nothing
# inserted: the checks one by one say why. (The race was also looked up here, which the
# foreign key already does: ~26 -> ~22 us a move, 20-move batches over 500 races.)
_INSERT_NEXT_MOVE = """
INSERT INTO moves (race_id, player_id, ply, seq, move, at_ms)
SELECT ?1, ?2, ?3, ?4, ?5, ?6
WHERE (SELECT COALESCE(MAX(ply) + 1, 0) FROM moves WHERE race_id = ?1 AND player_id = ?2) = ?3
"""


def worker(name: str = "solrace-sqlite") -> ThreadPoolExecutor:
    """The thread every call but the moves' writes runs on (or, named otherwise, the one the
    moves' writer waits for a lock on)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)


def _move_params(move: MoveRecord) -> tuple[str, str, int, int, str, int]:
    """`_INSERT_NEXT_MOVE`'s parameters for `move` (numbered: a tuple is cheaper than a map)."""
    return (move.race_id, move.player_id, move.ply, move.seq, move.move, move.at_ms)


def _insert_move(db: sqlite3.Connection, move: MoveRecord) -> StoreError | None:
    """Insert one move inside the caller's transaction; a refusal is returned, not raised."""
    try:
        inserted = db.execute(_INSERT_NEXT_MOVE, _move_params(move)).rowcount
    except sqlite3.IntegrityError:
        inserted = 0
    if inserted == 1:
        return None
    return _why_not_inserted(db, move)


def _why_not_inserted(db: sqlite3.Connection, move: MoveRecord) -> StoreError:
    """The refusal of a move `_INSERT_NEXT_MOVE` did not store (nothing is written here)."""
    if db.execute("SELECT 1 FROM races WHERE race_id = ?", (move.race_id,)).fetchone() is None:
        return UnknownRaceError(move.race_id)
    (last,) = db.execute(
        "SELECT MAX(ply) FROM moves WHERE race_id = ? AND player_id = ?",
        (move.race_id, move.player_id),
    ).fetchone()
    expected = 0 if last is None else last + 1
    if expected != move.ply:
        return PlyConflictError(f"expected ply {expected}, got {move.ply}")
    return PlyConflictError(f"seq {move.seq} is already stored")


class _BatchRefused(Exception):
    """A move of the batch was not stored: roll the batch back and go move by move."""


def _insert_moves(db: sqlite3.Connection, moves: list[MoveRecord]) -> list[StoreError | None]:
    """One transaction for a batch of moves; each is checked on its own (a refusal stores
    nothing for that move and does not affect the others). The usual batch, every move
    accepted, is one statement run over all of them; otherwise move by move, to say why."""

    def insert_all() -> None:
        try:
            stored = db.executemany(_INSERT_NEXT_MOVE, [_move_params(m) for m in moves]).rowcount
        except sqlite3.IntegrityError:
            raise _BatchRefused from None
        if stored != len(moves):
            raise _BatchRefused

    try:
        transaction(db, insert_all)
    except _BatchRefused:
        return transaction(db, lambda: [_insert_move(db, move) for move in moves])
    return [None] * len(moves)


def _is_busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the write lock (SQLite gave up waiting for it)."""
    return primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _settle(
    batch: list[tuple[MoveRecord, asyncio.Future[None]]],
    outcomes: list[StoreError | None] | StoreError,
) -> None:
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
    """The moves' writer of `SqliteStore`: `append_move` and the group commit behind it. Its
    connection and state are the store's (made by its `__init__` and `open`); the store's
    `checkpoint` holds the writer, and its `close` commits the moves still waiting."""

    path: Path
    busy_timeout_s: float
    _writer: sqlite3.Connection | None
    _pending: list[tuple[MoveRecord, asyncio.Future[None]]]
    _flush_due: asyncio.Handle | None
    _writer_held: bool
    _handed_over: asyncio.Task[None] | None
    _locked_writes: ThreadPoolExecutor | None

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
        assert self._writer is not None
        try:
            outcomes = _insert_moves(self._writer, [move for move, _ in batch])
        except sqlite3.Error as exc:
            if _is_busy(exc):  # locked past `LOOP_BUSY_TIMEOUT_S`: wait off the loop
                self._handed_over = asyncio.create_task(self._hand_over(batch))
                return
            _settle(batch, store_error(exc, f"moves not stored in {self.path}"))
            return
        _settle(batch, outcomes)

    async def _hand_over(self, batch: list[tuple[MoveRecord, asyncio.Future[None]]]) -> None:
        """Write a batch the writer found locked on a thread of its own (`_locked_writes`:
        not the worker, where it would wait for every read and checkpoint queued there),
        which waits up to `busy_timeout_s` for the lock; the moves that come meanwhile wait,
        in order. The loop does not use the writer meanwhile."""
        writer = self._writer
        assert writer is not None
        moves = [move for move, _ in batch]

        def write() -> list[StoreError | None]:
            writer.execute(f"PRAGMA busy_timeout={round(self.busy_timeout_s * 1000)}")
            try:
                return _insert_moves(writer, moves)
            except sqlite3.Error as exc:
                raise store_error(exc, f"moves not stored in {self.path}") from exc
            finally:  # back to the loop's wait (as the writer was opened)
                writer.execute(f"PRAGMA busy_timeout={round(self._loop_wait_s * 1000)}")

        if self._locked_writes is None:
            self._locked_writes = worker("solrace-sqlite-moves")
        try:
            outcomes = await asyncio.get_running_loop().run_in_executor(self._locked_writes, write)
        except StoreError as exc:
            _settle(batch, exc)
        else:
            _settle(batch, outcomes)
        finally:
            self._handed_over = None
            self._flush_soon()


__all__ = ["LOOP_BUSY_TIMEOUT_S", "SqliteMoves", "worker"]
