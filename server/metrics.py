"""Prometheus metrics, in a registry of their own (one per server, so tests can run several)."""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: `solrace_ack_latency_seconds`'s upper bounds (seconds).
ACK_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


def _with_created() -> bool:
    """Whether prometheus_client exports `_created` series now (its own metrics' switch:
    `PROMETHEUS_DISABLE_CREATED_SERIES`, `disable_created_metrics()`)."""
    return bool(getattr(prometheus_metrics, "_use_created", True))


class PlainCounter(Collector):
    """A counter without labels counted by the event loop alone, exported as a
    prometheus_client `Counter` of the same name is (`_total`, `_created`). `inc` adds to an
    integer: no lock and no value object, for a count taken on every move (~0.1 us against
    ~1.5 us)."""

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.value = 0
        self.created = time.time()
        registry.register(self)

    def inc(self) -> None:
        self.value += 1

    def describe(self) -> list[Metric]:
        return [Metric(self.name, self.documentation, "counter")]

    def collect(self) -> list[Metric]:
        metric = Metric(self.name, self.documentation, "counter")
        metric.add_sample(self.name + "_total", {}, float(self.value))
        if _with_created():
            metric.add_sample(self.name + "_created", {}, self.created)
        return [metric]


class PlainHistogram(Collector):
    """A histogram without labels observed by the event loop alone, exported as a
    prometheus_client `Histogram` with the same buckets is (`_bucket` by `le`, `_count`,
    `_sum`, `_created`). `observe` finds its bucket by bisection and adds to integers: no
    lock, no walk over the bounds (~0.3 us against ~1.2 us, on every move)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        #: The upper bounds (`le`, each bucket's inclusive), ending with +Inf.
        self.bounds = sorted(float(b) for b in buckets)
        if self.bounds[-1] != float("inf"):
            self.bounds.append(float("inf"))
        #: The bounds as their `le` labels say them (prometheus_client's own spelling).
        self.labels: list[str] = [
            floatToGoString(b)  # type: ignore[no-untyped-call]
            for b in self.bounds
        ]
        #: Observations per bucket (not cumulative: summed when exported).
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0
        self.created = time.time()
        registry.register(self)

    def observe(self, amount: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, amount)] += 1
        self.sum += amount

    def describe(self) -> list[Metric]:
        return [Metric(self.name, self.documentation, "histogram")]

    def collect(self) -> list[Metric]:
        metric = Metric(self.name, self.documentation, "histogram")
        total = 0.0
        for label, count in zip(self.labels, self.counts, strict=True):
            total += count
            metric.add_sample(self.name + "_bucket", {"le": label}, total)
        metric.add_sample(self.name + "_count", {}, total)
        if self.bounds[0] >= 0:
            metric.add_sample(self.name + "_sum", {}, self.sum)
        if _with_created():
            metric.add_sample(self.name + "_created", {}, self.created)
        return [metric]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        #: Called before each rendering: gauges counted when read, not kept up to date.
        self.on_render: list[Callable[[], None]] = []
        self.connections = Gauge(
            "solrace_connections", "Open WebSocket connections", registry=self.registry
        )
        self.races = Gauge(
            "solrace_races", "Races held in memory by status", ["status"], registry=self.registry
        )
        #: Counted on every move: plain numbers, exported as a `Counter` and a `Histogram`.
        self.moves_accepted = PlainCounter(
            "solrace_moves_accepted", "Moves stored and acknowledged", self.registry
        )
        self.moves_rejected = Counter(
            "solrace_moves_rejected", "Moves refused, by reason", ["code"], registry=self.registry
        )
        self.ack_latency = PlainHistogram(
            "solrace_ack_latency_seconds",
            "From a move's arrival to its ack being queued (validation + store)",
            ACK_LATENCY_BUCKETS,
            self.registry,
        )
        self.rate_limit_closes = Counter(
            "solrace_rate_limit_closes",
            "Connections closed (1008) for flooding",
            registry=self.registry,
        )
        self.slow_closes = Counter(
            "solrace_slow_closes",
            "Connections closed (4005) for not reading what they were sent",
            registry=self.registry,
        )
        self.connections_refused = Counter(
            "solrace_connections_refused",
            "Handshakes refused past a connection limit, by reason "
            "(node_full, address_full, too_often)",
            ["reason"],
            registry=self.registry,
        )
        self.bad_frames = Counter(
            "solrace_bad_frames", "Frames refused, by kind", ["kind"], registry=self.registry
        )
        self.tasks = Gauge(
            "solrace_tasks",
            "asyncio tasks alive on the node's event loop (a count that grows with the races "
            "played or the connections served is a leak)",
            registry=self.registry,
        )
        self.on_render.append(self._count_tasks)

    def _count_tasks(self) -> None:
        try:
            self.tasks.set(len(asyncio.all_tasks()))
        except RuntimeError:  # rendered outside the event loop (a test): nothing to count
            self.tasks.set(0)

    def render(self) -> bytes:
        for update in self.on_render:
            update()
        data: bytes = generate_latest(self.registry)
        return data
