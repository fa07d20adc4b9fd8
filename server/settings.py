"""Server settings: defaults, then `SOLRACE_*` environment variables, then command-line flags."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from solrace.server.http_head import DEFAULT_WS_PATH, PROBE_PATHS
from solrace.server.protocol.ratelimit import DEFAULT_RATE_CAPACITY, DEFAULT_RATE_REFILL_PER_S
from solrace.server.protocol.wire import MAX_WIRE_INT

#: The shortest token secret a node signs with (given, or read from its secret file).
SECRET_MIN_CHARS = 16

#: The longest duration a setting (`..._s`) takes: a week. Longer ones overflow the clocks
#: they are added to (an infinite countdown would stop every race from being created).
MAX_DURATION_S = 7 * 24 * 3600.0

#: The longest a racer's progress may be held for a connection (`progress_hold_s`). A held
#: frame is what the other racers and the spectators see of a racer, late by the hold (and
#: `progress_interval_s` before it); the hold only saves `send` calls, and most of that is won
#: within 0.1 s (60% of the held frames shared a write at 0.1 s under `bench/load.py`; 0.2 s
#: cost no less CPU a move). A second is ten times the default and still short of what makes
#: a race look stuck; a longer hold (600 s once passed) would freeze opponents' progress.
MAX_PROGRESS_HOLD_S = 1.0

#: A WebSocket path: `/`, then printable ASCII without a query (`?`) or a fragment (`#`).
_WS_PATH = re.compile(r"/[\x21-\x22\x24-\x3e\x40-\x7e]*")

#: How a Redis URL begins (TCP, TLS, a Unix socket): what the store and the broker open as
#: Redis (`open_store`, `open_broker`), and what several nodes must keep their races in.
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
#: The Redis URLs accepted, as an error message lists them.
REDIS_URL_FORMS = (
    "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or unix://PATH (a Redis socket)"
)


class Settings(BaseSettings):
    """Every knob of `solrace serve` (environment: `SOLRACE_<NAME>`, e.g. `SOLRACE_PORT`)."""

    model_config = SettingsConfigDict(env_prefix="SOLRACE_", extra="forbid", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    ws_path: str = Field(
        default=DEFAULT_WS_PATH,
        description="the path WebSocket clients connect to (ws://HOST:PORT/PATH, the query "
        "aside); a request on any other path but /healthz and /metrics is answered 404",
    )
    data_dir: Path = Path("data")
    store: str | None = Field(
        default=None, description="store URL; default sqlite:<data_dir>/solrace.sqlite3"
    )
    redis: str | None = Field(
        default=None, description="redis:// URL: the store and the broker (several nodes)"
    )
    broker: str | None = Field(
        default=None,
        description="live events between nodes: memory: (one node) or redis://; "
        "default: the Redis of --redis or --store, else memory:",
    )
    secret: str | None = Field(
        default=None,
        min_length=SECRET_MIN_CHARS,
        description="token signing secret, 16 characters or more; default: <data_dir>/secret, "
        "created once",
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING, ERROR or CRITICAL")

    max_frame_bytes: int = Field(default=16 * 1024, ge=256)
    rate_capacity: float = Field(default=DEFAULT_RATE_CAPACITY, gt=0)
    rate_refill_per_s: float = Field(default=DEFAULT_RATE_REFILL_PER_S, gt=0)
    ping_interval_s: float | None = Field(default=20.0, gt=0)
    ping_timeout_s: float | None = Field(default=20.0, gt=0)
    idle_timeout_s: float = Field(default=60.0, gt=0)
    open_timeout_s: float = Field(
        default=10.0, gt=0, description="seconds a client has to complete the opening handshake"
    )
    close_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="seconds a client has to answer our close frame before the socket is aborted",
    )
    stop_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="on Redis: seconds a stop (SIGTERM) may take once its clients are closed "
        "(their goodbyes: close_timeout_s); the Redis work still waiting then (progress "
        "batches, racers marked away, the presence withdraw) is given up and recomputed by the "
        "next node to start (SQLite is flushed in full)",
    )
    max_outgoing: int = Field(
        default=1024,
        ge=16,
        description="frames a connection may write while its socket pushes back; one more: 4005",
    )
    max_outgoing_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=16 * 1024,
        description="bytes a connection may have buffered while its socket pushes back; a frame "
        "that would go past it closes the connection with 4005",
    )
    send_buffer_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="kernel send buffer per socket (SO_SNDBUF); default: the kernel's, which "
        "may hold megabytes for a client that stops reading before its queue overflows",
    )
    origins: list[str] | None = None
    max_connections: int = Field(
        default=10_000,
        ge=1,
        description="open connections on the node; a handshake past it is answered 503",
    )
    max_connections_per_address: int = Field(
        default=64,
        ge=0,
        description="open connections from one IP address; a handshake past it is answered "
        "429. 0: no per-address limits (behind a proxy every client has the proxy's address: "
        "limit there, see deploy/haproxy.cfg)",
    )
    connect_burst: float = Field(
        default=60.0,
        gt=0,
        description="handshakes one IP address may make at once before --connect-per-s paces "
        "it (429 past it); none with --max-connections-per-address 0",
    )
    connect_per_s: float = Field(
        default=10.0, gt=0, description="handshakes per second one IP address may sustain"
    )
    register_burst: float = Field(
        default=100.0,
        gt=0,
        description="new names one IP address may register at once before register_per_s "
        "paces it; none with --max-connections-per-address 0",
    )
    register_per_s: float = Field(
        default=0.05, gt=0, description="new names per second one IP address may sustain"
    )
    register_node_burst: float = Field(
        default=1000.0,
        gt=0,
        description="new names this node may register at once, whatever their addresses, "
        "before register_node_per_s paces them (also behind a proxy)",
    )
    register_node_per_s: float = Field(
        default=1.0, gt=0, description="new names per second this node may sustain in all"
    )

    countdown_s: float = Field(default=3.0, ge=0)
    grace_s: float = Field(default=60.0, ge=0)
    spectator_delay_casual_s: float = Field(default=0.0, ge=0)
    spectator_delay_rated_s: float = Field(default=10.0, ge=0)
    # A race's seats go to clients, whose integers end at the wire's (time limits: a week).
    max_seats: int = Field(default=16, ge=8, le=MAX_WIRE_INT)
    min_time_limit_s: int = Field(default=10, ge=1)
    max_time_limit_s: int = Field(default=4 * 3600, ge=1)
    max_open_races_per_player: int = Field(
        default=3, ge=1, description="open races (not yet started) one player may have created"
    )
    max_live_races_per_player: int = Field(
        default=10,
        ge=1,
        description="live races (open, counting down or running) one player may race in at "
        "once; creating or joining one more is refused",
    )
    max_live_races: int = Field(
        default=5000,
        ge=1,
        description="live races on the server (several nodes: per node); creating one more "
        "is refused",
    )
    max_open_races: int = Field(
        default=2000, ge=1, description="open races on the server (several nodes: per node)"
    )
    history_size: int = Field(default=50, ge=1)
    tick_s: float = Field(default=0.1, gt=0)
    spectator_batch_s: float = Field(default=0.25, gt=0)
    finished_kept_s: float = Field(
        default=600.0,
        ge=0,
        description="a finished race stays in memory this long (late resends, watchers, syncs); "
        "its replay stays in the store",
    )
    node_ttl_s: float = Field(
        default=5.0,
        gt=0,
        description="several nodes: each node says it is alive every fifth of this; one "
        "silent this long is taken for gone, and its racers' grace starts",
    )
    progress_interval_s: float = Field(
        default=0.1,
        ge=0,
        description="racers' moves are folded into the race's progress this often (one "
        "event per racer; state changes at once); 0: every move at once",
    )
    progress_hold_s: float = Field(
        default=0.1,
        ge=0,
        description="a racer's progress sent to another connection waits at most this long "
        f"for another frame to that connection, to go out in one write with it; at most "
        f"{MAX_PROGRESS_HOLD_S:g}; 0: at once",
    )

    lobby_push_s: float = Field(
        default=0.5, gt=0, description="a lobby change reaches its followers within this"
    )
    lobby_poll_s: float = Field(
        default=2.0, gt=0, description="several nodes: how often the lobby list is read again"
    )

    admin_token: str | None = Field(
        default=None,
        min_length=SECRET_MIN_CHARS,
        description="tournament admin token, 16 characters or more (as the secret); none: "
        "tournaments cannot be created",
    )
    tournament_tick_s: float = Field(default=1.0, gt=0)
    tournament_view_push_s: float = Field(
        default=0.5,
        gt=0,
        description="a tournament's view goes to its watchers at most this often (the newest: "
        "a change reaches them within it)",
    )
    max_tournament_players: int = Field(
        default=256,
        ge=2,
        description="most players one tournament may register (its whole view is pushed to "
        "every watcher after a change)",
    )

    @model_validator(mode="after")
    def _time_limits_in_order(self) -> Settings:
        if self.min_time_limit_s > self.max_time_limit_s:
            raise ValueError(
                f"the shortest time limit ({self.min_time_limit_s} s: --min-time-limit-s, "
                f"SOLRACE_MIN_TIME_LIMIT_S) is above the longest ({self.max_time_limit_s} s: "
                "SOLRACE_MAX_TIME_LIMIT_S): every race would be refused"
            )
        return self

    @model_validator(mode="after")
    def _one_store(self) -> Settings:
        # The same URL in both names one store: taken.
        if self.redis and self.store and self.store != self.redis:
            raise ValueError(
                "--store and --redis name two stores: nodes on a Redis keep everything in it "
                "(--redis alone), a node on its own keeps it in its --store (without --redis)"
            )
        # A store of an unknown scheme is named by `open_store`, with the schemes it takes.
        store_scheme = self.store_url().split(":", 1)[0]
        if self.is_cluster and store_scheme in ("memory", "sqlite"):
            raise ValueError(
                "--broker links nodes that keep their races in a Redis, not in "
                f"{store_scheme}: keep them there too (--redis), or run one node without "
                "--broker"
            )
        return self

    @field_validator("*")
    @classmethod
    def _durations_within_a_week(cls, value: object, info: ValidationInfo) -> object:
        name = info.field_name or ""
        duration = name.endswith("_s") and not name.endswith("_per_s")  # not a rate
        if duration and isinstance(value, int | float) and value > MAX_DURATION_S:
            raise ValueError(f"at most {MAX_DURATION_S:.0f} seconds (a week)")
        return value

    @field_validator("progress_hold_s")
    @classmethod
    def _a_short_hold(cls, value: float) -> float:
        if value > MAX_PROGRESS_HOLD_S:
            raise ValueError(
                f"at most {MAX_PROGRESS_HOLD_S:g} second: the other racers and the spectators "
                "would see a racer's progress that much later (0: sent at once)"
            )
        return value

    @field_validator("host")
    @classmethod
    def _a_host(cls, value: str) -> str:
        if not value.strip():  # an unset variable in a compose file or a unit, as a rule
            raise ValueError(
                "empty: it would listen on every interface; for that give 0.0.0.0, else "
                "an address or name of this machine"
            )
        return value

    @field_validator("origins")
    @classmethod
    def _some_origins(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:  # an unset variable in a compose file, as a rule
            raise ValueError(
                "empty: it would accept every Origin, as no setting does; name the ones to accept"
            )
        return value

    @field_validator("ws_path")
    @classmethod
    def _a_ws_path(cls, value: str) -> str:
        if not _WS_PATH.fullmatch(value):
            raise ValueError(
                "a path begins with / and has no space, query or fragment (/ or /solrace, say)"
            )
        if value in PROBE_PATHS:
            raise ValueError(f"{value} answers plain HTTP requests: give the WebSocket another")
        return value

    @field_validator("data_dir", mode="before")
    @classmethod
    def _a_data_dir(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():  # an unset variable, as a rule
            raise ValueError("empty: give a folder (. for the working directory)")
        return value

    @field_validator("data_dir")
    @classmethod
    def _data_dir_home(cls, value: Path) -> Path:
        # `~` as a shell expands it: an environment file, a unit or a compose file does not,
        # and a folder named `~` would be made in the working directory.
        return value.expanduser()

    @field_validator("store")
    @classmethod
    def _sqlite_path_home(cls, value: str | None) -> str | None:
        if value and value.startswith("sqlite:~"):  # as for the data dir
            return f"sqlite:{Path(value.removeprefix('sqlite:')).expanduser()}"
        return value

    @field_validator("redis")
    @classmethod
    def _a_redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(REDIS_SCHEMES):
            raise ValueError(f"not a Redis URL; accepted: {REDIS_URL_FORMS}")
        return value

    @field_validator("broker")
    @classmethod
    def _a_broker_url(cls, value: str | None) -> str | None:
        if value and value != "memory:" and not value.startswith(REDIS_SCHEMES):
            raise ValueError(f"not a broker URL; accepted: memory: (one node), {REDIS_URL_FORMS}")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"not a log level (one of {', '.join(LOG_LEVELS)})")
        return level

    def store_url(self) -> str:
        return self.store or self.redis or f"sqlite:{self.data_dir / 'solrace.sqlite3'}"

    def broker_url(self) -> str:
        if self.broker:
            return self.broker
        if self.redis:
            return self.redis
        return self.store_url() if self.store_is_redis else "memory:"

    @property
    def store_is_redis(self) -> bool:
        """The store is a Redis server (its calls wait on the network, not on a local file)."""
        return self.store_url().startswith(REDIS_SCHEMES)

    @property
    def is_cluster(self) -> bool:
        """Several nodes may serve the same races (the broker links them)."""
        return self.broker_url() != "memory:"


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
