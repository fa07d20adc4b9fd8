from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from pydantic import ValidationError
from websockets.asyncio.client import connect

from solrace.server.app import App
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Welcome
from solrace.server.settings import Settings
from solrace.server.startup_errors import StartupError
from solrace.server.store import StoreUnavailableError
from solrace.server.url_redaction import redact
from tests.open_redis import describe, left_open
from tests.redis_server import RedisServer
from tests.server.serve_command import REDIS_FORMS, serve
from tests.waiting import eventually

pytestmark = pytest.mark.usefixtures("no_solrace_environment")


def test_defaults_listen_on_loopback_8765_with_sqlite_in_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SOLRACE_PORT", "SOLRACE_HOST", "SOLRACE_DATA_DIR", "SOLRACE_STORE"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.store_url() == f"sqlite:{Path('data') / 'solrace.sqlite3'}"
    assert settings.max_frame_bytes == 16 * 1024


# --- start-up failures: one line on stderr, a non-zero exit, no traceback ----------------------


@pytest.fixture
def closed_port() -> int:
    """A port (from the OS) on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback here")
async def test_the_url_it_listens_on_can_be_pasted_for_an_ipv6_address(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    app = App(Settings(host="::1", port=0, data_dir=tmp_path, secret="s" * 16))
    with caplog.at_level(logging.INFO, "solrace.server"):
        await app.start()
    try:
        [line] = [r.getMessage() for r in caplog.records if "listening on" in r.getMessage()]
        url = line.split()[2]
        assert url == f"ws://[::1]:{app.port}"
        async with connect(url, compression=None) as client:  # the line's URL, as it is
            await client.send(encode(Hello(protocol=PROTOCOL_VERSION)))
            answer = await client.recv()
            assert isinstance(answer, bytes) and isinstance(decode_server(answer), Welcome)
    finally:
        await app.stop()


def test_a_port_in_use_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, listening_port: int
) -> None:
    code, lines = serve(capsys, "--port", str(listening_port), "--data-dir", str(tmp_path))
    assert code == 1
    assert lines == [
        f"solrace serve: error: port {listening_port} on 127.0.0.1 is in use "
        "(another solrace serve?)"
    ]


async def test_a_failed_start_stops_what_it_started(tmp_path: Path, listening_port: int) -> None:
    app = App(Settings(port=listening_port, data_dir=tmp_path, secret="s" * 16))
    with pytest.raises(StartupError, match="is in use"):
        await app.start()
    # The store was opened and the races recovered before the port was tried: undone.
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_an_address_not_on_this_machine_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never a local address.
    code, lines = serve(capsys, "--host", "192.0.2.1", "--data-dir", str(tmp_path))
    assert code == 1
    assert lines == [
        "solrace serve: error: cannot listen on 192.0.2.1: not an address of this machine"
    ]


def test_a_data_dir_under_a_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    data_dir = tmp_path / "file" / "data"
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(data_dir))
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: cannot use the data dir {data_dir}: "
            f"Not a directory: '{data_dir}'"
        ],
    )
    # With a secret given, the store is the first to need the folder.
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(data_dir), "--secret", "s" * 16)
    assert code == 1
    assert lines == [
        f"solrace serve: error: cannot open the SQLite database {data_dir / 'solrace.sqlite3'}: "
        f"Not a directory: '{data_dir}'"
    ]


def test_a_data_dir_that_is_a_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "data").write_text("")
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path / "data"))
    assert code == 1
    assert lines == [
        f"solrace serve: error: cannot use the data dir {tmp_path / 'data'}: "
        "it is a file, not a folder"
    ]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write into: mode 0555, or for root (whom modes do not stop) the
    immutable attribute; skipped where neither is possible."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], check=False).returncode:
        pytest.skip("running as root without chattr +i: no folder is read-only")
    try:
        yield folder
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_a_read_only_data_dir_is_one_line(
    capsys: pytest.CaptureFixture[str], read_only_dir: Path
) -> None:
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(read_only_dir))
    assert code == 1
    [line] = lines
    assert line.startswith(f"solrace serve: error: cannot use the data dir {read_only_dir}: ")
    assert line.endswith(f"'{read_only_dir / 'secret'}'")
    code, lines = serve(
        capsys, "--port", "0", "--data-dir", str(read_only_dir), "--secret", "s" * 16
    )
    assert code == 1
    [line] = lines
    database = read_only_dir / "solrace.sqlite3"
    assert line.startswith(f"solrace serve: error: cannot open the SQLite database {database}: ")


def test_an_unreachable_redis_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, closed_port: int
) -> None:
    url = f"redis://:hunter2@127.0.0.1:{closed_port}/0"
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path), "--redis", url)
    assert code == 1
    [line] = lines
    assert line.startswith(
        f"solrace serve: error: cannot reach Redis at redis://***@127.0.0.1:{closed_port}/0 ("
    )
    assert "hunter2" not in line


@pytest.mark.redis
def test_a_redis_that_asks_for_a_password_says_what_to_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, own_redis_server: RedisServer
) -> None:
    """A Redis with a password, and a URL without one, or with a wrong one: it was reached,
    so not `cannot reach Redis (HELLO must be called ...)`; the line says what to put in the
    URL, for the store and for the broker, and never shows the password given."""
    with redis.Redis.from_url(own_redis_server.url) as admin:
        admin.config_set("requirepass", "hunter2hunter2")
    plain = own_redis_server.url
    wrong = plain.replace("redis://", "redis://:not-the-one@")
    right = plain.replace("redis://", "redis://:hunter2hunter2@")
    asks = (
        "asks for a password: put it in the URL, redis://:PASSWORD@HOST:PORT/DB (rediss://... "
        "for TLS)"
    )
    refused = (
        f"solrace serve: error: Redis at {redact(wrong)} refused the password in the URL "
        "(invalid username-password pair or user is disabled.): give the one Redis is set to "
        "(its requirepass, or the password of the user the URL names)"
    )
    for stores, said in [
        (["--redis", plain], f"solrace serve: error: Redis at {plain} {asks}"),
        (["--redis", wrong], refused),
        (["--redis", right, "--broker", plain], f"solrace serve: error: Redis at {plain} {asks}"),
    ]:
        argv = ["--port", "0", "--data-dir", str(tmp_path), "--secret", "s" * 16, *stores]
        assert serve(capsys, *argv) == (1, [said])


@pytest.fixture
def socket_redis_server(redis_binary: str, tmp_path: Path) -> Iterator[RedisServer]:
    """A private server listening on a unix socket as well (`unix_socket`), with a password.
    The socket is in a short folder of its own: its path may have at most 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="solrace-") as folder:
        socket_path = Path(folder) / "r.sock"
        server = RedisServer.launch(redis_binary, tmp_path / "redis", unix_socket=socket_path)
        try:
            with redis.Redis.from_url(server.url) as admin:
                admin.config_set("requirepass", "hunter2hunter2")
            yield server
        finally:
            server.stop()


