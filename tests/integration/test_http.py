"""The WebSocket port also answers GET /healthz and GET /metrics."""

from __future__ import annotations

from solrace.server.app import App
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import http_get, play, start_race


async def _get(port: int, path: str) -> tuple[int, dict[str, str], str]:
    raw = await http_get(port, path)
    head, _, body = raw.decode().partition("\r\n\r\n")
    status_line, *header_lines = head.split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), headers, body


async def test_healthz(server: App) -> None:
    status, _, body = await _get(server.port, "/healthz")
    assert (status, body) == (200, "ok\n")


async def test_metrics_count_connections_moves_and_latency(
    server: App, client: ClientFactory
) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal", "deal"])
    status, headers, body = await _get(server.port, "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert "solrace_connections 2.0" in body
    assert "solrace_moves_accepted_total 2.0" in body
    assert "solrace_ack_latency_seconds_count 2.0" in body
    assert "solrace_rate_limit_closes_total 0.0" in body
    # Counted when read: the race started just now, whatever the tick has done since.
    assert 'solrace_races{status="running"} 1.0' in body
    assert 'solrace_races{status="open"} 0.0' in body
