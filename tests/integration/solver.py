"""A small depth-first solver: finds a winning line for easy deals (tests need real wins)."""

from __future__ import annotations

from collections.abc import Callable

from solrace.engine import Game, Move, deal


def _ordered(game: Game) -> list[Move]:
    def score(move: Move) -> int:
        if move.is_deal:
            return 5
        if move.dst.startswith("f"):
            return 0
        if move.src.startswith("f"):
            return 9
        if move.src.startswith("t"):
            pile = game.pile(move.src)
            return (
                1
                if pile.face_down_count() and move.n == len(pile.cards) - pile.face_down_count()
                else 3
            )
        return 2

    return sorted(game.legal_moves(), key=score)


def search(
    game_id: str, number: str, goal: Callable[[Game], bool], max_nodes: int
) -> list[str] | None:
    """A move list from the deal to a position where `goal` holds (depth first, likely moves
    first, no position twice), or None when the search budget runs out first. Iterative: a
    line may be a thousand moves long, past Python's recursion limit."""
    game = deal(game_id, number)
    if goal(game):
        return []
    seen = {str(game)}
    line: list[str] = []
    # The moves still to try from each position of the line (the deal's first).
    untried = [iter(_forward(game))]
    while untried:
        move = next(untried[-1], None)
        if move is None:  # every move from here tried: back one
            untried.pop()
            if untried:
                line.pop()
                game.undo()
            continue
        game.play(move)
        line.append(str(move))
        if goal(game):
            return line
        key = str(game)
        if key in seen or len(seen) >= max_nodes:
            line.pop()
            game.undo()
            continue
        seen.add(key)
        untried.append(iter(_forward(game)))
    return None


def _forward(game: Game) -> list[Move]:
    """The moves worth trying, likeliest first (none takes a card off a foundation)."""
    return [move for move in _ordered(game) if not move.src.startswith("f")]


def solve(game_id: str, number: str, max_nodes: int = 20_000) -> list[str] | None:
    """A winning move list for the deal, or None when the search budget runs out."""
    return search(game_id, number, Game.is_won, max_nodes)


def scoring_line(game_id: str, number: str, max_nodes: int = 20_000) -> list[str]:
    """A move list that puts one card on a foundation. Some deals have none that only deals
    the stock (its aces buried in the tableau); this one moves tableau cards too."""
    line = search(game_id, number, lambda game: game.progress()[0] > 0, max_nodes)
    if line is None:
        raise LookupError(f"no line scores a card of {game_id} {number} within the budget")
    return line


def find_winnable(
    game_id: str, candidates: range, max_nodes: int = 20_000
) -> tuple[str, list[str]]:
    for n in candidates:
        line = solve(game_id, str(n), max_nodes)
        if line is not None:
            return str(n), line
    raise LookupError("no deal solved within the budget")
