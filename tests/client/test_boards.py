"""Board conversions and acks: round, phase and base rank follow the rules."""

from __future__ import annotations

from solrace.client.boards import (
    apply_ack,
    board_from_model,
    check_move,
    rules_board,
)
from solrace.engine import GAME_IDS, Audience, BoardView, Move, deal, view, view_piles
from solrace.server.protocol.messages import PileModel
from solrace.server.protocol.views import board_model


def player_view(game_id: str, number: str = "7") -> tuple[BoardView, object]:
    game = deal(game_id, number)
    board = view(game, Audience.PLAYER)
    assert isinstance(board, BoardView)
    return board, game


def test_model_round_trip_for_every_game() -> None:
    for game_id in GAME_IDS:
        board, _ = player_view(game_id)
        assert board_from_model(board_model(board)) == board


def test_rules_board_lists_the_real_legal_moves() -> None:
    for game_id in GAME_IDS:
        board, game = player_view(game_id)
        assert rules_board(board).legal_moves() == game.legal_moves()  # type: ignore[attr-defined]


def test_check_move_explains_an_illegal_move() -> None:
    board, _ = player_view("klondike")
    assert check_move(board, Move.parse("t0-t0")) is not None
    assert check_move(board, Move.parse("deal")) is None


def _ack(game_id: str, moves: list[str]) -> tuple[BoardView, BoardView]:
    game = deal(game_id, "7")
    board = view(game, Audience.PLAYER)
    assert isinstance(board, BoardView)
    for text in moves:
        game.play(text)
        changed = view_piles(game, game.touched_piles())
        on, total = game.progress()
        board = apply_ack(
            board,
            Move.parse(text),
            [PileModel(name=p.name, down=p.down, cards=list(p.cards)) for p in changed.values()],
            on_foundations=on,
            total=total,
            won=False,
            stuck=False,
        )
    real = view(game, Audience.PLAYER)
    assert isinstance(real, BoardView)
    return board, real


def test_round_follows_a_turned_waste() -> None:
    board, real = _ack("klondike", ["deal"] * 25)
    assert real.round == 2
    assert board.round == real.round
    assert board.piles == real.piles


def test_terrace_base_choice_sets_phase_and_base_rank() -> None:
    game = deal("terrace", "7")
    first = next(m for m in game.legal_moves())
    board, real = _ack("terrace", [str(first)])
    assert board.phase == real.phase == "play"
    assert board.base_rank == real.base_rank is not None
    assert board.piles == real.piles
