"""The rules engine: pure, deterministic, PySolFC-compatible deals and rules.

>>> from solrace.engine import deal
>>> game = deal("klondike", "1")
>>> game.play("t0-f2")
Traceback (most recent call last):
...
solrace.engine.errors.IllegalMoveError: f2 starts with the Ace of hearts, not QH
"""

from __future__ import annotations

from .cards import CARDS, RANK_CHARS, SUIT_CHARS, Card, parse_cards
from .errors import (
    EngineError,
    IllegalMoveError,
    InvalidCardError,
    InvalidGameNumberError,
    InvalidMoveError,
    InvalidPositionError,
    NothingToUndoError,
    UnknownGameError,
)
from .game import Game
from .moves import DEAL, Move, to_long_name, to_short_name
from .registry import GAME_IDS, GAMES, deal, game_class, replay
from .seeds import GameNumber, parse_game_number, random_ranked_number
from .views import (
    Audience,
    BoardView,
    PileView,
    ProgressView,
    board_from_view,
    shown_cards,
    view,
    view_piles,
)

__all__ = [
    "CARDS",
    "DEAL",
    "GAMES",
    "GAME_IDS",
    "RANK_CHARS",
    "SUIT_CHARS",
    "Audience",
    "BoardView",
    "Card",
    "EngineError",
    "Game",
    "GameNumber",
    "IllegalMoveError",
    "InvalidCardError",
    "InvalidGameNumberError",
    "InvalidMoveError",
    "InvalidPositionError",
    "Move",
    "NothingToUndoError",
    "PileView",
    "ProgressView",
    "UnknownGameError",
    "board_from_view",
    "deal",
    "game_class",
    "parse_cards",
    "parse_game_number",
    "random_ranked_number",
    "replay",
    "shown_cards",
    "to_long_name",
    "to_short_name",
    "view",
    "view_piles",
]
