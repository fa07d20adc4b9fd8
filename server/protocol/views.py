"""Engine views to wire models. The engine decides what an audience sees; this only copies."""

from __future__ import annotations

from collections.abc import Mapping

from solrace.engine import Audience, BoardView, Game, PileView, shown_cards, view, view_piles
from solrace.server.protocol.messages import BoardModel, PileFields, PileModel


def pile_models(piles: Mapping[str, PileView]) -> list[PileModel]:
    # Validated on purpose: pydantic-core checks three fields faster (~1 us) than
    # `model_construct` skips them in Python (~1.9 us, pydantic 2.13).
    return [PileModel(name=p.name, down=p.down, cards=list(p.cards)) for p in piles.values()]


def board_model(board: BoardView) -> BoardModel:
    on, total = board.progress
    return BoardModel(
        game=board.game_id,
        piles=pile_models(board.piles),
        round=board.round,
        phase=board.phase,
        base_rank=board.base_rank,
        on_foundations=on,
        total=total,
        won=board.won,
        stuck=board.stuck,
    )


def board_for(game: Game, audience: Audience) -> BoardModel:
    """A whole board as `audience` (player or spectator) may see it."""
    board = view(game, audience)
    if not isinstance(board, BoardView):
        raise ValueError(f"{audience} sees no board")
    return board_model(board)


def touched_pile_models(game: Game) -> list[PileModel]:
    """The player's view of the piles the last move changed (what a move ack carries)."""
    return pile_models(view_piles(game, game.touched_piles()))


def touched_pile_fields(game: Game) -> list[PileFields]:
    """`touched_pile_models` as plain maps, straight from the engine's cards (no views, no
    models): the piles of the move ack, which every accepted move sends."""
    fields: list[PileFields] = []
    for name in game.touched_piles():
        down, cards = shown_cards(game.pile_by_name(name))
        fields.append({"name": name, "down": down, "cards": cards})
    return fields
