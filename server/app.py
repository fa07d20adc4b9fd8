"""The composition root: settings -> store -> hub -> transport, and `solrace serve`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import errno
import gc
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError
from pydantic_settings import SettingsError

from solrace.engine import EngineError
from solrace.server.admission import fit_to_descriptors
from solrace.server.broker import Broker, BrokerError, BrokerUnavailableError, open_broker
from solrace.server.http_head import DEFAULT_WS_PATH
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.os_errors import describe_os_error
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.tokens import secret_fingerprint
from solrace.server.ratings import RatingService
from solrace.server.settings import LOG_LEVELS, SECRET_MIN_CHARS, Settings
from solrace.server.store import StoreError, StoreLockedError, StoreUnavailableError, open_store
from solrace.server.store.sqlite_files import link_to_nothing
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournaments import TournamentService
from solrace.server.transport import Transport

log = logging.getLogger("solrace.server")


class StartupError(Exception):
    """The node cannot start for a reason the operator can fix (a port in use, a data
    folder it cannot write, an unreachable Redis, ...): the message says which, in one line."""


class StoreBusyError(StartupError):
    """Another server holds the node's SQLite file (one server a file): its process id, when
    the lock says it."""

    def __init__(self, message: str, holder_pid: int | None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


#: Exit status of a start interrupted by Ctrl-C: what a shell reports for SIGINT (128 + 2).
INTERRUPTED_STATUS = 130

#: Characters of the secret a node makes for itself (`<data_dir>/secret`: 32 random bytes).
SECRET_FILE_CHARS = 64


def load_secret(settings: Settings) -> bytes:
    """The token secret: from settings, else `<data_dir>/secret` (made once, mode 0600).

    The file appears whole or not at all (written beside it, then linked to its name), so a
    start that fails while writing it (a full disk) leaves no empty secret behind; a file
    that is not a whole secret is refused, never used: tokens signed with an empty key could
    be made by anyone. `StartupError` says so; `OSError` for a data dir it cannot use. A file
    other users may read or write is used, with a warning."""
    if settings.secret:
        return settings.secret.encode()
    if settings.store_url() == "memory:":
        return secrets.token_bytes(32)
    path = Path(settings.data_dir) / "secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".secret.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:  # said of the secret, not of its draft
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(SECRET_FILE_CHARS // 2))
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another start made it first
                os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)
    try:
        secret = path.read_text().strip()
    except UnicodeDecodeError as exc:  # raw random bytes (head -c 32 /dev/urandom > secret)
        raise StartupError(
            f"the token secret {path} is not text (byte {exc.start} is not UTF-8): write "
            f"{SECRET_MIN_CHARS} characters or more into it (openssl rand -hex 32 > {path}), or "
            "remove it to make a new one (every player's token then stops working)"
        ) from exc
    if len(secret) < SECRET_MIN_CHARS:
        raise StartupError(
            f"the token secret {path} is empty or cut short ({len(secret)} characters, at "
            f"least {SECRET_MIN_CHARS}): restore it from a backup, or remove it to make a new "
            "one (every player's token then stops working)"
        )
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:  # as `openssl rand -hex 32 > secret` makes it, under the usual umask
        log.warning(
            "the token secret %s is open to other users (mode %03o): whoever reads it can "
            "sign in as any player; chmod 600 %s",
            path,
            mode,
            path,
        )
    return secret.encode()


def redact(url: str) -> str:
    """A URL fit for logs: no password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


