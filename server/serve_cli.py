"""The command line of `solrace serve`: its flags (`build_parser`), the settings they and the
environment give (`settings_from_args`), what is wrong with them in the operator's words, the
`SOLRACE_*` variables that set nothing, and `main`, with its exit statuses."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError
from pydantic_settings import SettingsError

from solrace.server.serve_process import run
from solrace.server.settings import LOG_LEVELS, MAX_PROGRESS_HOLD_S, SECRET_MIN_CHARS, Settings
from solrace.server.startup_errors import StartupError
from solrace.server.url_redaction import redact

__all__ = [
    "INTERRUPTED_STATUS",
    "build_parser",
    "default_text",
    "describe_settings_error",
    "main",
    "settings_from_args",
    "unknown_settings",
]

# The node itself (docs/operations.md, "Loggers"), as in app.py.
log = logging.getLogger("solrace.server")

#: Exit status of a start interrupted by Ctrl-C: what a shell reports for SIGINT (128 + 2).
INTERRUPTED_STATUS = 130


#: The flags of `solrace serve`: (setting, metavar, help); the help's "(default ...)" is the
#: setting's. Every other setting is read from the environment only (docs/operations.md lists
#: them all).
SERVE_FLAGS: tuple[tuple[str, str, str], ...] = (
    (
        "host",
        "HOST",
        "interface to listen on: an address or name of this machine, 0.0.0.0 for every one",
    ),
    ("port", "PORT", "TCP port; 0: any free one, which the log names"),
    (
        "ws_path",
        "PATH",
        "the path clients connect to, ws://HOST:PORT/PATH: behind a proxy that forwards its "
        "prefix unchanged, that prefix; a handshake on another path is answered 404",
    ),
    ("data_dir", "DIR", "folder of the SQLite database, its lock and the token secret"),
    (
        "store",
        "URL",
        "where races, players and ratings are kept: sqlite:PATH, redis://HOST:PORT/DB "
        "(several nodes), or memory:, which keeps nothing after exit",
    ),
    ("redis", "URL", "redis://[:PASSWORD@]HOST:PORT/DB: store and broker of several nodes"),
    ("broker", "URL", "live events between nodes: memory: (one node) or redis://..."),
    (
        "secret",
        "SECRET",
        f"token signing secret, {SECRET_MIN_CHARS} characters or more, the same on every node "
        "of one Redis; SOLRACE_SECRET keeps it out of ps",
    ),
    ("log_level", "LEVEL", f"{', '.join(LOG_LEVELS[:-1])} or {LOG_LEVELS[-1]}, any case"),
    (
        "max_frame_bytes",
        "BYTES",
        "largest message a client may send; a larger one closes its connection with 1009",
    ),
    (
        "rate_capacity",
        "N",
        "messages (frames) a connection may send at once; one more closes it with 1008",
    ),
    ("rate_refill_per_s", "N", "messages per second a connection may send after that"),
    ("idle_timeout_s", "SECONDS", "close a connection that sends nothing for this long, with 4004"),
    (
        "stop_timeout_s",
        "SECONDS",
        "on Redis: a stop (SIGTERM) gives up the Redis work left this long after the clients close",
    ),
    (
        "origins",
        "ORIGIN",
        "browser Origin values accepted, space between them; a client sending none is accepted",
    ),
    ("max_connections", "N", "open connections on the node; one more is answered 503"),
    (
        "max_connections_per_address",
        "N",
        "open connections from one IP address, 429 past it; 0: no per-address limits, for a "
        "node behind a proxy",
    ),
    ("connect_burst", "N", "handshakes one IP address may make at once, 429 past it"),
    ("connect_per_s", "N", "handshakes per second one IP address may make after that"),
    ("countdown_s", "SECONDS", "countdown before a race starts"),
    ("grace_s", "SECONDS", "how long a racer may be away before forfeiting as gone"),
    ("spectator_delay_casual_s", "SECONDS", "how late spectators see the boards of a casual race"),
    ("spectator_delay_rated_s", "SECONDS", "how late spectators see the boards of a rated race"),
    (
        "progress_interval_s",
        "SECONDS",
        "fold racers' moves into their progress this often; 0: each move",
    ),
    (
        "progress_hold_s",
        "SECONDS",
        "a racer's progress waits at most this long to share a write with another frame "
        f"(up to {MAX_PROGRESS_HOLD_S:g}); 0: at once",
    ),
    ("min_time_limit_s", "SECONDS", "shortest time limit a race or tournament may ask for"),
    (
        "admin_token",
        "TOKEN",
        f"tournament admin token, {SECRET_MIN_CHARS} characters or more; SOLRACE_ADMIN_TOKEN "
        "keeps it out of ps",
    ),
    ("max_tournament_players", "N", "most players one tournament may register"),
)

#: Said for a setting whose default is None (worked out at start, or none).
UNSET_DEFAULTS = {
    "store": "sqlite:<data-dir>/solrace.sqlite3",
    "redis": "none: one node",
    "broker": "the Redis of --redis or --store, else memory:",
    "secret": "<data-dir>/secret, created once",
    "origins": "any",
    "admin_token": "none, no tournaments",
}


def default_text(setting: str) -> str:
    """A setting's default as `--help` says it: from `Settings`, so the two cannot drift."""
    default = Settings.model_fields[setting].default
    if default is None:
        return UNSET_DEFAULTS[setting]
    if isinstance(default, Path):
        return f"./{default}"
    if isinstance(default, float):
        return f"{default:g}"
    return f"{default:,}" if isinstance(default, int) and default >= 10_000 else str(default)


