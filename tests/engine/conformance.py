"""Loading the PySolFC conformance data copied into tests/engine/data."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from solrace.engine import RANK_CHARS, Game, Move

DATA = Path(__file__).parent / "data"

#: Conformance game keys -> engine game ids (data/README.md).
GAME_KEYS = {
    "klondike": "klondike",
    "klondike_draw1": "klondike",
    "klondike_draw3": "klondike-draw3",
    "vegas_klondike": "vegas-klondike",
    "casino_klondike": "casino-klondike",
    "colorado": "colorado",
    "terrace": "terrace",
    "queen_of_italy": "queen-of-italy",
    "generals_patience": "generals-patience",
    "blondes_and_brunettes": "blondes-and-brunettes",
    "falling_star": "falling-star",
    "union_square": "british-square",
}


@cache
def deals_data() -> dict[str, Any]:
    with open(DATA / "pysolfc_deals_sample.json") as f:
        return json.load(f)  # type: ignore[no-any-return]


@cache
def moves_data() -> dict[str, Any]:
    with open(DATA / "pysolfc_moves_sample.json") as f:
        return json.load(f)  # type: ignore[no-any-return]


def layout_text(layout: dict[str, list[list[Any]]]) -> dict[str, str]:
    """The deals file's ``[code, face_up]`` piles in RULES.md text."""
    return {
        name: " ".join(code if up else "#" + code for code, up in cards)
        for name, cards in layout.items()
    }


def probe_move(probe: dict[str, Any]) -> Move:
    if probe["action"] == "deal":
        return Move.parse("deal")
    return Move.from_long(probe["from"], probe["to"], probe["n"])


def extra_of(game: Game) -> dict[str, Any]:
    """The engine's state in the conformance files' ``extra`` form."""
    extra: dict[str, Any] = {"stock_round": game.round}
    if game.n_reserves:
        base = game.base_rank()
        extra["terrace_phase"] = game.phase()
        extra["foundation_base_rank"] = None if base is None else RANK_CHARS[base]
    return extra
