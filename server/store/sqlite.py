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

One server per file: `exclusive=True` (what `solrace serve` asks for) holds an exclusive
`flock` on the lock file beside the database (`solrace.sqlite3` -> `solrace.sqlite3.lock`) while the
store is open, so a second server on the same file refuses to start instead of recovering
(and timing out) the first one's races. The kernel drops the lock when the process ends,
kill -9 included; the file itself stays (it only holds the last holder's pid).

The database carries the version of its tables in `PRAGMA user_version` (`SCHEMA_VERSION`):
a new file is stamped with it; an older file is brought up to it in place, in one
transaction: a file of version 0 (made before the stamp existed) gets any table it lacks, a
file of version 1 its tournaments' `finished` and `settled` columns (filled from the stored
records) and their indexes; and a file of a higher version (a newer solrace's tables) is
refused at open, `NewerSchemaError`, before anything in it is changed. So is a damaged file
(`DamagedDatabaseError`: SQLite's quick check of its pages at open finds a problem).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from solrace.server.os_errors import describe_os_error
from solrace.server.periodic import run_every
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import MoveRecord, PlayerRecord, RaceRecord, RaceStatus
from solrace.server.store.base import (
    NameTakenError,
    PlyConflictError,
    StoreError,
    StoreUnavailableError,
    UnknownRaceError,
    rating_falls_due,
)
from solrace.server.store.sqlite_competition import (
    COMPETITION_SCHEMA,
    TOURNAMENT_INDEXES,
    SqliteCompetition,
    add_tournament_columns,
)
from solrace.server.store.sqlite_tx import transaction
from solrace.tasks import cancel_and_wait

T = TypeVar("T")

log = logging.getLogger("solrace.server.store")

#: How long a write waits for another connection's write to finish (this store's other
#: connection, or another process on the file) before it fails with `StoreUnavailableError`.
BUSY_TIMEOUT_S = 5.0
#: How long the moves' writer, on the event loop's thread, waits for a write lock before it
#: hands its batch to a thread of its own, which waits `busy_timeout_s`: a lock held outside the
#: server (an operator's `sqlite3` session) must not stall every connection with the loop.
LOOP_BUSY_TIMEOUT_S = 0.02
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

#: The version of the tables (`SCHEMA` and `COMPETITION_SCHEMA`) kept in the database's
#: `PRAGMA user_version`. A change to them that an older solrace could not use raises it
#: (2: the tournaments' `finished` and `settled` columns).
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    created_at_ms INTEGER NOT NULL
);
-- Names are owned case-blind beyond ASCII (COLLATE NOCASE folds ASCII only): the key is
-- Python's str.casefold() of the name, as in the other stores.
CREATE TABLE IF NOT EXISTS player_names (
    name_key TEXT PRIMARY KEY,
    player_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS races (
    race_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS races_status ON races (status);
CREATE TABLE IF NOT EXISTS moves (
    race_id TEXT NOT NULL REFERENCES races (race_id),
    player_id TEXT NOT NULL,
    ply INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    move TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (race_id, player_id, ply),
    UNIQUE (race_id, player_id, seq)
);
"""


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


class StoreLockedError(StoreError):
    """Another live process (another `solrace serve`) has this database open."""

    def __init__(self, lock_path: Path, holder_pid: int | None) -> None:
        self.lock_path = lock_path
        self.holder_pid = holder_pid
        holder = "another process" if holder_pid is None else f"process {holder_pid}"
        super().__init__(
            f"{lock_path} is held by {holder}: another solrace serve uses this database"
        )


class NewerSchemaError(StoreError):
    """The database's tables are of a later version than this solrace knows (its
    `user_version` is above `SCHEMA_VERSION`); nothing in it was changed."""

    def __init__(self, path: Path, found: int) -> None:
        self.path = path
        self.found = found
        super().__init__(
            f"the SQLite database {path} has schema version {found}, this version knows up to "
            f"{SCHEMA_VERSION}: written by a newer solrace, or damaged: start the version that "
            "wrote it, or restore a backup"
        )


class DamagedDatabaseError(StoreError):
    """SQLite's quick check of the database found a problem in it (a page damaged, a link
    between pages broken); nothing in it was changed."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"the SQLite database {path} is damaged ({problem}): restore a backup, or save "
            f"what is left of it (sqlite3 {path} .recover | sqlite3 NEW-FILE)"
        )


