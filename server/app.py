"""The composition root: settings -> store -> hub -> transport, one serving node (`App`): its
start and its stop. `solrace serve` runs it (`serve_cli.py`, `serve_process.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError
from redis.exceptions import AuthenticationError

from solrace.engine import EngineError
from solrace.server.broker import Broker, BrokerError, BrokerUnavailableError, open_broker
from solrace.server.http_head import DEFAULT_WS_PATH
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.node_secret import load_secret
from solrace.server.os_errors import describe_os_error
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.tokens import secret_fingerprint
from solrace.server.ratings import RatingService
from solrace.server.settings import Settings
from solrace.server.startup_errors import StartupError, StoreBusyError
from solrace.server.store import StoreError, StoreLockedError, StoreUnavailableError, open_store
from solrace.server.store.sqlite_files import link_to_nothing
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournaments import TournamentService
from solrace.server.transport import Transport
from solrace.server.url_redaction import redact

__all__ = ["App"]

log = logging.getLogger("solrace.server")


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
            self.store = open_store(settings.store_url())
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
        """Open the store and the broker, recover races (and apply what fell due while the
        node was down: `RaceKeeper.settle_due`), listen. What started before a
        failure is stopped again (in reverse order) before the error propagates. Each part
        is pushed with its stop as it starts: the one list `stop` unwinds too."""
        async with contextlib.AsyncExitStack() as undo:
            await self._open_store()
            undo.push_async_callback(self._stop_part, "closing the store", self.store.close)
            if self.broker is not None:
                await self._open_broker(self.broker)
                undo.push_async_callback(self._stop_part, "closing the broker", self.broker.close)
            await self._check_secret()
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
                # What fell due while the node was down (a time limit), before any client
                # sees the race: with the services started, whose finish hooks it runs.
                await self.hub.keeper.settle_due()
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
                raise _redis_away(self.settings.store_url(), exc) from exc
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
        another one does not start. Nor does one while nodes alive note another with their
        presence (`Broker.node_secrets`), even if the store notes none (the key deleted by
        hand, or evicted): it would note its own, and the nodes alive would find their secret
        refused. A Redis restarted without its data lost the presences too: until the nodes
        alive note both again (`NodePresence`), neither is there to check."""
        ours = secret_fingerprint(self.hub.secret)
        if self.broker is not None:
            try:
                secrets = await self.broker.node_secrets()
            except BrokerError as exc:
                raise StartupError(f"{redact(self.settings.broker_url())}: {exc}") from exc
            if differ := sorted(node for node, theirs in secrets.items() if theirs != ours):
                # A node killed (kill -9, a crash) keeps its presence until its time is up.
                ttl = f"{self.settings.node_ttl_s:g} s"
                raise StartupError(
                    "this node's token secret is not the one the other nodes on "
                    f"{redact(self.settings.store_url())} sign with (node(s) alive, or killed "
                    f"less than SOLRACE_NODE_TTL_S ({ttl}) ago, with another: "
                    f"{', '.join(differ)}): give every node the same --secret "
                    f"(SOLRACE_SECRET; deploy/README.md), or wait {ttl} if that node is gone"
                )
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
            raise _redis_away(self.settings.broker_url(), exc) from exc
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


def _redis_away(url: str, exc: StoreError | BrokerError) -> StartupError:
    """Why the Redis at `url` could not be used, for the operator: it asks for a password the
    URL lacks, or refused the one in the URL (redis-py calls both a connection error, and
    over a unix socket wraps that in one more), or it cannot be reached. The password is
    never in the message."""
    cause = exc.__cause__ or exc
    shown = redact(url)
    refusal = _authentication_error(exc)
    if refusal is None:
        return StartupError(f"cannot reach Redis at {shown} ({cause})")
    parts = urlsplit(url)
    if not parts.password and "password" not in parse_qs(parts.query):
        where = (
            "unix://:PASSWORD@/PATH?db=N"
            if parts.scheme == "unix"
            else "redis://:PASSWORD@HOST:PORT/DB (rediss://... for TLS)"
        )
        return StartupError(f"Redis at {shown} asks for a password: put it in the URL, {where}")
    return StartupError(
        f"Redis at {shown} refused the password in the URL ({refusal}): give the one Redis "
        "is set to (its requirepass, or the password of the user the URL names)"
    )


def _authentication_error(exc: BaseException) -> AuthenticationError | None:
    """The `AuthenticationError` among the causes (and contexts) of `exc`, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AuthenticationError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


if __name__ == "__main__":  # `python -m solrace.server.app` is `solrace serve`, as serve_cli is
    from solrace.server.serve_cli import main

    raise SystemExit(main())