@pytest.mark.redis
def test_a_redis_socket_that_asks_for_a_password_says_what_to_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, socket_redis_server: RedisServer
) -> None:
    """Over a unix socket redis-py wraps Redis's refusal in one more connection error: it was
    said as `cannot reach Redis (HELLO must be called ...)`. It says, as over TCP, that a
    password is asked for (in the socket URL's form) or that the one given is refused, and
    shows no password, whether given before the path or in the query."""
    path = socket_redis_server.unix_socket
    plain = f"unix://{path}?db=1"
    refused = (
        "refused the password in the URL (invalid username-password pair or user is "
        "disabled.): give the one Redis is set to (its requirepass, or the password of the "
        "user the URL names)"
    )
    for url, said in [
        (
            plain,
            f"Redis at {plain} asks for a password: put it in the URL, unix://:PASSWORD@/PATH?db=N",
        ),
        (f"unix://:not-the-one@{path}?db=1", f"Redis at unix://***@{path}?db=1 {refused}"),
        (f"unix://{path}?db=1&password=not-the-one", f"Redis at {plain}&password=*** {refused}"),
    ]:
        argv = ["--port", "0", "--data-dir", str(tmp_path), "--secret", "s" * 16, "--redis", url]
        assert serve(capsys, *argv) == (1, [f"solrace serve: error: {said}"])


@pytest.mark.redis
async def test_a_redis_socket_url_may_give_its_password_in_the_query(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, socket_redis_server: RedisServer
) -> None:
    """`unix:///PATH?db=N&password=PASSWORD`, the form redis-py documents for sockets: the
    node starts on it, and its log line shows no password."""
    path = socket_redis_server.unix_socket
    url = f"unix://{path}?db=1&password=hunter2hunter2"
    app = App(node_settings(tmp_path, redis=url))
    with caplog.at_level(logging.INFO, "solrace.server"):
        await app.start()
        await app.stop()
    said = "\n".join(record.getMessage() for record in caplog.records)
    assert f"(store unix://{path}?db=1&password=***, broker unix://{path}" in said
    assert "hunter2" not in said


def test_a_malformed_redis_url_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = "redis://127.0.0.1:notaport/0"
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path), "--redis", url)
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: {url}: invalid Redis URL: "
            "Port could not be cast to integer value as 'notaport'"
        ],
    )


