"""The `sqlite:` store's files on disk: the lock file that keeps one server per database, and
the checks that say why a database cannot be opened (a file that cannot be written, a link
to nothing, a full disk).

One server per file: an open store holds an exclusive `flock` on the lock file beside the
database (`solrace.sqlite3` -> `solrace.sqlite3.lock`) while the store is open, so a second
server on the same file refuses to start instead of recovering (and timing out) the first one's
races. The kernel drops the lock when the process ends, kill -9 included; the file itself stays
(it only holds the last holder's pid).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
from pathlib import Path

from solrace.server.store.base import StoreError

log = logging.getLogger("solrace.server.store")


class StoreLockedError(StoreError):
    """Another live process (another `solrace serve`) has this database open."""

    def __init__(self, lock_path: Path, holder_pid: int | None) -> None:
        self.lock_path = lock_path
        self.holder_pid = holder_pid
        holder = "another process" if holder_pid is None else f"process {holder_pid}"
        super().__init__(
            f"{lock_path} is held by {holder}: another solrace serve uses this database"
        )


#: The files SQLite keeps beside a database in WAL mode: its name plus these.
LOG_FILES = ("-wal", "-shm")


def lock_path_for(database: Path) -> Path:
    """The lock file of a database: beside it, its name plus `.lock`
    (`data/solrace.sqlite3` -> `data/solrace.sqlite3.lock`): one per database file, whatever
    its suffix (`a.db` and `a.sqlite3` in one folder are two databases, two locks)."""
    return database.with_name(database.name + ".lock")


def hold_lock(path: Path) -> int:
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


def check_writable(database: Path) -> None:
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


def disk_full_note(folder: Path) -> str:
    """ " (its disk is full: ...)" when the disk of `folder` has less than `FULL_DISK_BYTES`
    free for this process, else ""."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" (its disk is full: {free:,} bytes free in {folder})" if free < FULL_DISK_BYTES else ""


__all__ = [
    "FULL_DISK_BYTES",
    "LOG_FILES",
    "StoreLockedError",
    "check_writable",
    "disk_full_note",
    "hold_lock",
    "link_to_nothing",
    "lock_path_for",
]