def _flag_kind(setting: str) -> type[Any]:
    """What a flag's text must read as: the setting's number type, else text. A path stays
    text: the settings read it, so `--data-dir ''` is refused as SOLRACE_DATA_DIR='' is
    (argparse would make it `.`)."""
    annotation = Settings.model_fields[setting].annotation
    for candidate in (bool, int, float):
        if annotation is candidate or candidate in getattr(annotation, "__args__", ()):
            return candidate
    return str


def _as_typed(kind: type[Any]) -> Callable[[str], str]:
    """A flag's argparse type: text that does not read as `kind` is refused by argparse
    (`invalid int value: 'abc'`), and the text is kept as typed, for the settings to read as
    they read `SOLRACE_*` and for a refusal to say it as the operator wrote it (`-1`, not
    `-1.0`)."""

    def typed(text: str) -> str:
        kind(text)  # a ValueError is argparse's refusal
        return text

    typed.__name__ = kind.__name__  # argparse's words: "invalid float value"
    return typed


class _OneLineParser(argparse.ArgumentParser):
    """A flag it cannot read is one line on stderr (exit 2), as a setting out of range is,
    not the whole usage text."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the flags)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="solrace serve",
        description="Run the race server. Every flag also reads SOLRACE_<NAME> from the "
        "environment (e.g. SOLRACE_PORT=9000); flags win. More settings are read from the "
        "environment only (SOLRACE_MAX_SEATS, SOLRACE_NODE_TTL_S, ...): docs/operations.md "
        "lists every one.",
    )
    for setting, metavar, help_text in SERVE_FLAGS:
        options: dict[str, Any] = {
            "help": f"{help_text} (default {default_text(setting)})",
            "metavar": metavar,
        }
        if setting == "origins":
            options["nargs"] = "+"  # none given would turn the check off, as unset does
        else:
            options["type"] = _as_typed(_flag_kind(setting))
        parser.add_argument("--" + setting.replace("_", "-"), **options)
    return parser


#: `SOLRACE_*` variables that are not the server's settings but are the client's or the
#: scripts' (`docs/client.md`, `deploy/local-cluster.sh`, the tests).
OTHER_VARIABLES = frozenset(
    {
        "SOLRACE_CONFIG_DIR",
        "SOLRACE_USER_DATA_DIR",
        "SOLRACE_REQUIRE_REDIS",
        "SOLRACE_CLUSTER_DIR",
        "SOLRACE_LB_BIND",
        "SOLRACE_LB_PORT",
        "SOLRACE_NODE_PORT",
        "SOLRACE_REDIS_PORT",
    }
)


def unknown_settings(environment: Mapping[str, str]) -> list[str]:
    """A line for each `SOLRACE_*` variable that sets nothing (a misspelt name would leave
    its setting at the default without a word), with the setting it may have meant."""
    known = {f"SOLRACE_{name.upper()}" for name in Settings.model_fields}
    lines = []
    for variable in sorted(environment):
        name = variable.upper()  # the settings read their variables in any case
        if not name.startswith("SOLRACE_") or name in known | OTHER_VARIABLES:
            continue
        if name.removeprefix("SOLRACE_NODE").isdigit():  # the cluster script's HAProxy
            continue
        names = sorted(name.upper() for name in Settings.model_fields)
        # 0.7: two letters swapped in a short name (PROT, HSOT) are still near
        near = difflib.get_close_matches(name.removeprefix("SOLRACE_"), names, 1, 0.7)
        meant = f": did you mean SOLRACE_{near[0]}?" if near else ""
        lines.append(f"{variable} is no setting of the server: ignored{meant}")
    return lines


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {k: v for k, v in vars(args).items() if v is not None}
    return Settings(**overrides)


#: Settings whose values are never echoed: the token secret and the admin token.
HIDDEN_SETTINGS = frozenset({"secret", "admin_token"})


def describe_settings_error(exc: ValidationError | SettingsError, args: argparse.Namespace) -> str:
    """What is wrong with the settings, one setting per line, named as the operator wrote it
    (`--port` when the flag was given, else `SOLRACE_PORT`)."""
    if isinstance(exc, SettingsError):  # a value pydantic-settings could not even parse
        return str(exc)
    lines = []
    for error in exc.errors():
        why = error["msg"].removeprefix("Value error, ")  # a validator's own words
        if not error["loc"]:  # settings that do not go together: the validator names them
            lines.append(why)
            continue
        field = str(error["loc"][0])
        if getattr(args, field, None) is not None:
            name = "--" + field.replace("_", "-")
        else:
            name = "SOLRACE_" + field.upper()
        if field == "origins":
            why += """ (a JSON list: SOLRACE_ORIGINS='["https://example.org"]')"""
        given = error.get("input")
        if field in HIDDEN_SETTINGS:  # a typo of the real one would end up in the logs
            shown = "(given, not shown)"
        elif name.startswith("--") and _flag_kind(field) in (int, float):
            shown = str(given)  # a number as typed, as argparse's own refusals say it
        elif isinstance(given, str):
            shown = repr(redact(given))
        else:
            shown = repr(given)
        lines.append(f"invalid {name} {shown}: {why}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`solrace serve [flags]`. Exit status: 0 after a clean shutdown (SIGTERM or Ctrl-C; a
    SIGTERM while it starts undoes the start and exits 0 too), 2 for invalid settings, 1 when
    the node cannot start (one line on stderr says why; the traceback is logged at DEBUG), 130
    when Ctrl-C interrupts its start."""
    args = build_parser().parse_args(list(argv) if argv is not None else sys.argv[1:])
    try:
        settings = settings_from_args(args)
    except (ValidationError, SettingsError) as exc:
        for line in describe_settings_error(exc, args).splitlines():
            print(f"solrace serve: error: {line}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for line in unknown_settings(os.environ):
        log.warning("%s", line)
    try:
        return asyncio.run(run(settings))
    except StartupError as exc:
        log.debug("start-up failed", exc_info=True)
        print(f"solrace serve: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C once started is a clean stop (`run`): this is before
        print("solrace serve: interrupted while starting", file=sys.stderr)
        return INTERRUPTED_STATUS


if __name__ == "__main__":
    raise SystemExit(main())
