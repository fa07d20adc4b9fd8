"""The engine's command line: ``solrace engine`` (JSON lines) and ``solrace deal``.

``solrace engine`` is the conformance interface (the engine's UCI): one JSON object per line
on stdin, one JSON object per line on stdout, flushed each time. Bad input gets
``{"ok": false, "error": "..."}`` and the process keeps going.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from .cards import RANK_CHARS, TEXT
from .errors import EngineError
from .game import Game
from .piles import STOCK
from .registry import GAME_IDS, deal


def state_of(game: Game) -> dict[str, Any]:
    """STATE: every pile with full information, plus the outcome and the round/phase/base."""
    on, total = game.progress()
    base = game.base_rank()
    return {
        "game": game.game_id,
        "deal": game.number,
        "piles": game.pile_texts(),
        "won": on == total,
        "stuck": game.is_stuck(),
        "progress": [on, total],
        "round": game.round,
        "phase": game.phase(),
        "base_rank": None if base is None else RANK_CHARS[base],
    }


class EngineSession:
    """One board driven by JSON commands; every answer is a JSON-able dict."""

    def __init__(self) -> None:
        self.game: Game | None = None

    def handle_line(self, line: str) -> dict[str, Any]:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            return {"ok": False, "error": f"not JSON: {exc.msg} at column {exc.colno}"}
        except RecursionError:
            return {"ok": False, "error": "not JSON this engine reads: nested too deeply"}
        except ValueError:  # the only other failure of json.loads: an int past Python's limit
            return {
                "ok": False,
                "error": "not JSON this engine reads: a number has too many digits",
            }
        if not isinstance(request, dict):
            return {"ok": False, "error": 'expected a JSON object such as {"cmd": "state"}'}
        try:
            return self.handle(request)
        except EngineError as exc:
            return {"ok": False, "error": str(exc)}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        cmd = request.get("cmd")
        if cmd == "new":
            game_id, number = request.get("game"), request.get("deal")
            if not isinstance(game_id, str) or not isinstance(number, str):
                return {"ok": False, "error": 'new needs "game" and "deal" as strings'}
            self.game = deal(game_id, number)
            return {"ok": True, "state": state_of(self.game)}
        if cmd not in ("legal", "play", "undo", "state"):
            return {"ok": False, "error": f"unknown cmd {cmd!r}: use new, legal, play, undo, state"}
        game = self.game
        if game is None:
            return {"ok": False, "error": 'no game yet: send {"cmd":"new","game":...,"deal":...}'}
        if cmd == "legal":
            return {"ok": True, "moves": [str(m) for m in game.legal_moves()]}
        if cmd == "play":
            move = request.get("move")
            if not isinstance(move, str):
                return {"ok": False, "error": 'play needs "move" as a string, e.g. "w-t3"'}
            game.play(move)
        elif cmd == "undo":
            game.undo()
        return {"ok": True, "state": state_of(game)}


def run_engine(stdin: IO[str], stdout: IO[str]) -> None:
    session = EngineSession()
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(session.handle_line(line)) + "\n")
        stdout.flush()


def engine_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="solrace engine",
        description="The rules engine over JSON lines: reads commands on stdin, answers on stdout. "
        'Commands: {"cmd":"new","game":"klondike","deal":"123456"}, {"cmd":"legal"}, '
        '{"cmd":"play","move":"w-t3"}, {"cmd":"undo"}, {"cmd":"state"}.',
    )
    parser.parse_args(argv)
    run_engine(sys.stdin, sys.stdout)
    return 0


def _use_colour(stream: IO[str]) -> bool:
    """Colour on a terminal, unless NO_COLOR is set to something (https://no-color.org: an
    empty NO_COLOR asks for nothing, as the terminal client reads it too)."""
    return not os.environ.get("NO_COLOR") and stream.isatty()


def render_game(game: Game, colour: bool) -> str:
    """A person's picture of the whole board (full information: a local tool)."""

    def card(text: str, up: bool) -> str:
        if not up:
            return "##" if not colour else "\x1b[2m##\x1b[0m"
        red = text[1] in "HD"
        return f"\x1b[31m{text}\x1b[0m" if colour and red else text

    info = game.number_info
    number = game.number if info is None else info.canonical
    typed = f" (typed {game.number!r})" if number != game.number else ""
    lines = [f"{game.title} ({game.game_id}), game {number}{typed}"]
    on, total = game.progress()
    lines.append(f"round {game.round}, phase {game.phase()}, {on}/{total} on foundations")
    width = max(len(p.name) for p in game.piles)
    for p in game.piles:
        if p.kind == STOCK:
            body = f"{len(p.cards)} card(s) face down"
        else:
            down = p.face_down_count()
            body = " ".join(card(TEXT[c], i >= down) for i, c in enumerate(p.cards))
        lines.append(f"{p.name:>{width}} ({p.short:>3}): {body}")
    return "\n".join(lines)


def deal_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="solrace deal", description="Print the opening layout of a deal (PySolFC-compatible)."
    )
    parser.add_argument("game", help="game id: " + ", ".join(GAME_IDS))
    parser.add_argument("number", help="game number as PySolFC accepts it, e.g. 123456 or ms11982")
    parser.add_argument("--json", action="store_true", help="print the engine's STATE as JSON")
    args = parser.parse_args(argv)
    try:
        game = deal(args.game, args.number)
    except EngineError as exc:
        print(f"solrace deal: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(state_of(game)))
    else:
        print(render_game(game, _use_colour(sys.stdout)))
    return 0
