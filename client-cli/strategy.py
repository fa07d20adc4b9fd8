"""Bot strategies: pick a move from what a player sees. Pure; no network, no clock.

Both strategies list moves on a board rebuilt with `board_from_view` (face-down cards unknown,
the same legal moves as the real board), never play into a position they have already been in
(so no ping-pong between two columns), deal when nothing better is left, and give up when
stuck or when too many moves went by without progress.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from solrace.engine import DEAL, BoardView, EngineError, Game, Move

from .boards import rules_board

STRATEGIES: Final = ("random", "greedy")

Position = tuple[tuple[int, tuple[int, ...]], ...]


def position_of(game: Game) -> Position:
    """A board's position as the bot knows it (unknown cards as -1); the stock pass is
    left out on purpose, so dealing through the stock again revisits the same positions."""
    return tuple((p.down, tuple(p.cards)) for p in game.piles)


@dataclass(frozen=True, slots=True)
class Choice:
    """The next action: a move, or resigning (with why)."""

    move: Move | None
    reason: str = ""

    @property
    def is_resign(self) -> bool:
        return self.move is None


@dataclass(slots=True)
class Strategy:
    """Shared bookkeeping; subclasses rank the candidate moves."""

    rng: random.Random = field(default_factory=random.Random)
    max_moves: int = 1000
    patience: int = 0
    seen: Counter[Position] = field(default_factory=Counter)
    moves_made: int = 0
    since_progress: int = 0
    _best: tuple[int, int] = (-1, 0)

    name: str = "strategy"

    def choose(self, board: BoardView) -> Choice:
        """The next action on `board` (the bot's own board, as the server last sent it)."""
        if board.won:
            return Choice(None, "every card on the foundations")
        if board.stuck:
            return Choice(None, "stuck")
        game = rules_board(board)
        here = position_of(game)
        self.seen[here] += 1
        self._note_progress(board, game)
        if self.moves_made >= self.max_moves:
            return Choice(None, f"move cap of {self.max_moves} reached")
        limit = self.patience or 3 * board.piles.get("stock", _EMPTY).down + 150
        if self.since_progress > limit:
            return Choice(None, f"no progress in {self.since_progress} moves")
        candidates: list[tuple[float, Move]] = []
        for move in game.card_moves():
            after = game.copy()
            try:
                after.play(move)
            except EngineError:
                continue
            if self.seen[position_of(after)]:
                continue
            candidates.append((self.score(game, after, move), move))
        can_deal = game.can_deal()
        pick = self.pick(candidates, can_deal)
        if pick is None:
            return Choice(None, "no move left that does not repeat a position")
        self.moves_made += 1
        self.since_progress += 1
        return Choice(pick)

    def new_race(self) -> None:
        """Start over for another race (another deal): the positions seen, the move cap and
        the progress watch count per race, not over a bot's whole run."""
        self.seen.clear()
        self.moves_made = 0
        self.since_progress = 0
        self._best = (-1, 0)

    def _note_progress(self, board: BoardView, game: Game) -> None:
        hidden = sum(p.down for p in game.piles if p.kind != 0)
        mark = (board.progress[0], -hidden)
        if mark > self._best:
            self._best = mark
            self.since_progress = 0

    def score(self, before: Game, after: Game, move: Move) -> float:
        return 0.0

    def pick(self, candidates: list[tuple[float, Move]], can_deal: bool) -> Move | None:
        raise NotImplementedError


_EMPTY: Final = type("_Empty", (), {"down": 0})()


@dataclass(slots=True)
class RandomStrategy(Strategy):
    """Any new position at random; deals about as often as one card move."""

    name: str = "random"

    def pick(self, candidates: list[tuple[float, Move]], can_deal: bool) -> Move | None:
        moves = [m for _, m in candidates]
        if can_deal:
            moves.append(DEAL)
        return self.rng.choice(moves) if moves else None


@dataclass(slots=True)
class GreedyStrategy(Strategy):
    """Foundation moves first, then moves that turn a face-down card or empty a pile, then
    other building moves; deals when no move scores above nothing."""

    name: str = "greedy"

    def score(self, before: Game, after: Game, move: Move) -> float:
        src_before = before.pile(move.src)
        src_after = after.pile(move.src)
        dst_before = before.pile(move.dst)
        on_before, _ = before.progress()
        on_after, _ = after.progress()
        score = 0.0
        score += 100.0 * (on_after - on_before)
        if src_before.kind == 2 and dst_before.kind != 2:
            score -= 60.0  # taking a card back from a foundation: only when nothing else
        hidden_before = sum(p.down for p in before.piles if p.kind != 0)
        hidden_after = sum(p.down for p in after.piles if p.kind != 0)
        score += 50.0 * (hidden_before - hidden_after)
        if not src_after.cards and src_before.kind == 3:
            # An emptied column helps, unless the whole pile just moved to another space.
            score += -40.0 if not dst_before.cards else 20.0
        if src_before.kind == 1:
            score += 8.0  # playing off the waste brings the next stock card
        if src_before.kind == 3 and dst_before.kind == 3 and src_before.down == 0:
            score -= 2.0  # shuffling between columns without uncovering anything
        return score + self.rng.random()

    def pick(self, candidates: list[tuple[float, Move]], can_deal: bool) -> Move | None:
        if candidates:
            best_score, best = max(candidates, key=lambda c: c[0])
            if best_score > 1.0 or not can_deal:
                return best
        if can_deal:
            return DEAL
        return None


def make_strategy(
    name: str, *, seed: int | None = None, max_moves: int = 1000, patience: int = 0
) -> Strategy:
    rng = random.Random(seed)
    if name == "random":
        return RandomStrategy(rng=rng, max_moves=max_moves, patience=patience)
    if name == "greedy":
        return GreedyStrategy(rng=rng, max_moves=max_moves, patience=patience)
    raise ValueError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}")