#: SQLite's primary result codes for a database that is there but cannot be used just now:
#: another connection held the lock past the busy timeout, the disk is full or failing. A
#: retry later may succeed, so they are `StoreUnavailableError`; any other is a `StoreError`.
_UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)


def store_error(exc: sqlite3.Error, context: str, after: str = "") -> StoreError:
    """The store's error for a `sqlite3` one (raise it `from exc`), `after` added to its
    message: `StoreUnavailableError` if the database is busy, locked, full or failing, else
    `StoreError`."""
    message = f"{context}: {exc}{after}"
    if _primary_code(exc) in _UNAVAILABLE_CODES:
        return StoreUnavailableError(message)
    return StoreError(message)


def _primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error; None for one Python's sqlite3 raises
    itself (a closed connection, ...)."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _worker(name: str = "solrace-sqlite") -> ThreadPoolExecutor:
    """The thread every call but the moves' writes runs on (or, named otherwise, the one the
    moves' writer waits for a lock on)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)


#: The files SQLite keeps beside a database in WAL mode: its name plus these.
LOG_FILES = ("-wal", "-shm")


def lock_path_for(database: Path) -> Path:
    """The lock file of a database: beside it, its name plus `.lock`
    (`data/solrace.sqlite3` -> `data/solrace.sqlite3.lock`): one per database file, whatever
    its suffix (`a.db` and `a.sqlite3` in one folder are two databases, two locks)."""
    return database.with_name(database.name + ".lock")


def _hold_lock(path: Path) -> int:
    """Take the exclusive lock on `path` (created if need be) without waiting, write our pid
    into it and return its descriptor: closing that, or the process ending, releases it.
    `StoreLockedError` if another open file description holds it (another process, or another
    store of this process)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(fd)
        os.close(fd)
        raise StoreLockedError(path, holder) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:  # the lock is what matters; the pid only helps the message
        log.warning("could not write the pid into %s: %s", path, exc)
    return fd


def _check_writable(database: Path) -> None:
    """`OSError` naming the database or the log file beside it (`-wal`, `-shm`, those that
    exist) if it cannot be written (read-only, immutable, on a read-only disk) or the database
    is a folder. SQLite opens a file it cannot write read-only without a word, and every write
    of the server (a name, a move, a checkpoint) would then fail. Asked of the system, not
    tried: opening and closing a file would release the locks SQLite holds on it in this
    process."""
    if database.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(database))
    for path in (database, *(database.with_name(database.name + end) for end in LOG_FILES)):
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, "it cannot be written", str(path))


def link_to_nothing(path: Path) -> str | None:
    """What is wrong when `path` or a folder above it is a symbolic link to nothing (a volume
    not mounted, a target moved): the link and its target, in words; None if none is."""
    for link in reversed((path, *path.parents)):
        if link.is_symlink() and not link.exists():
            return f"{link} is a link to {os.readlink(link)}, which does not exist"
    return None


def _read_pid(fd: int) -> int | None:
    """The pid the holder wrote into the lock file (None: not written yet, or unreadable)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


#: Free space under which a folder's disk is said to be full when SQLite fails in it.
FULL_DISK_BYTES = 2**20


def _disk_full_note(folder: Path) -> str:
    """ " (its disk is full: ...)" when the disk of `folder` has less than `FULL_DISK_BYTES`
    free for this process, else ""."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" (its disk is full: {free:,} bytes free in {folder})" if free < FULL_DISK_BYTES else ""


def _check_intact(db: sqlite3.Connection, path: Path) -> None:
    """`DamagedDatabaseError` with the first problem SQLite's quick check finds in the file
    (`PRAGMA quick_check`: every page and the links between them, not whether the indexes
    match their tables). It reads the whole file once: 0.7 s for 410 MiB, cached."""
    (first,) = db.execute("PRAGMA quick_check(1)").fetchone()
    if first != "ok":
        problem = " ".join(str(first).split()).removeprefix("*** in database main *** ")
        raise DamagedDatabaseError(path, problem)


def _schema_version(db: sqlite3.Connection) -> int:
    (version,) = db.execute("PRAGMA user_version").fetchone()
    return int(version)


