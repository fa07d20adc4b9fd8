"""The bots' names: numbered ones fit the server's longest name."""

from __future__ import annotations

from solrace.client.bot_names import numbered
from solrace.client.identity import name_problem


def test_numbered_names_fit_the_server() -> None:
    name = numbered("x" * 24, 12)
    assert name == "x" * 21 + "-12"
    assert name_problem(name) is None
