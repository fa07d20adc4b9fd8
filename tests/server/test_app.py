from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from websockets.asyncio.client import connect

from solrace.server.app import (
    App,
    StartupError,
    build_parser,
    load_secret,
    main,
    settings_from_args,
    unknown_settings,
)
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Welcome
from solrace.server.settings import SECRET_MIN_CHARS, Settings
from solrace.server.store import StoreUnavailableError
from tests.open_redis import describe, left_open
from tests.redis_server import RedisServer
from tests.waiting import eventually


def test_defaults_listen_on_loopback_8765_with_sqlite_in_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SOLRACE_PORT", "SOLRACE_HOST", "SOLRACE_DATA_DIR", "SOLRACE_STORE"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.store_url() == f"sqlite:{Path('data') / 'solrace.sqlite3'}"
    assert settings.max_frame_bytes == 16 * 1024


def test_environment_then_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLRACE_PORT", "9001")
    monkeypatch.setenv("SOLRACE_GRACE_S", "5")
    assert Settings().port == 9001
    settings = settings_from_args(build_parser().parse_args(["--port", "9002"]))
    assert (settings.port, settings.grace_s) == (9002, 5.0)


def test_every_flag_sets_its_setting() -> None:
    argv = ["--host", "0.0.0.0", "--port", "9003", "--data-dir", "d", "--origins", "a", "b"]
    argv += ["--rate-capacity", "7", "--max-frame-bytes", "1024", "--grace-s", "2.5"]
    argv += ["--admin-token", "t0ken-of-16-chars", "--progress-interval-s", "0"]
    settings = settings_from_args(build_parser().parse_args(argv))
    assert (settings.host, settings.port, settings.data_dir) == ("0.0.0.0", 9003, Path("d"))
    assert settings.origins == ["a", "b"] and settings.rate_capacity == 7.0
    assert (settings.max_frame_bytes, settings.grace_s) == (1024, 2.5)
    assert (settings.admin_token, settings.progress_interval_s) == ("t0ken-of-16-chars", 0.0)
    helps = {a.dest: a.help or "" for a in build_parser()._actions}
    assert "(default 8765)" in helps["port"] and "(default 10)" in helps["spectator_delay_rated_s"]


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    assert "SOLRACE_" in capsys.readouterr().out


# --- start-up failures: one line on stderr, a non-zero exit, no traceback ----------------------


@pytest.fixture(autouse=True)
def no_solrace_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("SOLRACE_")]:
        monkeypatch.delenv(name)


def serve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """`solrace serve ARGV` in this process: its exit status and its stderr lines."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A port (from the OS) on 127.0.0.1 that something else listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


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


def test_the_traceback_is_kept_at_debug(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    listening_port: int,
) -> None:
    caplog.set_level(logging.DEBUG, logger="solrace.server")
    argv = ["--port", str(listening_port), "--data-dir", str(tmp_path), "--log-level", "debug"]
    assert serve(capsys, *argv)[0] == 1
    [record] = [r for r in caplog.records if r.message == "start-up failed"]
    assert record.levelno == logging.DEBUG and record.exc_info is not None
    assert isinstance(record.exc_info[1], StartupError)
    assert isinstance(record.exc_info[1].__cause__, OSError)


def test_a_failed_start_removes_the_data_dir_it_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, listening_port: int
) -> None:
    fresh = tmp_path / "new" / "data"
    assert serve(capsys, "--port", str(listening_port), "--data-dir", str(fresh))[0] == 1
    assert list(tmp_path.iterdir()) == []  # "new" went too: this start made it
    # A folder that was there before keeps what it had, and what the start added.
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes").write_text("mine")
    assert serve(capsys, "--port", str(listening_port), "--data-dir", str(kept))[0] == 1
    assert (kept / "notes").read_text() == "mine"
    assert (kept / "secret").exists()


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


def test_a_port_out_of_range_names_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--port", "99999", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        ["solrace serve: error: invalid --port 99999: Input should be less than or equal to 65535"],
    )
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_a_bad_environment_value_names_the_variable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOLRACE_PORT", "abc")
    monkeypatch.setenv("SOLRACE_SEND_BUFFER_BYTES", "10")
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert code == 2
    assert lines == [
        "solrace serve: error: invalid SOLRACE_PORT 'abc': Input should be a valid integer, "
        "unable to parse string as an integer",
        "solrace serve: error: invalid SOLRACE_SEND_BUFFER_BYTES '10': "
        "Input should be greater than or equal to 1024",
    ]


def test_durations_that_are_not_finite_or_past_a_week_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An infinite countdown passed the settings once and then broke every race created
    (an integer overflow on the race's clock)."""
    code, lines = serve(capsys, "--countdown-s", "inf", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        ["solrace serve: error: invalid --countdown-s inf: Input should be a finite number"],
    )
    monkeypatch.setenv("SOLRACE_GRACE_S", "1e300")
    monkeypatch.setenv("SOLRACE_TICK_S", "nan")
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert (code, sorted(lines)) == (
        2,
        [
            "solrace serve: error: invalid SOLRACE_GRACE_S '1e300': at most 604800 seconds "
            "(a week)",
            "solrace serve: error: invalid SOLRACE_TICK_S 'nan': Input should be a finite number",
        ],
    )
    assert list(tmp_path.iterdir()) == []


