"""The node's metrics (server/metrics.py): the counters taken on every move are plain numbers
(`PlainCounter`, `PlainHistogram`), exported as prometheus_client's `Counter` and `Histogram`
of the same names export them, line for line."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics

from solrace.server.metrics import ACK_LATENCY_BUCKETS, Metrics, PlainCounter, PlainHistogram

#: Latencies on each side of every bound and on the bounds themselves (a bucket's bound is
#: inclusive), below the first and past the last.
LATENCIES = [
    0.0,
    1e-7,
    *ACK_LATENCY_BUCKETS,
    *(b * 0.999 for b in ACK_LATENCY_BUCKETS),
    *(b * 1.001 for b in ACK_LATENCY_BUCKETS),
    0.0003,
    0.07,
    2.5,
    1e9,
]


def without_created_times(text: bytes) -> str:
    """The exposition with each `_created` sample's value (a clock reading) left out."""
    return re.sub(r"^(\S+_created) \S+$", r"\1 <time>", text.decode(), flags=re.MULTILINE)


def reference(moves: int, latencies: list[float]) -> bytes:
    """What prometheus_client's own metrics of these names export for the same counts."""
    registry = CollectorRegistry()
    accepted = Counter("solrace_moves_accepted", "Moves stored and acknowledged", registry=registry)
    latency = Histogram(
        "solrace_ack_latency_seconds",
        "From a move's arrival to its ack being queued (validation + store)",
        buckets=ACK_LATENCY_BUCKETS,
        registry=registry,
    )
    for _ in range(moves):
        accepted.inc()
    for seconds in latencies:
        latency.observe(seconds)
    data: bytes = generate_latest(registry)
    return data


def plain(moves: int, latencies: list[float]) -> bytes:
    """The node's metrics of those names, alone in a registry, fed the same counts."""
    metrics = Metrics()
    registry = CollectorRegistry()
    registry.register(metrics.moves_accepted)
    registry.register(metrics.ack_latency)
    for _ in range(moves):
        metrics.moves_accepted.inc()
    for seconds in latencies:
        metrics.ack_latency.observe(seconds)
    data: bytes = generate_latest(registry)
    return data


@pytest.mark.parametrize(
    ("moves", "latencies"), [(0, []), (1, [0.0003]), (len(LATENCIES), LATENCIES)]
)
def test_the_move_metrics_export_what_prometheus_clients_own_would(
    moves: int, latencies: list[float]
) -> None:
    assert without_created_times(plain(moves, latencies)) == without_created_times(
        reference(moves, latencies)
    )


def test_the_move_metrics_leave_out_created_series_when_prometheus_client_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prometheus_metrics, "_use_created", False)
    text = plain(3, LATENCIES)
    assert b"_created" not in text
    assert text == reference(3, LATENCIES)


def test_the_node_renders_its_move_metrics() -> None:
    metrics = Metrics()
    metrics.moves_accepted.inc()
    metrics.moves_accepted.inc()
    metrics.ack_latency.observe(0.002)
    text = metrics.render().decode()
    assert "solrace_moves_accepted_total 2.0\n" in text
    assert 'solrace_ack_latency_seconds_bucket{le="0.001"} 0.0\n' in text
    assert 'solrace_ack_latency_seconds_bucket{le="0.0025"} 1.0\n' in text
    assert "solrace_ack_latency_seconds_count 1.0\n" in text


def test_a_metric_name_taken_twice_in_a_registry_is_refused() -> None:
    registry = CollectorRegistry()
    PlainCounter("solrace_x", "x", registry)
    with pytest.raises(ValueError, match="Duplicated"):
        PlainHistogram("solrace_x", "x", (0.1,), registry)
