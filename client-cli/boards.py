"""The client's boards: the wire's `BoardModel` and the engine's `BoardView`, and acks on them.

The server sends a whole board (`board`) and then only the piles each move changed
(`move_ack`); the client keeps the engine's own view type so rendering, bots and local checks
all read one shape, and rebuilds a rules-checking board with `board_from_view` when it needs one.
"""

from __future__ import annotations

from collections.abc import Iterable

from solrace.engine import (
    RANK_CHARS,
    BoardView,
    EngineError,
    Game,
    Move,
    PileView,
    board_from_view,
)
from solrace.server.protocol.messages import BoardModel, PileModel


class UnusableBoardError(ValueError):
    """A board (or a move's changed piles) from the server that is no board of its game: an
    unknown game, a pile the game does not have, a card that does not parse. Kept, it would
    break every later look at it (drawing, local move checks), so it is refused whole."""


def pile_from_model(model: PileModel) -> PileView:
    return PileView(model.name, model.down, tuple(model.cards))


def checked_rules_board(board: BoardView) -> Game:
    """`rules_board(board)`; a view that is no board of its game raises `UnusableBoardError`
    saying why."""
    try:
        return rules_board(board)
    except EngineError as exc:
        raise UnusableBoardError(str(exc)) from None


def checked(board: BoardView) -> BoardView:
    """`board`, if it is a board of its game; else `UnusableBoardError` saying why."""
    checked_rules_board(board)
    return board


def board_from_model(model: BoardModel) -> BoardView:
    """The engine's view of a board the server sent (`UnusableBoardError` if it is none)."""
    return checked(
        BoardView(
            game_id=model.game,
            piles={p.name: pile_from_model(p) for p in model.piles},
            round=model.round,
            phase=model.phase or "play",
            base_rank=model.base_rank,
            progress=(model.on_foundations, model.total),
            won=model.won,
            stuck=model.stuck,
        )
    )


def rules_board(board: BoardView) -> Game:
    """A board with the same legal moves as `board` (face-down cards unknown)."""
    return board_from_view(board)


def check_move(board: BoardView, move: Move) -> str | None:
    """Why `move` is illegal on `board`, or None when the server should accept it."""
    game = rules_board(board)
    try:
        game.play(move)
    except EngineError as exc:
        return str(exc)
    return None


def apply_ack(
    board: BoardView,
    move: Move,
    piles: Iterable[PileModel],
    *,
    on_foundations: int,
    total: int,
    won: bool,
    stuck: bool,
) -> BoardView:
    """`board` after the server accepted `move` and sent the changed `piles`.

    An ack carries piles and counts but not the round, phase or base rank; those follow from
    the rules, so they are recomputed on a rebuilt board that plays the move itself. Piles
    that make it no board of its game raise `UnusableBoardError`.
    """
    new_piles = dict(board.piles)
    for model in piles:
        new_piles[model.name] = pile_from_model(model)
    round_ = board.round
    try:
        game = rules_board(board)
        game.play(move)
        round_ = game.round
    except (EngineError, IndexError, ValueError):
        # The local board could not follow (it should always): keep the previous round.
        pass
    after = BoardView(
        game_id=board.game_id,
        piles=new_piles,
        round=round_,
        phase=board.phase,
        base_rank=board.base_rank,
        progress=(on_foundations, total),
        won=won,
        stuck=stuck,
    )
    rebuilt = checked_rules_board(after)
    base = rebuilt.base_rank()
    return BoardView(
        game_id=after.game_id,
        piles=new_piles,
        round=round_,
        phase=rebuilt.phase(),
        base_rank=None if base is None else RANK_CHARS[base],
        progress=(on_foundations, total),
        won=won,
        stuck=stuck,
    )
