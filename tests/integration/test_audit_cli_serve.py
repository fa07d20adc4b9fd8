"""`solrace serve` as a real process, given what operators get wrong: a database it cannot
write, or a damaged one, is refused at start in one line (exit 1), not served with every
write (or every write touching the damage) failing; an
empty host or data dir (an unset variable) is refused (exit 2), not taken for every
interface or the working directory; a
misspelt variable is named with the setting it may mean; a secret file other users may read
is named in a warning; a `~` in a path given without a shell is the home folder; a data
dir behind a link to nothing (a volume not mounted) is named so; Ctrl-C while it starts is
one line and exit 130 (SIGTERM: exit 0), and the data dir that start made is removed; a
SIGTERM as soon as it listens is a clean stop; a database on a full disk is said to be on a
full disk."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from solrace.server.store import SqliteStore
from tests.test_cli import AS_IN_A_TERMINAL
from tests.waiting import eventually

START_WITHIN_S = 30


async def serve_until_listening_or_exit(
    *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int | None, list[str]]:
    """Run `python -m solrace.cli serve ARGV` (in `cwd`, with the `SOLRACE_*` variables of
    `env` alone) until it exits, or until it says it listens (then it is stopped with SIGTERM,
    and None is its status): the status and its stderr lines up to then."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "solrace.cli",
        "serve",
        "--port",
        "0",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")} | (env or {}),
        cwd=cwd,
    )
    assert process.stderr is not None
    lines: list[str] = []
    listening = False
    try:
        async with asyncio.timeout(START_WITHIN_S):
            while line := await process.stderr.readline():
                text = line.decode(errors="replace").rstrip("\n")
                lines.append(text)
                if "listening on" in text:
                    listening = True
                    break
            if listening:
                process.send_signal(signal.SIGTERM)
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert not any("Traceback" in line for line in lines), lines
    return (None if listening else process.returncode), lines


@pytest.fixture
def made_read_only() -> Iterator[list[Path]]:
    """Files put here by a test are made read-only: mode 0444, or for root (whom modes do
    not stop) the immutable attribute, taken off again at the end; skipped for root without
    chattr."""
    files: list[Path] = []
    yield files
    chattr = shutil.which("chattr")
    if os.geteuid() == 0 and chattr is not None:
        for path in files:
            subprocess.run([chattr, "-i", str(path)], check=False)


def make_read_only(path: Path, files: list[Path]) -> None:
    if os.geteuid() != 0:
        path.chmod(0o444)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], check=False).returncode:
        pytest.skip("running as root without chattr +i: no file is read-only")
    files.append(path)


async def make_database(path: Path) -> None:
    store = SqliteStore(path)
    await store.open()
    await store.close()


@pytest.mark.parametrize("which", ["solrace.sqlite3", "solrace.sqlite3-wal"])
async def test_a_database_it_cannot_write_is_one_line_and_exit_1(
    tmp_path: Path, made_read_only: list[Path], which: str
) -> None:
    database = tmp_path / "solrace.sqlite3"
    await make_database(database)
    (tmp_path / "solrace.sqlite3-wal").touch()  # as a server killed before its last checkpoint
    make_read_only(tmp_path / which, made_read_only)
    code, lines = await serve_until_listening_or_exit(
        "--data-dir", str(tmp_path), "--secret", "s" * 16
    )
    assert code == 1, f"started on a database it cannot write: {lines}"
    assert lines == [
        f"solrace serve: error: cannot open the SQLite database {database}: "
        f"it cannot be written: '{tmp_path / which}'"
    ]


