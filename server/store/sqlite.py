"""`sqlite:PATH`: the default, embedded, durable store (one file, WAL).

Two connections. Moves, the hot path, are written on the event loop's own thread: the moves
that arrive during one turn of the loop share one transaction and one commit (group commit),
a few microseconds each and no thread hand-off. Only a batch that finds the database locked
for longer than `LOOP_BUSY_TIMEOUT_S` (another process writing) goes to a thread of the
moves' own, which waits for the lock while the loop goes on; later moves wait behind it.
In WAL mode with synchronous=NORMAL a commit is a write to the log, not a disk flush; the log
is copied into the database (checkpointed) by the other connection, off the loop. Every other
call runs on that connection's worker thread, so a long read never holds the loop up. Each
write commits before the call returns: an acknowledged move survives a kill -9 (WAL with
synchronous=NORMAL is durable against process crashes; `durable=True` selects FULL, a flush
per commit, for power loss too).

Its parts are modules of their own: the moves' writer (`SqliteMoves`, sqlite_moves.py), the
ratings and tournaments (`SqliteCompetition`, sqlite_competition.py), the file lock and the
checks that say why a file cannot be opened (sqlite_files.py), the tables and their version
(sqlite_schema.py), and SQLite's errors as the store's (sqlite_errors.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from solrace.server.os_errors import describe_os_error
from solrace.server.periodic import run_every
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    MoveRecord,
    PlayerRecord,
    RaceRecord,
    RaceStatus,
)
from solrace.server.store.base import NameTakenError, StoreError, rating_falls_due
from solrace.server.store.sqlite_competition import SqliteCompetition
from solrace.server.store.sqlite_errors import store_error
from solrace.server.store.sqlite_files import (
    check_writable,
    disk_full_note,
    hold_lock,
    link_to_nothing,
    lock_path_for,
)
from solrace.server.store.sqlite_moves import SqliteMoves, Tally, worker
from solrace.server.store.sqlite_schema import (
    SCHEMA_VERSION,
    NewerSchemaError,
    check_intact,
    create_tables,
    schema_version,
)
from solrace.server.store.sqlite_tx import transaction
from solrace.tasks import cancel_and_wait

T = TypeVar("T")

log = logging.getLogger("solrace.server.store")

#: How long a write waits for another connection's write to finish (this store's other
#: connection, or another process on the file) before it fails with `StoreUnavailableError`.
BUSY_TIMEOUT_S = 5.0
CHECKPOINT_EVERY_S = 1.0
#: A log longer than this (pages; ~256 MiB of 4 KiB pages) after a checkpoint is started over:
#: under steady moves a checkpoint running beside the writer never copies the log to its end,
#: and a log not copied to its end is never started over (it grew by ~14 KB a move, 1 GB in
#: 20 s of a fast load). Shorter logs start over by themselves whenever the moves pause. The
#: higher it is, the rarer the pause of the moves (bench/load.py, 100 players, p99 of two
#: runs each: 21 ms at 64 MiB, 19 ms at 256 MiB, 17 ms with no restart at all).
LOG_RESTART_PAGES = 65_536
#: What a log started over is cut back to (`journal_size_limit`).
LOG_KEPT_BYTES = 64 * 2**20
#: Before holding the writer, copies beside it go on (at most this many more) until at most
#: `HELD_COPY_PAGES` are left: the held copy, which acks wait for, is then short.
CATCH_UP_COPIES = 4
HELD_COPY_PAGES = 1024


class SqliteStore(SqliteMoves, SqliteCompetition):
    """Every call reports a failure as a `StoreError`: `StoreUnavailableError` when the
    database is busy (another writer held it past `busy_timeout_s`), locked, full or failing,
    so a caller may retry; the store carries on once the cause is gone."""

    def __init__(
        self,
        path: str | Path,
        *,
        durable: bool = False,
        busy_timeout_s: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.durable = durable
        #: How long a write waits for another connection's lock (None: `BUSY_TIMEOUT_S`).
        self.busy_timeout_s = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
        #: Held while open: a second store on the file (another server) is refused.
        self.lock_path = lock_path_for(self.path)
        self._lock_fd: int | None = None
        self._executor: ThreadPoolExecutor | None = worker()
        self._db: sqlite3.Connection | None = None
        #: The moves' connection, used on the event loop's thread only.
        self._writer: sqlite3.Connection | None = None
        self._pending: list[tuple[MoveRecord, asyncio.Future[None]]] = []
        self._flush_due: asyncio.Handle | None = None
        #: Set while a checkpoint copies the log to its end: moves wait in `_pending`.
        self._writer_held = False
        #: A batch the writer found locked, written on `_locked_writes`: moves wait too.
        self._handed_over: asyncio.Task[None] | None = None
        #: The thread the writer waits for a lock on (made at the first such batch).
        self._locked_writes: ThreadPoolExecutor | None = None
        self._tallies: dict[str, dict[str, Tally]] = {}
        self._checkpointer: asyncio.Task[None] | None = None
        self.log_restart_pages = LOG_RESTART_PAGES
        self.log_kept_bytes = LOG_KEPT_BYTES

    @property
    def _thread(self) -> ThreadPoolExecutor:
        if self._executor is None:
            raise StoreError("store is not open")
        return self._executor

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on the worker thread's connection; its `sqlite3` errors as `StoreError`s."""

        def call() -> T:
            if self._db is None:
                raise StoreError("store is not open")
            try:
                return work(self._db)
            except sqlite3.Error as exc:
                raise store_error(exc, f"SQLite database {self.path}") from exc

        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    async def claim_secret(self, fingerprint: str) -> str:
        return fingerprint  # one node

    async def open(self) -> None:
        """Create or open the file (and its folder). `StoreLockedError` if another store
        (another server) has it open; `StoreError` saying why if it cannot be opened (its
        folder cannot be created or written, the file or its log cannot be written, the file
        is not a database, ...). A store that failed to open, or was closed, may be opened
        again."""
        if self._executor is None:
            self._executor = worker()
        try:
            await self._open()
        except BaseException as exc:
            await self.close()
            context = f"cannot open the SQLite database {self.path}"
            if isinstance(exc, sqlite3.Error):
                # SQLite says "disk I/O error" when its shared-memory file cannot grow
                full = disk_full_note(self.path.parent)
                raise store_error(exc, context, after=full) from exc
            if isinstance(exc, OSError):
                reason = link_to_nothing(self.path.parent) or describe_os_error(exc)
                raise StoreError(f"{context}: {reason}") from exc
            raise

    def _configure(self, db: sqlite3.Connection) -> None:
        """What each of the two connections is set to (SQLite keeps these per connection):
        how durable a commit is (`durable`), what a log started over is cut back to, and
        foreign keys checked."""
        db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        db.execute(f"PRAGMA journal_size_limit={self.log_kept_bytes}")
        db.execute("PRAGMA foreign_keys=ON")

    async def _open(self) -> None:
        def connect() -> sqlite3.Connection:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            check_writable(self.path)
            if self._lock_fd is None:
                # Beside the file itself: a second store through a link to it (the file's,
                # or a folder's above it) takes the same lock.
                real = self.path.resolve()
                if real != self.path.absolute():
                    self.lock_path = lock_path_for(real)
                self._lock_fd = hold_lock(self.lock_path)
            db = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=self.busy_timeout_s,
            )
            try:
                # Before anything is written (the log mode too): a newer solrace's file
                # is left as it is.
                found = schema_version(db)
                if not 0 <= found <= SCHEMA_VERSION:
                    raise NewerSchemaError(self.path, found)
                check_intact(db, self.path)
                db.execute("PRAGMA journal_mode=WAL")  # the file's, kept in it
                self._configure(db)
                if found < SCHEMA_VERSION:
                    create_tables(db, self.path)
            except BaseException:
                db.close()
                raise
            return db

        self._db = await asyncio.get_running_loop().run_in_executor(self._thread, connect)
        writer = sqlite3.connect(
            self.path,
            isolation_level=None,
            timeout=self._loop_wait_s,
            check_same_thread=False,  # a locked batch is written on `_locked_writes`
        )
        try:
            self._configure(writer)
            writer.execute("PRAGMA wal_autocheckpoint=0")  # the worker thread checkpoints
        except BaseException:
            writer.close()
            raise
        self._writer = writer
        # A failure of one checkpoint is logged and the next comes (a store error once per
        # outage): an error other than a store error ended the checkpoints, and the log grew.
        self._checkpointer = asyncio.create_task(
            run_every(
                CHECKPOINT_EVERY_S,
                self.checkpoint,
                log,
                "checkpointing the SQLite log",
                outages=(StoreError,),
            )
        )

    async def checkpoint(self) -> None:
        """Copy the log into the database, on the worker thread (PASSIVE: it never waits for
        the moves' writer). If the log is longer than `log_restart_pages`, copy what was
        written meanwhile, then the rest with the writer held (moves wait, the loop runs on):
        copied to its end, the log starts over at the next write and is cut back to
        `log_kept_bytes`."""

        def passive(db: sqlite3.Connection) -> tuple[int, int]:
            _, pages, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return int(pages), int(copied)

        pages, copied = await self._run(passive)
        if pages <= self.log_restart_pages:
            return
        for _ in range(CATCH_UP_COPIES):  # what was written during the last copy
            if pages - copied <= HELD_COPY_PAGES:
                break
            pages, copied = await self._run(passive)
        self._writer_held = True
        try:
            await self._run(passive)  # the rest, with nothing written meanwhile
        finally:
            self._writer_held = False
            self._flush_soon()

    async def close(self) -> None:
        if self._checkpointer is not None:
            await cancel_and_wait([self._checkpointer])
            self._checkpointer = None
        # Moves already accepted for storage are committed first.
        while self._handed_over is not None or self._pending:
            if self._handed_over is not None:
                await asyncio.shield(self._handed_over)
            else:
                self._flush_moves()
        if self._locked_writes is not None:
            self._locked_writes.shutdown(wait=True)
            self._locked_writes = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._db is not None:
            db = self._db

            def shut() -> None:
                try:
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:  # what is committed is in the log all the same
                    log.warning("final checkpoint of %s failed: %s", self.path, exc)
                finally:
                    db.close()

            await asyncio.get_running_loop().run_in_executor(self._thread, shut)
            self._db = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        # What it knew of the racers holds while it holds the lock: read again if reopened.
        self._tallies.clear()
        if self._lock_fd is not None:  # last: the file is checkpointed and closed by now
            os.close(self._lock_fd)
            self._lock_fd = None

    async def create_player(self, player_id: PlayerId, name: str, now_ms: int) -> PlayerRecord:
        def insert(db: sqlite3.Connection) -> None:
            try:
                db.execute(
                    "INSERT INTO player_names (name_key, player_id) VALUES (?, ?)",
                    (name.casefold(), player_id),
                )
                db.execute(
                    "INSERT INTO players (player_id, name, created_at_ms) VALUES (?, ?, ?)",
                    (player_id, name, now_ms),
                )
            except sqlite3.IntegrityError:
                raise NameTakenError(name) from None

        await self._run(lambda db: transaction(db, lambda: insert(db)))
        return PlayerRecord(player_id=player_id, name=name, created_at_ms=now_ms)

    async def get_player(self, player_id: PlayerId) -> PlayerRecord | None:
        def select(db: sqlite3.Connection) -> tuple[str, str, int] | None:
            row: tuple[str, str, int] | None = db.execute(
                "SELECT player_id, name, created_at_ms FROM players WHERE player_id = ?",
                (player_id,),
            ).fetchone()
            return row

        row = await self._run(select)
        if row is None:
            return None
        return PlayerRecord(player_id=PlayerId(row[0]), name=row[1], created_at_ms=row[2])

    async def get_player_by_name(self, name: str) -> PlayerRecord | None:
        def select(db: sqlite3.Connection) -> tuple[str, str, int] | None:
            row: tuple[str, str, int] | None = db.execute(
                "SELECT players.player_id, players.name, players.created_at_ms"
                " FROM player_names JOIN players USING (player_id) WHERE name_key = ?",
                (name.casefold(),),
            ).fetchone()
            return row

        row = await self._run(select)
        if row is None:
            return None
        return PlayerRecord(player_id=PlayerId(row[0]), name=row[1], created_at_ms=row[2])

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        text = race.model_dump_json()
        due = rating_falls_due(race, expected)

        def compare_and_set(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "SELECT record FROM races WHERE race_id = ?", (race.race_id,)
            ).fetchone()
            stored = None if row is None else RaceRecord.model_validate_json(row[0])
            if stored != expected:
                return False
            db.execute(
                "INSERT INTO races (race_id, status, record) VALUES (?, ?, ?) "
                "ON CONFLICT (race_id) DO UPDATE SET status = excluded.status, "
                "record = excluded.record",
                (race.race_id, race.status.value, text),
            )
            if due:
                db.execute("INSERT OR IGNORE INTO rating_due (race_id) VALUES (?)", (race.race_id,))
            return True

        stored = await self._run(lambda db: transaction(db, lambda: compare_and_set(db)))
        if stored and race.status not in LIVE_STATUSES:  # over: it takes no more moves
            self.forget_race(race.race_id)
        return stored

    async def get_race(self, race_id: RaceId) -> RaceRecord | None:
        def select(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT record FROM races WHERE race_id = ?", (race_id,)).fetchone()
            return None if row is None else str(row[0])

        text = await self._run(select)
        return None if text is None else RaceRecord.model_validate_json(text)

    async def list_races(self, statuses: Sequence[RaceStatus]) -> list[RaceRecord]:
        wanted = [s.value for s in statuses]

        def select(db: sqlite3.Connection) -> list[str]:
            marks = ",".join("?" for _ in wanted)
            rows = db.execute(
                f"SELECT record FROM races WHERE status IN ({marks}) ORDER BY rowid", wanted
            ).fetchall()
            return [str(row[0]) for row in rows]

        return [RaceRecord.model_validate_json(text) for text in await self._run(select)]

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        def select(db: sqlite3.Connection) -> list[tuple[str, str, int, int, str, int]]:
            rows: list[tuple[str, str, int, int, str, int]] = db.execute(
                "SELECT race_id, player_id, ply, seq, move, at_ms FROM moves "
                "WHERE race_id = ? ORDER BY player_id, ply",
                (race_id,),
            ).fetchall()
            return rows

        return [
            MoveRecord(
                race_id=RaceId(r[0]),
                player_id=PlayerId(r[1]),
                ply=r[2],
                seq=r[3],
                move=r[4],
                at_ms=r[5],
            )
            for r in await self._run(select)
        ]


__all__ = [
    "BUSY_TIMEOUT_S",
    "CATCH_UP_COPIES",
    "CHECKPOINT_EVERY_S",
    "HELD_COPY_PAGES",
    "LOG_KEPT_BYTES",
    "LOG_RESTART_PAGES",
    "SqliteStore",
]