def _create_tables(db: sqlite3.Connection, path: Path) -> None:
    """Bring a database of an older version (0: new, or made before the version was kept)
    to `SCHEMA_VERSION` in one transaction: create the tables it lacks, give the players of a
    file made before `player_names` existed their keys, give its tournaments the columns
    their indexes need (`add_tournament_columns`), stamp the version. The version is
    read again under the write lock: another process may have stamped it meanwhile (ours:
    nothing to do; a higher one: `NewerSchemaError`, nothing written)."""

    def create() -> None:
        found = _schema_version(db)
        if found == SCHEMA_VERSION:
            return
        if not 0 <= found < SCHEMA_VERSION:
            raise NewerSchemaError(path, found)
        began = time.monotonic()
        upgrading = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone()
        if upgrading:  # not a new file: the upgrade may take a while; say so first
            log.info(
                "upgrading %s from schema version %d to %d (once; a large database takes "
                "a while, in one transaction: a stop meanwhile leaves it as it was)",
                path,
                found,
                SCHEMA_VERSION,
            )
        for statement in _statements(SCHEMA + COMPETITION_SCHEMA):
            db.execute(statement)
        db.executemany(
            "INSERT OR IGNORE INTO player_names (name_key, player_id) VALUES (?, ?)",
            [(n.casefold(), p) for p, n in db.execute("SELECT player_id, name FROM players")],
        )
        add_tournament_columns(db)
        for statement in _statements(TOURNAMENT_INDEXES):
            db.execute(statement)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        if upgrading:
            log.info("upgraded %s in %.1f s", path, time.monotonic() - began)

    transaction(db, create)


def _statements(script: str) -> list[str]:
    """The statements of a script of `CREATE ... ;` (one `execute` each: `executescript`
    would commit the transaction it runs in)."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


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
    return _primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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


class SqliteStore(SqliteCompetition):
    """Every call reports a failure as a `StoreError`: `StoreUnavailableError` when the
    database is busy (another writer held it past `busy_timeout_s`), locked, full or failing,
    so a caller may retry; the store carries on once the cause is gone."""

    def __init__(
        self,
        path: str | Path,
        *,
        durable: bool = False,
        exclusive: bool = False,
        busy_timeout_s: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.durable = durable
        #: How long a write waits for another connection's lock (None: `BUSY_TIMEOUT_S`).
        self.busy_timeout_s = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
        #: Hold `lock_path` while open: a second exclusive store on the file is refused.
        self.exclusive = exclusive
        self.lock_path = lock_path_for(self.path)
        self._lock_fd: int | None = None
        self._executor: ThreadPoolExecutor | None = _worker()
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
        """Create or open the file (and its folder). `StoreLockedError` if exclusive and
        another server has it open; `StoreError` saying why if it cannot be opened (its
        folder cannot be created or written, the file or its log cannot be written, the file
        is not a database, ...). A store that failed to open, or was closed, may be opened
        again."""
        if self._executor is None:
            self._executor = _worker()
        try:
            await self._open()
        except BaseException as exc:
            await self.close()
            context = f"cannot open the SQLite database {self.path}"
            if isinstance(exc, sqlite3.Error):
                # SQLite says "disk I/O error" when its shared-memory file cannot grow
                full = _disk_full_note(self.path.parent)
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
            _check_writable(self.path)
            if self.exclusive and self._lock_fd is None:
                self._lock_fd = _hold_lock(self.lock_path)
            db = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=self.busy_timeout_s,
            )
            try:
                # Before anything is written (the log mode too): a newer solrace's file
                # is left as it is.
                found = _schema_version(db)
                if not 0 <= found <= SCHEMA_VERSION:
                    raise NewerSchemaError(self.path, found)
                _check_intact(db, self.path)
                db.execute("PRAGMA journal_mode=WAL")  # the file's, kept in it
                self._configure(db)
                if found < SCHEMA_VERSION:
                    _create_tables(db, self.path)
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

        return await self._run(lambda db: transaction(db, lambda: compare_and_set(db)))

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
            self._locked_writes = _worker("solrace-sqlite-moves")
        try:
            outcomes = await asyncio.get_running_loop().run_in_executor(self._locked_writes, write)
        except StoreError as exc:
            _settle(batch, exc)
        else:
            _settle(batch, outcomes)
        finally:
            self._handed_over = None
            self._flush_soon()

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