@pytest.mark.redis
@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ("foo=bar", "'foo' is not a query option of a redis:// URL here; accepted: "),
        ("ssl_cert_reqs=none", "'ssl_cert_reqs' is not a query option of a redis:// URL here; "),
        ("socket_timeout=abc", "'socket_timeout' is not a query option of a redis:// URL here; "),
    ],
)
def test_a_redis_url_option_not_taken_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, redis_url: str, query: str, refusal: str
) -> None:
    """An option redis-py does not take (or takes on rediss:// only) made the first connect
    fail with a traceback; here it is named, with the ones accepted."""
    url = f"{redis_url}?{query}"
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--redis", url, "--secret", "s" * 16]
    code, lines = serve(capsys, *argv)
    assert code == 1
    [line] = lines
    assert line.startswith(f"solrace serve: error: {url}: invalid Redis URL: {refusal}")


@pytest.mark.redis
def test_an_unreachable_or_malformed_broker_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, closed_port: int, redis_url: str
) -> None:
    """The store (a reachable Redis) opens; the broker linking this node to others does not."""
    url = f"redis://:hunter2@127.0.0.1:{closed_port}/0"
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--redis", redis_url, "--broker", url]
    code, lines = serve(capsys, *argv, "--secret", "s" * 16)
    assert code == 1
    [line] = lines
    assert line.startswith(
        f"solrace serve: error: cannot reach Redis at redis://***@127.0.0.1:{closed_port}/0 ("
    )
    assert "hunter2" not in line
    url = "redis://127.0.0.1:notaport/0"
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--redis", redis_url, "--broker", url]
    code, lines = serve(capsys, *argv, "--secret", "s" * 16)
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: {url}: invalid Redis URL: "
            "Port could not be cast to integer value as 'notaport'"
        ],
    )


def test_an_unknown_store_scheme_with_a_broker_is_named_as_the_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--store", "redis+unix:///run/redis.sock", "--broker", "redis://10.0.0.5/0"]
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path), *argv)
    assert (code, lines) == (
        1,
        [
            "solrace serve: error: unsupported store URL 'redis+unix:///run/redis.sock'; "
            f"accepted: memory:, sqlite:PATH, {REDIS_FORMS}"
        ],
    )


def test_an_unknown_store_scheme_lists_the_accepted_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--store", "bogus:xyz", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        1,
        [
            "solrace serve: error: unsupported store URL 'bogus:xyz'; accepted: memory:, "
            "sqlite:PATH, redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) "
            "or unix://PATH (a Redis socket)"
        ],
    )


# --- one server per SQLite file: <data-dir>/solrace.sqlite3.lock -------------------------------


def node_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"port": 0, "data_dir": data_dir, "secret": "s" * 16, **overrides}
    return Settings(**values)


async def test_a_second_app_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    first = App(node_settings(tmp_path))
    await first.start()
    try:
        second = App(node_settings(tmp_path))
        lock = tmp_path / "solrace.sqlite3.lock"
        with pytest.raises(StartupError) as refused:
            await second.start()
        assert str(refused.value) == (
            f"{lock} is held by process {os.getpid()}: another solrace serve uses this database"
        )
        # The refusal touched nothing of the first: its store and its port still work.
        assert await first.store.get_player(PlayerId("nobody")) is None
        _, writer = await asyncio.open_connection("127.0.0.1", first.port)
        writer.close()
        await writer.wait_closed()
    finally:
        await first.stop()
    third = App(node_settings(tmp_path))
    await third.start()  # the first has stopped: its lock is gone
    await third.stop()


async def test_a_failed_start_releases_the_lock(tmp_path: Path, listening_port: int) -> None:
    with pytest.raises(StartupError, match="is in use"):
        await App(node_settings(tmp_path, port=listening_port)).start()
    app = App(node_settings(tmp_path))
    await app.start()
    await app.stop()


