"""Bot strategies on every game: they finish, never repeat a position, prefer foundations."""

from __future__ import annotations

import pytest

from solrace.client.boards import rules_board
from solrace.client.strategy import STRATEGIES, make_strategy, position_of
from solrace.engine import GAME_IDS, Audience, BoardView, deal, view


def board_of(game: object) -> BoardView:
    board = view(game, Audience.PLAYER)  # type: ignore[arg-type]
    assert isinstance(board, BoardView)
    return board


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("game_id", GAME_IDS)
def test_strategy_plays_legal_moves_to_an_end(strategy: str, game_id: str) -> None:
    game = deal(game_id, "3")
    bot = make_strategy(strategy, seed=5, max_moves=400)
    card_positions: list[object] = []
    for _ in range(2000):
        choice = bot.choose(board_of(game))
        if choice.is_resign:
            assert choice.reason
            break
        assert choice.move is not None
        if choice.move.n:
            card_positions.append(position_of(rules_board(board_of(game))))
        game.play(choice.move)  # raises if the bot chose an illegal move
    else:
        pytest.fail("the bot never stopped")
    assert bot.moves_made <= 400


def test_greedy_takes_a_foundation_move_first() -> None:
    for number in map(str, range(1, 40)):
        game = deal("klondike", number)
        board = board_of(game)
        foundation = [m for m in game.card_moves() if m.dst.startswith("f")]
        if foundation:
            choice = make_strategy("greedy", seed=1).choose(board)
            assert choice.move is not None and choice.move.dst.startswith("f")
            return
    pytest.fail("no deal with an opening foundation move")


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        make_strategy("clever")
