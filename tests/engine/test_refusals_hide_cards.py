"""A refused move's text is sent to the mover: it may name only cards the mover can see (no
face-down card, no stock card). Random boards of every game, random move texts (legal or
not, any pile to any pile, runs of any length) tried on each; every card a refusal names must
be one the player's view of that board shows."""

from __future__ import annotations

import random
import re

import pytest

from solrace.engine.errors import EngineError
from solrace.engine.game import Game
from solrace.engine.registry import GAME_IDS, deal
from solrace.engine.views import Audience, BoardView, view

#: A card as the notation writes it ("TD", "7H").
CARD = re.compile(r"\b[A2-9TJQK][CDHS]\b")


def shown_to_player(game: Game) -> set[str]:
    board = view(game, Audience.PLAYER)
    assert isinstance(board, BoardView)
    return {card for pile in board.piles.values() for card in pile.cards}


def refusals(game: Game, rng: random.Random, tries: int) -> list[str]:
    """The texts of refused random moves on `game` (which each leaves as it was)."""
    names = [pile.short for pile in game.piles]
    texts = []
    for _ in range(tries):
        count = rng.choice([1, 1, 2, 3, 5, 9])
        move = f"{rng.choice(names)}-{rng.choice(names)}" + (f":{count}" if count > 1 else "")
        try:
            game.play(move)
        except EngineError as exc:
            texts.append(str(exc))
        else:
            game.undo()
    return texts


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_a_refusal_names_only_cards_the_mover_sees(game_id: str) -> None:
    rng = random.Random(game_id)
    naming_cards = 0
    for number in ("1", "2", "3"):
        game = deal(game_id, number)
        for _ in range(60):
            shown = shown_to_player(game)
            for text in refusals(game, rng, 8):
                named = set(CARD.findall(text))
                naming_cards += bool(named)
                assert named <= shown, f"{game_id} {number}: {text!r} names {named - shown}"
            moves = list(game.legal_moves())
            if not moves:
                break
            game.play(rng.choice(moves))
    assert naming_cards > 0  # the check saw refusals that name cards