class App:
    """One server node: start, serve, stop cleanly.

    `StartupError` (from here or from `start`) is a setting or environment problem, told in
    one line; with the SQLite store, `start` refuses a data file that another live server
    holds (`<data-dir>/solrace.sqlite3.lock`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        try:
            # One node per SQLite file: the store holds its lock file while open.
            self.store = open_store(settings.store_url(), exclusive=True)
            self.broker: Broker | None = (
                open_broker(settings.broker_url()) if settings.is_cluster else None
            )
        except ValueError as exc:
            raise StartupError(str(exc)) from exc
        try:
            secret = load_secret(settings)
        except OSError as exc:
            data_dir = settings.data_dir
            if broken_link := link_to_nothing(data_dir):
                reason = broken_link
            elif data_dir.exists() and not data_dir.is_dir():
                reason = "it is a file, not a folder"
            else:
                reason = describe_os_error(exc)
            raise StartupError(f"cannot use the data dir {data_dir}: {reason}") from exc
        self.hub = Hub(self.store, settings, self.metrics, secret, broker=self.broker)
        self.ratings = RatingService(self.store)
        self.tournaments = TournamentService(HubRaceHost(self.hub, self.broker), self.ratings)
        self.hub.plug_in(
            handlers=self.ratings.handlers,
            race_finished=self.ratings.race_finished,
            ratings_of=self.ratings.display_ratings,
        )
        self.hub.plug_in(
            handlers=self.tournaments.handlers,
            race_finished=self.tournaments.race_finished,
            watch_check=self.tournaments.check_watch,
            session_closed=self.tournaments.views.session_closed,
        )
        self.transport = Transport(self.hub, settings, self.metrics)
        #: What `start` started, each with how it stops: `stop` stops them in reverse order.
        self._running = contextlib.AsyncExitStack()
        #: While a node on Redis stops: when (event loop time) the parts still stopping are
        #: cut short, and what each cut-short part left undone (`_stop_part`).
        self._stop_deadline: float | None = None
        self._cut_short: list[str] = []

    @property
    def port(self) -> int:
        return self.transport.port

    async def start(self) -> None:
        """Open the store and the broker, recover races, listen. What started before a
        failure is stopped again (in reverse order) before the error propagates. Each part
        is pushed with its stop as it starts: the one list `stop` unwinds too."""
        async with contextlib.AsyncExitStack() as undo:
            await self._open_store()
            undo.push_async_callback(self._stop_part, "closing the store", self.store.close)
            await self._check_secret()
            if self.broker is not None:
                await self._open_broker(self.broker)
                undo.push_async_callback(self._stop_part, "closing the broker", self.broker.close)
            with self._loading_stored_data():
                await self.hub.start()
                undo.push_async_callback(
                    self._stop_part,
                    "storing the last progress batches and withdrawing this node's presence",
                    self._stop_hub,
                )
                await self.ratings.start()
                undo.push_async_callback(self._stop_part, "stopping the ratings", self.ratings.stop)
                await self.tournaments.start()
                undo.push_async_callback(
                    self._stop_part, "stopping the tournaments", self.tournaments.stop
                )
            await self._listen()
            undo.push_async_callback(
                self._stop_part,
                "storing the closed connections' racers as away",
                self.transport.wait_closed_sessions,
            )
            undo.push_async_callback(self._close_clients)
            self._running = undo.pop_all()
        ws_path = self.settings.ws_path
        log.info(
            "listening on ws://%s:%d%s (store %s, broker %s, node %s)",
            f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host,
            self.port,
            "" if ws_path == DEFAULT_WS_PATH else ws_path,  # ws://HOST:PORT asks for /
            redact(self.settings.store_url()),
            redact(self.settings.broker_url()),
            self.hub.node_id,
        )

    async def _open_store(self) -> None:
        url = redact(self.settings.store_url())
        try:
            await self.store.open()
        except StoreLockedError as exc:
            raise StoreBusyError(str(exc), exc.holder_pid) from exc
        except StoreError as exc:
            if url.startswith("sqlite:"):  # its message names the file (locked, unreadable, ...)
                raise StartupError(str(exc)) from exc
            if isinstance(exc, StoreUnavailableError):
                raise StartupError(f"cannot reach Redis at {url} ({exc.__cause__ or exc})") from exc
            raise StartupError(f"{url}: {exc}") from exc

    @contextlib.contextmanager
    def _loading_stored_data(self) -> Iterator[None]:
        """While the races, the races to rate and the tournaments are loaded: the store
        failing, or holding what this version cannot read (a record that does not parse, a
        move its rules refuse: written by a newer version, or damaged), is a `StartupError`
        naming the store. Nothing is changed or dropped: the operator decides."""
        url = redact(self.settings.store_url())
        cannot_read = (
            "written by a newer solrace, or damaged: start the version that wrote it, or "
            "restore a backup"
        )
        try:
            yield
        except StoreError as exc:
            raise StartupError(f"cannot load the races and tournaments of {url}: {exc}") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            reason = f"{where}: {first['msg']}" if where else first["msg"]
            raise StartupError(
                f"{url} holds a {exc.title} this version cannot read ({reason}): {cannot_read}"
            ) from exc
        except EngineError as exc:
            raise StartupError(
                f"{url} holds a move this version's rules refuse ({exc}): {cannot_read}"
            ) from exc

    async def _check_secret(self) -> None:
        """Several nodes must sign tokens with one secret, or a player's token from one node
        is refused by the next: the first node's is noted in the store, and a node with
        another one does not start."""
        ours = secret_fingerprint(self.hub.secret)
        try:
            theirs = await self.store.claim_secret(ours)
        except StoreError as exc:
            raise StartupError(f"{redact(self.settings.store_url())}: {exc}") from exc
        if theirs != ours:
            raise StartupError(
                "this node's token secret is not the one the other nodes on "
                f"{redact(self.settings.store_url())} sign with: give every node the same "
                "--secret (SOLRACE_SECRET; deploy/README.md). To change the secret of all of "
                "them, stop every node and delete the store's secret-fingerprint key"
            )

    async def _open_broker(self, broker: Broker) -> None:
        url = redact(self.settings.broker_url())
        try:
            await broker.open()
        except BrokerUnavailableError as exc:
            raise StartupError(f"cannot reach Redis at {url} ({exc.__cause__ or exc})") from exc
        except BrokerError as exc:  # a malformed URL, or one Redis refuses
            raise StartupError(f"{url}: {exc}") from exc

    async def _listen(self) -> None:
        host, port = self.settings.host, self.settings.port
        try:
            await self.transport.start()
        except socket.gaierror as exc:
            raise StartupError(f"cannot listen on {host!r}: unknown host ({exc.strerror})") from exc
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                message = f"port {port} on {host} is in use (another solrace serve?)"
            elif exc.errno == errno.EADDRNOTAVAIL:
                message = f"cannot listen on {host}: not an address of this machine"
            elif exc.errno == errno.EACCES:
                message = f"not allowed to listen on port {port} (ports below 1024 need privileges)"
            else:
                message = f"cannot listen on {host} port {port}: {describe_os_error(exc)}"
            raise StartupError(message) from exc

    async def stop(self) -> None:
        """Stop what `start` started, in reverse order: stop accepting and close clients with
        1012, stop the services and timers, close the broker, flush and close the store. A
        second call, or one after a failed start, has nothing left to stop.

        On Redis the work after the clients' goodbyes (which `close_timeout_s` bounds) takes
        at most `stop_timeout_s`: a Redis that does not answer (frozen, cut off) would
        otherwise hold each store call for its timeouts, one after another. What is still
        waiting on it then is given up, in one warning naming it; it is safe, as every
        acknowledged move was stored before its ack. SQLite and memory stores are flushed in
        full, however long it takes."""
        try:
            await self._running.aclose()
        finally:
            self._stop_deadline = None
        if self._cut_short:
            cut_short, self._cut_short = self._cut_short, []
            log.warning(
                "stopping: Redis did not answer within the stop deadline (%g s, "
                "SOLRACE_STOP_TIMEOUT_S); given up: %s. Safe: every acknowledged move is "
                "stored; a node starting on this Redis recomputes the progress and finishes "
                "from the stored moves, and this node's racers are marked away (their grace "
                "runs) once its presence runs out (SOLRACE_NODE_TTL_S)",
                self.settings.stop_timeout_s,
                "; ".join(cut_short),
            )
        log.info("stopped")

    async def _close_clients(self) -> None:
        """Stop accepting and close the clients with 1012, waiting for their goodbyes; then,
        on Redis, start the deadline of the rest of the stop (`stop_timeout_s`): a client
        that never answers takes none of the Redis work's time."""
        await self.transport.close_connections(CloseCode.SERVICE_RESTART)
        if self.settings.store_is_redis:
            loop = asyncio.get_running_loop()
            self._stop_deadline = loop.time() + self.settings.stop_timeout_s

    async def _stop_hub(self) -> None:
        """Stop the hub. Cut short (the stop's deadline), its race timers, the progress
        folds under way and the watch over the nodes are cancelled and waited for: none
        outlives the stop."""
        try:
            await self.hub.stop()
        except asyncio.CancelledError:
            if self.hub.presence is not None:
                await self.hub.presence.give_up()
            await self.hub.keeper.give_up()
            raise

    async def _stop_part(self, what: str, stop: Callable[[], Awaitable[object]]) -> None:
        """Stop one part (`stop`): in full, or while a node on Redis stops, until the stop's
        deadline; a part cut short there (or reached after it, which cuts it at its first
        wait) is noted as `what` it left undone."""
        deadline = self._stop_deadline
        if deadline is None:
            await stop()
            return
        in_time = asyncio.timeout_at(deadline)
        try:
            async with in_time:
                await stop()
        except TimeoutError:
            if not in_time.expired():
                raise  # the part's own timeout, not the deadline
            self._cut_short.append(what)


