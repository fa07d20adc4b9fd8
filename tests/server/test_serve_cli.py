"""The command line of `solrace serve` (server/serve_cli.py): its flags, the settings they and
the environment give, their refusals in the operator's words, the variables that set nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from solrace.server.serve_cli import (
    build_parser,
    describe_settings_error,
    main,
    settings_from_args,
    unknown_settings,
)
from solrace.server.settings import MAX_PROGRESS_HOLD_S, SECRET_MIN_CHARS, Settings
from solrace.server.startup_errors import StartupError
from tests.server.serve_command import REDIS_FORMS, serve

pytestmark = pytest.mark.usefixtures("no_solrace_environment")


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


@pytest.mark.parametrize("module", ["solrace.server.serve_cli", "solrace.server.app"])
def test_the_server_runs_as_a_module(module: str) -> None:
    """`python -m solrace.server.app` (documented since before serve_cli.py existed) runs
    `solrace serve`, as `python -m solrace.server.serve_cli` does."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: solrace serve ")
    assert "SOLRACE_" in done.stdout


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


def test_a_port_out_of_range_names_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--port", "99999", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        ["solrace serve: error: invalid --port 99999: Input should be less than or equal to 65535"],
    )
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


FLOAT_FLAGS = [
    action.dest
    for action in build_parser()._actions
    if Settings.model_fields.get(action.dest) is not None
    and Settings.model_fields[action.dest].annotation is float
]


@pytest.mark.parametrize("setting", FLOAT_FLAGS)
def test_a_refused_number_is_said_as_typed(setting: str) -> None:
    """`--countdown-s -1` was refused as `-1.0`: argparse had read the text as a float."""
    flag = "--" + setting.replace("_", "-")
    for typed in ("-1", "-0.50"):
        args = build_parser().parse_args([flag, typed])
        with pytest.raises(ValidationError) as refused:
            settings_from_args(args)
        assert describe_settings_error(refused.value, args).startswith(
            f"invalid {flag} {typed}: Input should be greater than "
        )


def test_a_negative_countdown_is_said_as_typed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, lines = serve(capsys, "--countdown-s", "-1", "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [
            "solrace serve: error: invalid --countdown-s -1: Input should be greater than or "
            "equal to 0"
        ],
    )


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


def test_a_progress_hold_past_a_second_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held progress frame is what opponents see of a racer, that much later: 600 s passed
    once, and froze every opponent's progress between their own frames."""
    why = (
        "at most 1 second: the other racers and the spectators would see a racer's progress "
        "that much later (0: sent at once)"
    )
    code, lines = serve(capsys, "--progress-hold-s", "600", "--data-dir", str(tmp_path))
    assert (code, lines) == (2, [f"solrace serve: error: invalid --progress-hold-s 600: {why}"])
    monkeypatch.setenv("SOLRACE_PROGRESS_HOLD_S", "1.5")
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [f"solrace serve: error: invalid SOLRACE_PROGRESS_HOLD_S '1.5': {why}"],
    )
    assert list(tmp_path.iterdir()) == []
    assert Settings(progress_hold_s=MAX_PROGRESS_HOLD_S).progress_hold_s == 1.0
    helps = {a.dest: a.help or "" for a in build_parser()._actions}
    assert "(up to 1); 0: at once (default 0.1)" in helps["progress_hold_s"]


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


def test_operations_md_lists_every_setting_and_flag() -> None:
    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    missing = [
        f"SOLRACE_{n.upper()}" for n in Settings.model_fields if f"SOLRACE_{n.upper()}`" not in text
    ]
    assert missing == []
    flags = [o for a in build_parser()._actions for o in a.option_strings if o.startswith("--")]
    assert [f for f in flags if f not in ("--help",) and f"`{f}`" not in text] == []


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


def test_the_same_redis_url_as_store_and_redis_is_one_store() -> None:
    """`--store URL --redis URL` names one store (docs/operations.md, "Start-up errors"): taken,
    the Redis the node keeps everything in and links through."""
    url = "redis://127.0.0.1:6379/0"
    settings = Settings(store=url, redis=url)
    assert (settings.store_url(), settings.broker_url()) == (url, url)


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


def test_a_seat_count_past_the_wire_s_integers_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A race's seats go to clients, whose integers end at 2**31 - 1."""
    name = "SOLRACE_MAX_SEATS"
    monkeypatch.setenv(name, str(2**31))
    code, lines = serve(capsys, "--data-dir", str(tmp_path))
    assert (code, lines) == (
        2,
        [
            f"solrace serve: error: invalid {name} '2147483648': Input should be less than "
            "or equal to 2147483647"
        ],
    )
    monkeypatch.setenv(name, str(2**31 - 1))
    assert Settings().max_seats == 2**31 - 1