def test_time_limits_out_of_order_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--min-time-limit-s", "100000", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [
            "solrace serve: error: the shortest time limit (100000 s: --min-time-limit-s, "
            "SOLRACE_MIN_TIME_LIMIT_S) is above the longest (14400 s: SOLRACE_MAX_TIME_LIMIT_S): "
            "every race would be refused"
        ],
    )


def test_origins_that_are_not_a_json_list_say_how_to_write_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOLRACE_ORIGINS", "https://x.org")
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert code == 2
    assert lines == [
        "solrace serve: error: invalid SOLRACE_ORIGINS 'https://x.org': Input should be a valid "
        """list (a JSON list: SOLRACE_ORIGINS='["https://example.org"]')"""
    ]


def test_no_origins_are_refused_not_taken_for_any(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty list of origins (an unset variable in a compose file) would accept every
    Origin as if the check were not asked for: refused, as `--origins` with no value."""
    monkeypatch.setenv("SOLRACE_ORIGINS", "[]")
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [
            "solrace serve: error: invalid SOLRACE_ORIGINS []: empty: it would accept every "
            "Origin, as no setting does; name the ones to accept (a JSON list: "
            """SOLRACE_ORIGINS='["https://example.org"]')"""
        ],
    )
    monkeypatch.delenv("SOLRACE_ORIGINS")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--origins"])
    assert "--origins: expected at least one argument" in capsys.readouterr().err


def test_an_unknown_log_level_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--log-level", "loud", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [
            "solrace serve: error: invalid --log-level 'loud': "
            "not a log level (one of DEBUG, INFO, WARNING, ERROR, CRITICAL)"
        ],
    )
    assert Settings(log_level="debug").log_level == "DEBUG"


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


def test_a_broker_without_a_redis_store_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nodes linked by a broker but each on its own SQLite file share events and presence
    but none of their races."""
    argv = ["--port", "0", "--data-dir", str(tmp_path), "--broker", "redis://:pw@10.0.0.5/0"]
    code, lines = serve(capsys, *argv)
    assert (code, lines) == (
        2,
        [
            "solrace serve: error: --broker links nodes that keep their races in a Redis, not "
            "in sqlite: keep them there too (--redis), or run one node without --broker"
        ],
    )


REDIS_FORMS = "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or unix://PATH (a Redis socket)"


@pytest.mark.parametrize(
    ("argv", "environment", "refusal"),
    [
        (
            ["--redis", "redis+unix:///run/redis.sock"],
            {},
            "invalid --redis 'redis+unix:///run/redis.sock': not a Redis URL; accepted: "
            f"{REDIS_FORMS}",
        ),
        (
            [],
            {"SOLRACE_REDIS": "http://:hunter2@10.0.0.5:6379/0"},
            "invalid SOLRACE_REDIS 'http://***@10.0.0.5:6379/0': not a Redis URL; accepted: "
            f"{REDIS_FORMS}",
        ),
        (
            ["--broker", "redis+unix:///run/redis.sock"],
            {},
            "invalid --broker 'redis+unix:///run/redis.sock': not a broker URL; accepted: "
            f"memory: (one node), {REDIS_FORMS}",
        ),
    ],
)
def test_a_redis_url_of_another_scheme_is_named_with_the_schemes_taken(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    environment: dict[str, str],
    refusal: str,
) -> None:
    """The option given is named, not --broker (which was not given, or not the mistake)."""
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path), *argv)
    assert (code, lines) == (2, [f"solrace serve: error: {refusal}"])


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


def test_operations_md_lists_every_setting_and_flag() -> None:
    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    missing = [
        f"SOLRACE_{n.upper()}" for n in Settings.model_fields if f"SOLRACE_{n.upper()}`" not in text
    ]
    assert missing == []
    flags = [o for a in build_parser()._actions for o in a.option_strings if o.startswith("--")]
    assert [f for f in flags if f not in ("--help",) and f"`{f}`" not in text] == []


def test_pings_need_a_positive_period() -> None:
    """0 would spin the transport's watchdog (it sleeps a quarter of the period)."""
    for name in ("ping_interval_s", "ping_timeout_s"):
        zero: dict[str, Any] = {name: 0}
        with pytest.raises(ValidationError, match="greater than 0"):
            Settings(**zero)
        off: dict[str, Any] = {name: None}
        assert getattr(Settings(**off), name) is None