async def test_a_stop_that_fails_part_way_still_stops_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service whose stop raises: the error comes out of `App.stop`, but the parts started
    before it are stopped all the same (the store is closed, its lock let go), and a second
    stop has nothing left to do."""
    app = App(node_settings(tmp_path))
    stop_tournaments = app.tournaments.stop

    async def failing_stop() -> None:
        await stop_tournaments()
        raise RuntimeError("tournaments would not stop")

    monkeypatch.setattr(app.tournaments, "stop", failing_stop)
    await app.start()
    with pytest.raises(RuntimeError, match="would not stop"):
        await app.stop()
    again = App(node_settings(tmp_path))
    await again.start()  # the first one's store is closed: its lock is gone
    await again.stop()
    await app.stop()  # nothing left to stop: its failing part is not asked again


async def test_only_the_same_sqlite_file_is_locked(tmp_path: Path) -> None:
    """Two files in one folder, or memory stores: nothing shared, nothing refused. (Redis is
    shared by several nodes on purpose: it takes no lock either; see test_cluster_*.)"""
    apps = [
        App(node_settings(tmp_path, store=f"sqlite:{tmp_path / 'a.sqlite3'}")),
        App(node_settings(tmp_path, store=f"sqlite:{tmp_path / 'a.db'}")),
        App(node_settings(tmp_path, store="memory:")),
        App(node_settings(tmp_path, store="memory:")),
    ]
    started: list[App] = []
    try:
        for app in apps:
            await app.start()
            started.append(app)
    finally:
        for app in started:
            await app.stop()
    assert len(started) == 4
    assert lock_files(tmp_path) == {"a.sqlite3.lock", "a.db.lock"}


async def test_a_database_locked_by_another_connection_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a second server (that is the lock file) but, say, a backup tool holding SQLite's
    own lock: the store is unavailable, told as the SQLite file it is, not as Redis."""
    monkeypatch.setattr("solrace.server.store.sqlite.BUSY_TIMEOUT_S", 0.05)  # not 5 s
    database = tmp_path / "solrace.sqlite3"
    other = sqlite3.connect(database, isolation_level=None, timeout=0)
    try:
        other.execute("PRAGMA journal_mode=WAL")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StartupError) as refused:
            await App(node_settings(tmp_path)).start()
        assert str(refused.value) == (
            f"cannot open the SQLite database {database}: database is locked"
        )
        assert isinstance(refused.value.__cause__, StoreUnavailableError)
    finally:
        other.close()
    assert lock_files(tmp_path) == {"solrace.sqlite3.lock"}
    app = App(node_settings(tmp_path))
    await app.start()  # the failed start let its own lock file go
    await app.stop()


def lock_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.lock")}


def test_pings_need_a_positive_period() -> None:
    """0 would spin the transport's watchdog (it sleeps a quarter of the period)."""
    for name in ("ping_interval_s", "ping_timeout_s"):
        zero: dict[str, Any] = {name: 0}
        with pytest.raises(ValidationError, match="greater than 0"):
            Settings(**zero)
        off: dict[str, Any] = {name: None}
        assert getattr(Settings(**off), name) is None


async def open_silent_client(port: int) -> asyncio.StreamWriter:
    """A WebSocket client that completes its handshake, then never reads again: it never
    answers the server's close frame (a client whose network went away without a word)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 101"), head
    return writer


@pytest.mark.redis
async def test_a_client_that_never_answers_the_close_leaves_the_redis_work_its_deadline(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, redis_url: str
) -> None:
    """The stop deadline bounds the Redis work once the clients are closed: a client that
    never answers the close frame is waited for (`close_timeout_s`, longer than the deadline
    here), and the Redis work after it (presence withdrawn, progress stored, the store
    closed) is still done in full, with no warning blaming Redis. The deadline is 2 s: the
    work on a healthy Redis takes milliseconds, but a loaded machine or a full collection of
    a long test run can hold it a few tenths of a second."""
    app = App(node_settings(tmp_path, store=redis_url, stop_timeout_s=2.0, close_timeout_s=3.0))
    await app.start()
    writer = await open_silent_client(app.port)
    try:
        with caplog.at_level(logging.INFO, "solrace.server"):
            await app.stop()
    finally:
        writer.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "solrace.server"]
    assert not [m for m in messages if "given up" in m], messages
    assert messages[-1] == "stopped"


@pytest.mark.redis
async def test_a_stop_cut_short_by_a_frozen_redis_leaves_no_redis_connection_open(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, own_redis_server: RedisServer
) -> None:
    """Redis answers nothing while the node stops: the store's and the broker's closing are
    given up at the stop's deadline, yet every connection to Redis is closed by the time
    `stop` returns (a node embedded in another program, or a test, would keep the sockets),
    and no task of the node outlives it (the channel readers ended with the broker)."""
    app = App(node_settings(tmp_path, store=own_redis_server.url, stop_timeout_s=0.5))
    await app.start()
    assert left_open() != []  # the store's and the broker's connections
    with own_redis_server.frozen(), caplog.at_level(logging.WARNING, "solrace.server"):
        await app.stop()
    given_up = [r.getMessage() for r in caplog.records if "given up" in r.getMessage()]
    assert len(given_up) == 1 and "closing the store" in given_up[0], given_up
    assert [describe(conn, stack) for conn, stack in left_open()] == []

    def node_tasks() -> list[str]:
        names = [task.get_name() for task in asyncio.all_tasks()]
        return [name for name in names if name.startswith("solrace")]

    await eventually(lambda: node_tasks() == [], what="the node's tasks ended")