async def test_a_store_path_that_is_a_folder_is_named_so(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    code, lines = await serve_until_listening_or_exit(
        "--store", f"sqlite:{folder}", "--data-dir", str(tmp_path), "--secret", "s" * 16
    )
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: cannot open the SQLite database {folder}: "
            f"Is a directory: '{folder}'"
        ],
    )
    assert os.listdir(tmp_path) == ["db"]  # no lock file left beside it


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        ((), {"SOLRACE_HOST": ""}, "SOLRACE_HOST ''"),
        (("--host", ""), {}, "--host ''"),
    ],
)
async def test_an_empty_host_is_refused_not_every_interface(
    tmp_path: Path, argv: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    code, lines = await serve_until_listening_or_exit(
        *argv, "--data-dir", str(tmp_path / "data"), "--secret", "s" * 16, env=env
    )
    assert (code, lines) == (
        2,
        [
            f"solrace serve: error: invalid {named}: empty: it would listen on every "
            "interface; for that give 0.0.0.0, else an address or name of this machine"
        ],
    )
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("variable", "meant"),
    [("SOLRACE_PROT", "SOLRACE_PORT"), ("SOLRACE_HSOT", "SOLRACE_HOST")],
)
async def test_two_letters_swapped_in_a_variable_are_named_with_the_setting_meant(
    tmp_path: Path, variable: str, meant: str
) -> None:
    code, lines = await serve_until_listening_or_exit(
        "--data-dir", str(tmp_path), "--secret", "s" * 16, env={variable: "9000"}
    )
    assert code is None  # it started, on the defaults
    assert any(
        line.endswith(
            f"WARNING solrace.server: {variable} is no setting of the server: ignored: "
            f"did you mean {meant}?"
        )
        for line in lines
    ), lines


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o602])
async def test_a_secret_file_open_to_other_users_is_named_in_a_warning(
    tmp_path: Path, mode: int
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef" * 4 + "\n")
    secret.chmod(mode)
    code, lines = await serve_until_listening_or_exit("--data-dir", str(tmp_path))
    assert code is None  # it started, with the secret
    assert lines[0].endswith(
        f"WARNING solrace.server: the token secret {secret} is open to other users "
        f"(mode {mode:03o}): whoever reads it can sign in as any player; chmod 600 {secret}"
    ), lines


async def test_a_secret_file_of_its_own_is_used_without_a_word(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef" * 4 + "\n")
    secret.chmod(0o600)
    code, lines = await serve_until_listening_or_exit("--data-dir", str(tmp_path))
    assert code is None
    assert [line for line in lines if "WARNING" in line] == []


def damage_table(database: Path, table: str) -> None:
    """Overwrite the first page of `table` in `database` (SQLite's own header, page 1, stays
    whole): an interior page marker followed by garbage, as a disk or a copy may leave it."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
        query = "SELECT rootpage FROM sqlite_master WHERE name = ?"
        (root,) = db.execute(query, (table,)).fetchone()
    with database.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\x05" + b"\xff" * (page_size - 1))


async def test_a_damaged_database_is_one_line_and_exit_1(tmp_path: Path) -> None:
    database = tmp_path / "solrace.sqlite3"
    await make_database(database)
    damage_table(database, "moves")
    code, lines = await serve_until_listening_or_exit(
        "--data-dir", str(tmp_path), "--secret", "s" * 16
    )
    assert code == 1, f"started on a damaged database: {lines}"
    [line] = lines
    assert line.startswith(
        f"solrace serve: error: the SQLite database {database} is damaged (Page "
    ), line
    assert line.endswith(
        f"): restore a backup, or save what is left of it "
        f"(sqlite3 {database} .recover | sqlite3 NEW-FILE)"
    ), line


@pytest.mark.parametrize(
    ("argv", "env", "database"),
    [
        ((), {"SOLRACE_DATA_DIR": "~/solrace"}, "solrace/solrace.sqlite3"),
        (("--data-dir", "~/solrace"), {}, "solrace/solrace.sqlite3"),
        ((), {"SOLRACE_STORE": "sqlite:~/races.sqlite3"}, "races.sqlite3"),
    ],
)
async def test_a_path_from_home_is_in_home_not_in_a_folder_named_tilde(
    tmp_path: Path, argv: tuple[str, ...], env: dict[str, str], database: str
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    code, lines = await serve_until_listening_or_exit(
        *argv, "--secret", "s" * 16, env={"HOME": str(home)} | env, cwd=work
    )
    assert code is None
    assert f"(store sqlite:{home / database}, broker memory:" in lines[-1], lines
    assert (home / database).exists()
    assert os.listdir(work) == []  # no folder named ~ (nor ./data) made where it started


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        ((), {"SOLRACE_DATA_DIR": ""}, "SOLRACE_DATA_DIR ''"),
        (("--data-dir", ""), {}, "--data-dir ''"),
    ],
)
async def test_an_empty_data_dir_is_refused_not_the_working_directory(
    tmp_path: Path, argv: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    code, lines = await serve_until_listening_or_exit(
        *argv, "--secret", "s" * 16, env=env, cwd=tmp_path
    )
    assert (code, lines) == (
        2,
        [
            f"solrace serve: error: invalid {named}: empty: give a folder "
            "(. for the working directory)"
        ],
    )
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("data_dir", "secret", "said_of"),
    [
        ("data", (), "cannot use the data dir {data_dir}"),
        ("data/node1", (), "cannot use the data dir {data_dir}"),
        (
            "data",
            ("--secret", "s" * 16),
            "cannot open the SQLite database {data_dir}/solrace.sqlite3",
        ),
    ],
)
async def test_a_data_dir_behind_a_link_to_nothing_names_the_link(
    tmp_path: Path, data_dir: str, secret: tuple[str, ...], said_of: str
) -> None:
    link, target = tmp_path / "data", tmp_path / "volume" / "solrace"
    link.symlink_to(target)
    code, lines = await serve_until_listening_or_exit(
        "--data-dir", str(tmp_path / data_dir), *secret
    )
    where = said_of.format(data_dir=tmp_path / data_dir)
    assert (code, lines) == (
        1,
        [f"solrace serve: error: {where}: {link} is a link to {target}, which does not exist"],
    )
    assert not target.exists()  # not made: the volume is the operator's to mount


@pytest.mark.parametrize(
    ("sig", "status", "said"),
    [
        (signal.SIGINT, 130, "solrace serve: interrupted while starting"),
        (signal.SIGTERM, 0, "solrace serve: stopped while starting (SIGTERM)"),
    ],
    ids=["ctrl-c", "sigterm"],
)
async def test_a_stop_while_starting_is_one_line_and_leaves_no_data_dir(
    tmp_path: Path, sig: signal.Signals, status: int, said: str
) -> None:
    database = tmp_path / "races.sqlite3"
    await make_database(database)
    data_dir = tmp_path / "data"
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as holder:
        # Held by another program: the node's start waits for it (SQLite's busy timeout).
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("CREATE TABLE held (x)")
        process = await asyncio.create_subprocess_exec(
            *AS_IN_A_TERMINAL,
            "serve",
            "--port",
            "0",
            "--store",
            f"sqlite:{database}",
            "--data-dir",
            str(data_dir),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")},
        )
        lock = database.with_name(database.name + ".lock")

        def starting() -> bool:  # its pid is in the lock file: it now opens the database
            return lock.exists() and lock.read_text().strip() == str(process.pid)

        try:
            async with asyncio.timeout(START_WITHIN_S):
                await eventually(starting)
                process.send_signal(sig)
                _, err = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert (process.returncode, err.decode().splitlines()) == (status, [said])
    assert not data_dir.exists()  # its secret, made at this start, went with it


async def test_a_sigterm_as_it_says_it_listens_is_a_clean_stop(tmp_path: Path) -> None:
    """The stop signals are handled from before the start: one sent as soon as the node
    says it listens (before its start-up's last steps) stops it cleanly, exit 0."""
    process = await asyncio.create_subprocess_exec(
        *AS_IN_A_TERMINAL,
        "serve",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "data"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")},
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(START_WITHIN_S):
            while line := await process.stderr.readline():
                lines.append(line.decode().rstrip("\n"))
                if "listening on" in lines[-1]:
                    process.send_signal(signal.SIGTERM)
                    break
            lines += (await process.stderr.read()).decode().splitlines()
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, lines
    assert lines[-1].endswith("stopped"), lines


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test (root only; skipped where it cannot be mounted)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a small tmpfs needs root")
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if made.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    """Write into `disk` until it has no byte left."""
    with (disk / "filler").open("wb") as file:
        while True:
            try:
                file.write(b"\0" * 65536)
                file.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        with contextlib.suppress(OSError):  # what the last flush could not write
            file.truncate(file.tell())
    assert shutil.disk_usage(disk).free == 0


async def test_a_database_on_a_full_disk_is_said_to_be_on_a_full_disk(small_disk: Path) -> None:
    data_dir = small_disk / "data"
    database = data_dir / "solrace.sqlite3"
    await make_database(database)
    fill(small_disk)
    code, lines = await serve_until_listening_or_exit(
        "--data-dir", str(data_dir), "--secret", "s" * 16
    )
    assert code == 1, lines
    line = lines[-1]  # after a warning that the lock file could not take the pid
    assert line.startswith(f"solrace serve: error: cannot open the SQLite database {database}: ")
    assert line.endswith(f" (its disk is full: 0 bytes free in {data_dir})"), line