def test_a_secret_file_that_is_not_a_whole_secret_is_refused_never_used(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Tokens signed with an empty key could be made by anyone: a secret file left empty (a
    start that failed while writing it, before it was written whole) stops the node."""
    (tmp_path / "secret").write_text("")
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path))
    assert code == 1
    assert lines == [
        f"solrace serve: error: the token secret {tmp_path / 'secret'} is empty or cut short "
        "(0 characters, at least 16): restore it from a backup, or remove it to make a new one "
        "(every player's token then stops working)"
    ]


def test_a_secret_file_that_is_not_text_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Random bytes written as they come (head -c 32 /dev/urandom > secret) are no secret the
    node can read: it says so and how to make one."""
    (tmp_path / "secret").write_bytes(bytes(range(16)) + b"\x92\xff" + bytes(range(16)))
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path))
    path = tmp_path / "secret"
    assert (code, lines) == (
        1,
        [
            f"solrace serve: error: the token secret {path} is not text (byte 16 is not UTF-8): "
            f"write 16 characters or more into it (openssl rand -hex 32 > {path}), or remove it "
            "to make a new one (every player's token then stops working)"
        ],
    )
    assert path.read_bytes()[16:18] == b"\x92\xff"  # left as it was


def test_the_secret_file_is_made_whole_and_private(tmp_path: Path) -> None:
    secret = load_secret(Settings(data_dir=tmp_path))
    path = tmp_path / "secret"
    assert len(secret) == 64 and path.read_text() == secret.decode()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no draft left beside it
    assert load_secret(Settings(data_dir=tmp_path)) == secret  # made once


def test_a_short_secret_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, lines = serve(capsys, "--port", "0", "--data-dir", str(tmp_path), "--secret", "x")
    assert code == 2 and "secret" in lines[-1] and "16 characters" in lines[-1]


def test_a_short_admin_token_is_refused_as_a_short_secret_is(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    listening_port: int,
) -> None:
    """Anyone holding the admin token runs every tournament: it needs the secret's length.
    (The port is taken: a node that took the token would stop there, exit 1.)"""
    with pytest.raises(ValidationError):
        Settings(admin_token="x" * (SECRET_MIN_CHARS - 1))
    argv = ["--port", str(listening_port), "--data-dir", str(tmp_path), "--secret", "s" * 16]
    assert serve(capsys, *argv, "--admin-token", "t0ken") == (
        2,
        [
            "solrace serve: error: invalid --admin-token (given, not shown): String should "
            "have at least 16 characters"
        ],
    )
    monkeypatch.setenv("SOLRACE_ADMIN_TOKEN", "x" * (SECRET_MIN_CHARS - 1))
    assert serve(capsys, *argv) == (
        2,
        [
            "solrace serve: error: invalid SOLRACE_ADMIN_TOKEN (given, not shown): String "
            "should have at least 16 characters"
        ],
    )
    assert list(tmp_path.iterdir()) == []  # refused before anything was made
    assert Settings(admin_token="x" * SECRET_MIN_CHARS).admin_token == "x" * SECRET_MIN_CHARS


def test_a_variable_that_sets_nothing_is_named_with_the_setting_it_may_mean() -> None:
    environment = {
        "SOLRACE_MAX_CONNECTIONS_PER_ADRESS": "0",  # misspelt: the limit would stay on
        "SOLRACE_PORT": "9000",
        "SOLRACE_CONFIG_DIR": "/tmp/c",  # the client's
        "SOLRACE_USER_DATA_DIR": "/tmp/d",  # the client's (not the server's SOLRACE_DATA_DIR)
        "SOLRACE_NODE2": "127.0.0.1:8772",  # the cluster script's
        "SOLRACE_WHATEVER": "1",
        "solrace_port": "9000",  # the settings read their variables in any case
        "PATH": "/bin",
    }
    assert unknown_settings(environment) == [
        "SOLRACE_MAX_CONNECTIONS_PER_ADRESS is no setting of the server: ignored: did you mean "
        "SOLRACE_MAX_CONNECTIONS_PER_ADDRESS?",
        "SOLRACE_WHATEVER is no setting of the server: ignored",
    ]


def test_two_stores_at_once_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A node on its own SQLite file that joined the Redis of other nodes shared their events
    and presence but none of their races."""
    argv = ["--store", f"sqlite:{tmp_path / 's.sqlite3'}", "--redis", "redis://127.0.0.1:1/0"]
    code, lines = serve(capsys, *argv, "--data-dir", str(tmp_path))
    assert code == 2
    assert lines == [
        "solrace serve: error: --store and --redis name two stores: nodes on a Redis keep "
        "everything in it (--redis alone), a node on its own keeps it in its --store (without "
        "--redis)"
    ]


def test_a_flag_it_cannot_read_is_one_line_not_the_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--port", "abc"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "solrace serve: error: argument --port: invalid int value: 'abc' (solrace serve --help "
        "lists the flags)"
    ]


@pytest.mark.parametrize(
    ("variable", "value"),
    [("SOLRACE_SECRET", "almost-the-real"), ("SOLRACE_SECRET", "short")],
)
def test_a_refused_secret_is_named_not_shown(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    """A typo of the real secret was echoed to stderr (and so to the service's journal)."""
    monkeypatch.setenv(variable, value)
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"solrace serve: error: invalid {variable} ")
    assert value not in lines[0] and "(given, not shown)" in lines[0]
    code, lines = serve(capsys, "--data-dir", str(tmp_path), "--secret", value)
    assert code == 2 and len(lines) == 1 and value not in lines[0], lines


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
