"""`solrace serve` as a real process: a start-up failure is one line on stderr and exit 1;
a second server on the data dir of a live one is refused (until that one is gone, even by
kill -9); stored data it cannot read (a newer version's records or tables, or damaged) stops
it the same way, changing nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from solrace.server.protocol.messages import MakeMove, MoveAck, RaceSnapshot, Sync
from solrace.server.store import SqliteStore
from solrace.server.store.sqlite_schema import SCHEMA_VERSION
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import connect_client

START_WITHIN_S = 30
SECRET = "test-secret-for-tokens"  # ServerProcess's

Starter = Callable[[], Awaitable[ServerProcess]]


async def serve_expecting_failure(*argv: str) -> tuple[int, list[str]]:
    """Run `python -m solrace.cli serve ARGV` to its end (killed if it does not end in time):
    its exit status and its stderr lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "solrace.cli",
        "serve",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")},
    )
    try:
        async with asyncio.timeout(START_WITHIN_S):
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    text = err.decode(errors="replace")
    assert "Traceback" not in text
    return process.returncode, text.splitlines()


async def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, lines = await serve_expecting_failure(
            "--port", str(port), "--data-dir", str(tmp_path), "--secret", "s" * 16
        )
    assert (code, lines) == (
        1,
        [f"solrace serve: error: port {port} on 127.0.0.1 is in use (another solrace serve?)"],
    )


async def test_invalid_settings_are_named_and_exit_2(tmp_path: Path) -> None:
    code, lines = await serve_expecting_failure("--port", "99999", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        ["solrace serve: error: invalid --port 99999: Input should be less than or equal to 65535"],
    )


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Starter]:
    """Starts `solrace serve` processes on one data dir; each is killed at the end."""
    started: list[ServerProcess] = []

    async def start() -> ServerProcess:
        process = await ServerProcess.start(tmp_path / "data")
        started.append(process)
        return process

    yield start
    for process in started:
        await process.kill()


async def refused_line(data_dir: Path) -> str:
    code, lines = await serve_expecting_failure(
        "--port", "0", "--data-dir", str(data_dir), "--secret", SECRET
    )
    assert code == 1 and len(lines) == 1, lines
    return lines[0]


async def test_a_second_server_on_a_data_dir_is_refused_until_the_first_is_gone(
    servers: Starter, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    lock = data_dir / "solrace.sqlite3.lock"
    first = await servers()
    alice = await connect_client(first.url, "alice")
    bob = await connect_client(first.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    await play(alice, race_id, ["deal"])

    assert await refused_line(data_dir) == (
        f"solrace serve: error: {lock} is held by process {first.process.pid}: "
        "another solrace serve uses this database"
    )
    # The first serves on, its race untouched.
    await play(alice, race_id, ["deal"], first_seq=2)
    token = alice.welcome.token if alice.welcome else None
    for each in (alice, bob):
        await each.close()

    await first.kill()  # kill -9: the kernel drops the lock
    second = await servers()
    again = await connect_client(second.url, token=token)
    assert again.welcome and again.welcome.active_races == [race_id]
    await again.send(Sync(race_id=race_id, epoch="", since_version=0))
    snapshot = await again.expect(RaceSnapshot)
    assert {p.player_id: p.moves for p in snapshot.progress}[again.player_id] == 2
    await again.send(MakeMove(race_id=race_id, seq=3, move="deal"))
    assert (await again.expect(MoveAck)).ply == 2
    await again.close()

    assert await refused_line(data_dir) == (
        f"solrace serve: error: {lock} is held by process {second.process.pid}: "
        "another solrace serve uses this database"
    )
    assert await second.terminate() == 0  # SIGTERM: a clean stop releases it too
    third = await servers()
    assert third.port != 0


def add_a_field(database: sqlite3.Connection) -> str:
    """Give the stored race a field this version does not know, as a newer one might."""
    [(race_id, text)] = database.execute("SELECT race_id, record FROM races").fetchall()
    record = json.loads(text)
    database.execute(
        "UPDATE races SET record = ? WHERE race_id = ?",
        (json.dumps({**record, "paused_at_ms": None}), race_id),
    )
    return "RaceRecord this version cannot read (paused_at_ms: Extra inputs are not permitted)"


def refuse_a_move(database: sqlite3.Connection) -> str:
    """Make the stored move one the rules refuse (a pile Klondike does not have)."""
    database.execute("UPDATE moves SET move = 't9-f1'")
    return "move this version's rules refuse (klondike has no pile t9)"


@pytest.mark.parametrize("damage", [add_a_field, refuse_a_move])
async def test_stored_data_it_cannot_read_is_one_line_and_exit_1_and_changes_nothing(
    servers: Starter, tmp_path: Path, damage: Callable[[sqlite3.Connection], str]
) -> None:
    data_dir = tmp_path / "data"
    first = await servers()
    alice = await connect_client(first.url, "alice")
    bob = await connect_client(first.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    await play(alice, race_id, ["deal"])
    token = alice.welcome.token if alice.welcome else None
    await first.kill()
    for each in (alice, bob):
        await each.close()

    path = data_dir / "solrace.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as database, database:
        before = database.execute("SELECT record FROM races").fetchall()
        saying = damage(database)
        damaged = database.execute("SELECT * FROM races, moves").fetchall()

    assert await refused_line(data_dir) == (
        f"solrace serve: error: sqlite:{path} holds a {saying}: written by a newer solrace, "
        "or damaged: start the version that wrote it, or restore a backup"
    )
    with contextlib.closing(sqlite3.connect(path)) as database, database:
        assert database.execute("SELECT * FROM races, moves").fetchall() == damaged
        # Put right (the version that wrote it, a backup): the race is there as it was.
        database.execute("UPDATE races SET record = ?", before[0])
        database.execute("UPDATE moves SET move = 'deal'")
    second = await servers()
    again = await connect_client(second.url, token=token)
    assert again.welcome and again.welcome.active_races == [race_id]
    await again.send(MakeMove(race_id=race_id, seq=2, move="deal"))
    assert (await again.expect(MoveAck)).ply == 1  # the second move
    await again.close()


async def test_a_database_of_a_later_schema_is_one_line_and_exit_1_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """Tables of a newer solrace (its `user_version` above this version's): refused at open,
    before anything in the file is written."""
    data_dir = tmp_path / "data"
    path = data_dir / "solrace.sqlite3"
    store = SqliteStore(path)
    await store.open()
    await store.close()
    with contextlib.closing(sqlite3.connect(path)) as database:
        database.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = path.read_bytes()

    assert await refused_line(data_dir) == (
        f"solrace serve: error: the SQLite database {path} has schema version "
        f"{SCHEMA_VERSION + 1}, this version knows up to {SCHEMA_VERSION}: written by a newer "
        "solrace, or damaged: start the version that wrote it, or restore a backup"
    )
    assert path.read_bytes() == before
