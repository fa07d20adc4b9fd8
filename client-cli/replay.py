"""Replays: a finished race rebuilt move by move for each racer (pure; the TUI steps through).

A replay file is the server's `ReplayModel` as JSON (or msgpack). Since the deal is revealed,
each racer's board at each ply is `deal(game, number)` plus that racer's first `ply` moves,
shown the way the racer saw it (face-down cards stay backs). A replay is only as good as its
check (`verify_replay`): the commitment, every move's legality, the states and the ranking.
A forged file's boards stop at its first illegal move.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from solrace.engine import Audience, BoardView, EngineError, Game, deal, view
from solrace.server.protocol.messages import ReplayModel, ReplayRacer
from solrace.server.protocol.replay import VerifyReport, entry_text, shorten, verify_replay

from .render import render_plain


def _player_view(game: Game) -> BoardView:
    board = view(game, Audience.PLAYER)
    assert isinstance(board, BoardView)
    return board


def boards_of(replay: ReplayModel, racer: ReplayRacer) -> list[BoardView]:
    """The racer's board before each move and after each one that replays: len = moves + 1,
    or fewer when a move is illegal (a forged replay: `verify_replay` names the move); none
    when the deal cannot be made (an unknown game or number: `verify_replay` says which)."""
    try:
        game = deal(replay.game, replay.game_number)
    except EngineError:
        return []
    boards = [_player_view(game)]
    for entry in racer.moves:
        try:
            game.play(entry.move)
        except EngineError:
            break
        boards.append(_player_view(game))
    return boards


@dataclass(slots=True)
class ReplayCursor:
    """Where the viewer stands: which racer, which ply."""

    replay: ReplayModel
    racer_index: int = 0
    ply: int = 0
    _boards: dict[int, list[BoardView]] = field(default_factory=dict)
    _report: VerifyReport | None = None

    @property
    def report(self) -> VerifyReport:
        """`verify_replay` of the replay, computed once (the TUI asks on every step)."""
        if self._report is None:
            self._report = verify_replay(self.replay)
        return self._report

    @property
    def racer(self) -> ReplayRacer:
        return self.replay.racers[self.racer_index]

    @property
    def boards(self) -> list[BoardView]:
        """The current racer's boards (`boards_of`); none in a replay without racers (a
        forged file: `verify_replay` says so), so stepping stays at ply 0."""
        if not self.replay.racers:
            return []
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
        """One line: who, which move, when (seconds after the start); at the end of a forged
        racer's moves, the illegal move that stops the replay."""
        racer = self.racer
        if self.ply == 0:
            what = "the deal"
        else:
            entry = racer.moves[self.ply - 1]
            seconds = (entry.at_ms - self.replay.started_at_ms) / 1000
            what = f"move {self.ply}: {entry.move} at {seconds:.1f}s"
        line = f"{racer.name} ({racer.state}) {what} [{self.ply}/{self.last_ply}]"
        if self.ply == self.last_ply < len(racer.moves):
            line += f" ILLEGAL next: {racer.moves[self.ply].move} (ply {self.ply})"
        return line


def _seconds(replay: ReplayModel, at_ms: int) -> str:
    return f"{(at_ms - replay.started_at_ms) / 1000:.1f} s"


def _racer_lines(replay: ReplayModel, racer: ReplayRacer) -> Iterator[str]:
    """A racer's game: the deal, then each move with the board after it, up to an illegal
    move (named, with the moves after it that were not replayed). Every value from the file
    goes through `shorten` (one line, escaped, bounded), as in `verify_replay`'s lines: a
    name's or a move's newline must not write a line of its own (a forged verdict)."""
    count = len(racer.moves)
    moves = f"{count} move{'' if count == 1 else 's'}"
    yield f"{shorten(racer.name)} ({shorten(racer.player_id)}): {moves}, {shorten(racer.state)}"
    try:
        game = deal(replay.game, replay.game_number)
    except EngineError:
        yield "no boards: the deal cannot be made (see the problems above)"
        return
    yield "the deal:"
    yield render_plain(_player_view(game))
    for index, entry in enumerate(racer.moves):
        head = (
            f"move {index + 1} (ply {index}) at {_seconds(replay, entry.at_ms)}: "
            f"{shorten(entry.move)}"
        )
        try:
            game.play(entry.move)
        except EngineError as exc:
            yield ""
            yield f"{head} ILLEGAL: {shorten(str(exc), 200)}"
            rest = " ".join(shorten(m.move) for m in racer.moves[index + 1 :])
            yield "the replay of this racer stops here" + (
                f"; not replayed: {rest}" if rest else ""
            )
            return
        yield ""
        yield head
        yield render_plain(_player_view(game))


def replay_lines(replay: ReplayModel, report: VerifyReport | None = None) -> Iterator[str]:
    """The whole replay as text, line by line: the checks and the verdict, the results (marked
    NOT verified when a check fails), then each racer's moves, each with the board after it,
    and the verdict again. `report`: the replay's `verify_replay`, if computed already."""
    if report is None:
        report = verify_replay(replay)
    race, game, number = (shorten(v) for v in (replay.race_id, replay.game, replay.game_number))
    yield f"race {race}: {game} deal {number}"
    yield from report.lines
    yield from (f"PROBLEM: {problem}" for problem in report.problems)
    yield report.verdict
    if not report.is_valid:
        yield "results as the file states them (NOT verified):"
        yield from (f"  {entry_text(entry)}" for entry in replay.results)
    for racer in replay.racers:
        yield ""
        yield from _racer_lines(replay, racer)
    yield ""
    yield report.verdict
