"""A dependency-free SVG chart of bench/load.py results (throughput and p99 against players)."""

from __future__ import annotations

import math
from typing import Any

COLOURS = {"echo": "#888888", "solrace": "#c0392b"}


def _panel(
    results: dict[int, Any], key: str, title: str, x0: float, width: float, height: float
) -> list[str]:
    players = sorted(results)
    values = [results[n][side][key] for n in players for side in COLOURS]
    top = max(values) * 1.1 or 1.0
    left, bottom = x0 + 60, height - 40
    plot_w, plot_h = width - 80, height - 80

    def px(i: int) -> float:
        return left + (plot_w * i / max(1, len(players) - 1))

    def py(v: float) -> float:
        return bottom - plot_h * v / top

    out = [
        f'<text x="{x0 + width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
        f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{bottom - plot_h}" stroke="black"/>',
    ]
    for i, n in enumerate(players):
        out.append(
            f'<text x="{px(i)}" y="{bottom + 16}" text-anchor="middle" font-size="11">{n}</text>'
        )
    for k in range(5):
        v = top * k / 4
        label = f"{v:,.0f}" if v >= 10 or v == 0 else f"{v:.1f}"
        out.append(
            f'<text x="{left - 6}" y="{py(v) + 4}" text-anchor="end" font-size="10">{label}</text>'
        )
    for side, colour in COLOURS.items():
        points = " ".join(
            f"{px(i):.1f},{py(results[n][side][key]):.1f}"
            for i, n in enumerate(players)
            if not math.isnan(results[n][side][key])
        )
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
    return out


def line_chart_svg(results: dict[int, Any]) -> str:
    width, height = 900, 360
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    parts.append(f'<rect width="{width}" height="{height}" fill="white"/>')
    parts += _panel(results, "moves_per_s", "messages/s (players on x)", 0, width / 2, height)
    parts += _panel(results, "p99_ms", "p99 latency, ms", width / 2, width / 2, height)
    for i, (side, colour) in enumerate(COLOURS.items()):
        label = "bare websockets echo" if side == "echo" else "solrace (validate, persist, ack)"
        y = height - 12
        x = 80 + i * 300
        parts.append(f'<rect x="{x}" y="{y - 9}" width="14" height="4" fill="{colour}"/>')
        parts.append(f'<text x="{x + 20}" y="{y - 4}" font-size="11">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
