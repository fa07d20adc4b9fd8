"""Prometheus metrics, in a registry of their own (one per server, so tests can run several)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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
        self.moves_accepted = Counter(
            "solrace_moves_accepted", "Moves stored and acknowledged", registry=self.registry
        )
        self.moves_rejected = Counter(
            "solrace_moves_rejected", "Moves refused, by reason", ["code"], registry=self.registry
        )
        self.ack_latency = Histogram(
            "solrace_ack_latency_seconds",
            "From a move's arrival to its ack being queued (validation + store)",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
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
