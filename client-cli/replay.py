"""Replays: a finished race rebuilt move by move for each racer (pure; the TUI steps through).

A replay file is the server's `ReplayModel` as JSON. Since the deal is revealed, each racer's
board at each ply is `deal(game, number)` plus that racer's first `ply` moves, shown the way the
racer saw it (face-down cards stay backs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from solrace.engine import Audience, BoardView, EngineError, deal, view
from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.messages import ReplayModel, ReplayRacer

from .render import render_plain


def load_replay_file(path: Path) -> ReplayModel:
    """Read a replay JSON file; `ValueError` says what is wrong with it."""
    text = path.read_text()
    try:
        return ReplayModel.model_validate_json(text, strict=False)
    except ValueError as exc:
        raise ValueError(f"{path} is not a solrace replay: {exc}") from None


def boards_of(replay: ReplayModel, racer: ReplayRacer) -> list[BoardView]:
    """The racer's board before each move and after the last one (len = moves + 1)."""
    game = deal(replay.game, replay.game_number)
    boards: list[BoardView] = []
    first = view(game, Audience.PLAYER)
    assert isinstance(first, BoardView)
    boards.append(first)
    for entry in racer.moves:
        try:
            game.play(entry.move)
        except EngineError:
            break  # a corrupt replay: show what replays
        after = view(game, Audience.PLAYER)
        assert isinstance(after, BoardView)
        boards.append(after)
    return boards


@dataclass(slots=True)
class ReplayCursor:
    """Where the viewer stands: which racer, which ply."""

    replay: ReplayModel
    racer_index: int = 0
    ply: int = 0
    _boards: dict[int, list[BoardView]] = field(default_factory=dict)

    @property
    def racer(self) -> ReplayRacer:
        return self.replay.racers[self.racer_index]

    @property
    def boards(self) -> list[BoardView]:
        cached = self._boards.get(self.racer_index)
        if cached is None:
            cached = boards_of(self.replay, self.racer)
            self._boards[self.racer_index] = cached
        return cached

    @property
    def board(self) -> BoardView:
        return self.boards[self.ply]

    @property
    def last_ply(self) -> int:
        return len(self.boards) - 1

    def step(self, delta: int) -> None:
        self.ply = max(0, min(self.last_ply, self.ply + delta))

    def seek(self, ply: int) -> None:
        self.ply = max(0, min(self.last_ply, ply))

    def next_racer(self, delta: int = 1) -> None:
        if self.replay.racers:
            self.racer_index = (self.racer_index + delta) % len(self.replay.racers)
            self.ply = min(self.ply, self.last_ply)

    def describe(self) -> str:
        """One line: who, which move, when (seconds after the start)."""
        racer = self.racer
        if self.ply == 0:
            what = "the deal"
        else:
            entry = racer.moves[self.ply - 1]
            seconds = (entry.at_ms - self.replay.started_at_ms) / 1000
            what = f"move {self.ply}: {entry.move} at {seconds:.1f}s"
        return f"{racer.name} ({racer.state}) {what} [{self.ply}/{self.last_ply}]"


def is_replay_verified(replay: ReplayModel) -> bool:
    return is_commitment_valid(replay.commitment, replay.game, replay.game_number, replay.salt)


def replay_text(replay: ReplayModel) -> str:
    """The whole replay as text: the result, then each racer's moves and final board."""
    verdict = "verified" if is_replay_verified(replay) else "MISMATCH"
    lines = [
        f"race {replay.race_id}: {replay.game} deal {replay.game_number} (commitment {verdict})"
    ]
    for entry in replay.results:
        lines.append(
            f"{entry.rank}. {entry.name} {entry.state} {entry.on_foundations}/{entry.total} "
            f"{entry.elapsed_ms / 1000:.1f}s"
        )
    for racer in replay.racers:
        moves = " ".join(m.move for m in racer.moves) or "(no moves)"
        lines += ["", f"{racer.name}: {len(racer.moves)} moves: {moves}"]
        lines.append(render_plain(boards_of(replay, racer)[-1]))
    return "\n".join(lines)
