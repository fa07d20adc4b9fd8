"""The game registry: game ids to rule classes. Nothing else branches on a game's name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from .errors import UnknownGameError
from .game import Game
from .games.british_square import BritishSquare
from .games.colorado import Colorado
from .games.klondike import (
    CasinoKlondike,
    Klondike,
    KlondikeBook,
    KlondikeBook1,
    KlondikeBook3,
    KlondikeDraw3,
    VegasKlondike,
)
from .games.terrace import (
    BlondesAndBrunettes,
    FallingStar,
    GeneralsPatience,
    QueenOfItaly,
    Terrace,
)
from .moves import Move
from .seeds import GameNumber

GAMES: Final[dict[str, type[Game]]] = {
    cls.game_id: cls
    for cls in (
        Klondike,
        KlondikeDraw3,
        VegasKlondike,
        CasinoKlondike,
        KlondikeBook,
        KlondikeBook3,
        KlondikeBook1,
        Colorado,
        Terrace,
        QueenOfItaly,
        GeneralsPatience,
        BlondesAndBrunettes,
        FallingStar,
        BritishSquare,
    )
}
GAME_IDS: Final = tuple(GAMES)


def game_class(game_id: str) -> type[Game]:
    try:
        return GAMES[game_id]
    except (KeyError, TypeError):
        known = ", ".join(GAME_IDS)
        raise UnknownGameError(f"unknown game {game_id!r}; known games: {known}") from None


def deal(game_id: str, number: str | GameNumber) -> Game:
    """A new board of ``game_id`` dealt exactly as PySolFC deals game ``number``."""
    return game_class(game_id)(number)


def replay(game_id: str, number: str | GameNumber, moves: Iterable[Move | str]) -> Game:
    """Rebuild a board from its moves; the board is a pure function of these three."""
    game = deal(game_id, number)
    for move in moves:
        game.play(move)
    return game