def tune_gc_for_serving() -> None:
    """Set the garbage collector up for a node that has started: call once, after start-up.

    What is loaded by now (modules, pydantic schemas, recovered races) lives as long as the
    process: frozen out of the collector's sight, every full collection under load skips
    those ~50,000 objects."""
    gc.collect()
    gc.freeze()
    # Young collections at the default threshold (700) cost ~15% of a node's throughput at
    # 1,000 connections (measured): the young generation is collected 70x less often.
    gc.set_threshold(50_000, 50, 100)


def first_missing_folder(path: Path) -> Path | None:
    """The outermost folder of `path` (itself or a parent) that does not exist yet: the one
    to remove to undo creating `path`; None if `path` exists."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


class StopSignals:
    """SIGTERM and SIGINT (Ctrl-C), handled from before the node starts, so that none finds
    it without a handler: while it starts, the first one cancels the start (`run` undoes it);
    once it serves (`started`), it asks for a clean stop (`stop`)."""

    def __init__(self, starting: asyncio.Task[Any] | None) -> None:
        #: The first signal received, if any.
        self.received: signal.Signals | None = None
        self.stop = asyncio.Event()
        self._starting = starting
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)

    def started(self) -> None:
        """The node serves: a signal now stops it cleanly."""
        self._starting = None

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.received is None:
            self.received = sig
        self.stop.set()
        if self._starting is not None:
            self._starting.cancel()
            self._starting = None


async def run(settings: Settings) -> int:
    # A node that cannot start, or is stopped while starting (Ctrl-C, SIGTERM: the start is
    # cancelled), leaves no trace: a data folder this start created (the secret, an empty
    # database) goes again, so a mistyped port or Redis URL is harmless to retry.
    created = first_missing_folder(settings.data_dir.absolute())
    signals = StopSignals(asyncio.current_task())
    try:
        app = App(fit_to_descriptors(settings))  # a process-wide limit: here, not in App
        await app.start()
    except (StartupError, asyncio.CancelledError):
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        if signals.received is signal.SIGINT:
            raise KeyboardInterrupt from None  # `main` says so: interrupted while starting
        if signals.received is signal.SIGTERM:
            print("solrace serve: stopped while starting (SIGTERM)", file=sys.stderr)
            return 0
        raise
    signals.started()
    # A process-wide choice, so here and not in App (tests run many in one process).
    tune_gc_for_serving()
    await signals.stop.wait()
    log.info("signal received: shutting down")
    await app.stop()
    return 0


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
        annotation = Settings.model_fields[setting].annotation
        kind: type[Any] = str
        # A path stays text: the settings read it, so `--data-dir ''` is refused as
        # SOLRACE_DATA_DIR='' is (argparse would make it `.`).
        for candidate in (bool, int, float):
            if annotation is candidate or candidate in getattr(annotation, "__args__", ()):
                kind = candidate
                break
        options: dict[str, Any] = {
            "help": f"{help_text} (default {default_text(setting)})",
            "metavar": metavar,
        }
        if setting == "origins":
            options["nargs"] = "+"  # none given would turn the check off, as unset does
        else:
            options["type"] = kind
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
