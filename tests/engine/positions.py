"""Helpers for rule tests: set up positions from RULES.md pile texts and check refusals."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from solrace.engine import Game, IllegalMoveError, Move, game_class


def position(game_id: str, piles: Mapping[str, str], round_: int = 1) -> Game:
    """A board of ``game_id`` with exactly these piles (the others empty)."""
    return game_class(game_id).from_piles(piles, round_=round_)


def cards(suit: str, ranks: str) -> str:
    """``cards("H", "A23")`` -> ``"AH 2H 3H"``."""
    return " ".join(rank + suit for rank in ranks)


def snapshot(game: Game) -> tuple[dict[str, str], int, list[Move], list[Move]]:
    return game.pile_texts(), game.round, list(game.history), game.legal_moves()


def assert_refused(game: Game, move: str, message: str) -> None:
    """``move`` is illegal here, says ``message`` and changes nothing at all."""
    before = snapshot(game)
    assert not game.is_legal(Move.parse(move))
    assert Move.parse(move) not in game.legal_moves()
    with pytest.raises(IllegalMoveError) as info:
        game.play(move)
    assert message in str(info.value)
    assert snapshot(game) == before


def assert_plays(game: Game, move: str) -> None:
    """``move`` is legal here (both ways of asking agree) and plays."""
    assert game.is_legal(Move.parse(move))
    assert Move.parse(move) in game.legal_moves()
    game.play(move)
