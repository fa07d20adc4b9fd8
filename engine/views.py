"""What each audience may see of a board. No other code decides what a client may see.

A player (and a spectator, whom the server delays) sees every face-up card and only the count
of face-down cards, never the stock's order. An opponent sees progress only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .cards import RANK_CHARS, TEXT
from .game import Game
from .piles import Pile


class Audience(StrEnum):
    PLAYER = "player"
    OPPONENT = "opponent"
    SPECTATOR = "spectator"


@dataclass(frozen=True, slots=True)
class PileView:
    """``down`` face-down cards (identity hidden) under the face-up ``cards``, bottom to top."""

    name: str
    down: int
    cards: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ProgressView:
    on_foundations: int
    total: int
    won: bool
    stuck: bool


@dataclass(frozen=True, slots=True)
class BoardView:
    game_id: str
    piles: dict[str, PileView]
    round: int
    phase: str
    base_rank: str | None
    progress: tuple[int, int]
    won: bool
    stuck: bool


def shown_cards(pile: Pile) -> tuple[int, list[str]]:
    """What a player sees of ``pile``: how many cards lie face down (the whole stock), and the
    face-up cards' text, bottom to top. Every player view of a pile goes through here."""
    down = pile.face_down_count()
    return down, [TEXT[c] for c in pile.cards[down:]]


def pile_view(pile: Pile) -> PileView:
    down, cards = shown_cards(pile)
    return PileView(pile.name, down, tuple(cards))


def view_piles(game: Game, names: Iterable[str]) -> dict[str, PileView]:
    """The player's view of just these piles (e.g. those the last move touched)."""
    return {name: pile_view(game.pile_by_name(name)) for name in names}


def board_from_view(board: BoardView) -> Game:
    """A board with the same legal moves as the one ``board`` shows (hidden cards unknown)."""
    from .registry import game_class

    piles = {name: (pv.down, pv.cards) for name, pv in board.piles.items()}
    return game_class(board.game_id).from_visible(piles, board.round)


def view(game: Game, audience: Audience | str) -> BoardView | ProgressView:
    audience = Audience(audience)
    on, total = game.progress()
    won = on == total
    stuck = game.is_stuck()
    if audience is Audience.OPPONENT:
        return ProgressView(on, total, won, stuck)
    base = game.base_rank()
    return BoardView(
        game_id=game.game_id,
        piles={p.name: pile_view(p) for p in game.piles},
        round=game.round,
        phase=game.phase(),
        base_rank=None if base is None else RANK_CHARS[base],
        progress=(on, total),
        won=won,
        stuck=stuck,
    )
