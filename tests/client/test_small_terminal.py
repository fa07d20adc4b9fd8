"""The full-screen views at 60x20, the smallest terminal they are drawn for (docs/client.md):
nothing a user needs is cut off, hidden past an edge or under another widget. Driven by
Textual's pilot against a real server on loopback and read from what the screen shows."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from solrace.client.tui import ReplayApp
from solrace.client.widgets import BoardWidget
from tests.server.test_verify import MOVES, sample

from .conftest import widget

SMALL = (60, 20)


def shown(app: App[Any]) -> list[str]:
    """The terminal's lines as the screen draws them (toasts included)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def footer(app: App[Any]) -> str:
    return shown(app)[-1]


def past_the_edges(screen: Screen[Any]) -> list[str]:
    """The widgets that stick out of the screen on the right or at the bottom."""
    width, height = screen.size
    return [
        repr(node)
        for node in screen.query("*")
        if node.display
        and node.region.area
        and (node.region.right > width or node.region.bottom > height)
    ]


def overlapping(widgets: list[Any]) -> list[tuple[str, str]]:
    """Pairs of these widgets drawn on the same cells."""
    return [
        (repr(a), repr(b))
        for i, a in enumerate(widgets)
        for b in widgets[i + 1 :]
        if a.region.overlaps(b.region)
    ]


def sideways(table: DataTable[Any]) -> bool:
    """The table is wider than its room: its last columns hide until it scrolls."""
    return table.max_scroll_x > 0


async def settled(pilot: Pilot[Any]) -> None:
    """Let the layout and the footer (recomposed after a resize) catch up."""
    for _ in range(3):
        await pilot.pause()


async def test_the_replay_s_keys_fit_60x20_and_80x24() -> None:
    """`space Play/pause` and `q Quit` were cut off the footer, at 80 columns too."""
    for size in (SMALL, (80, 24)):
        app = ReplayApp(sample(MOVES), ascii=True)
        async with app.run_test(size=size) as pilot:
            await widget(app.screen, "#board", BoardWidget)
            await settled(pilot)
            assert past_the_edges(app.screen) == []
            for key in ("←→ Step", "home First", "end Last", "tab Racer", "space Play", "q Quit"):
                assert key in footer(app), (size, footer(app))
