"""Replays: everything needed to re-check a finished race offline, and the check itself.

A replay holds the game, the revealed number and salt, the commitment published at the start,
and each racer's moves with server times. `verify_replay` recomputes the commitment, every
board (each move must be legal), each racer's progress and the final ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solrace.engine import EngineError, deal
from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.messages import ReplayModel, ReplayMove, ReplayRacer
from solrace.server.protocol.race import Racer, rank_racers
from solrace.server.protocol.records import MoveRecord, RaceRecord, RacerState


def build_replay(record: RaceRecord, moves: list[MoveRecord]) -> ReplayModel:
    """The replay of a finished race from its stored record and move log."""
    if (
        record.started_at_ms is None
        or record.ends_at_ms is None
        or record.finished_at_ms is None
        or record.results is None
    ):
        raise ValueError(f"race {record.race_id} has not finished")
    racers = []
    for racer in record.racers:
        own = sorted((m for m in moves if m.player_id == racer.player_id), key=lambda m: m.ply)
        racers.append(
            ReplayRacer(
                player_id=racer.player_id,
                name=racer.name,
                state=racer.state.value,
                state_at_ms=racer.state_at_ms,
                moves=[ReplayMove(ply=m.ply, move=m.move, at_ms=m.at_ms) for m in own],
            )
        )
    return ReplayModel(
        race_id=record.race_id,
        game=record.game,
        game_number=record.game_number,
        salt=record.salt,
        commitment=record.commitment,
        rated=record.rated,
        time_limit_s=record.time_limit_s,
        started_at_ms=record.started_at_ms,
        ends_at_ms=record.ends_at_ms,
        finished_at_ms=record.finished_at_ms,
        racers=racers,
        results=record.results,
    )


@dataclass
class VerifyReport:
    """What `verify_replay` found: no problems means the replay checks out."""

    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def is_valid(self) -> bool:
        return not self.problems


def _replay_racer(replay: ReplayModel, racer: ReplayRacer, report: VerifyReport) -> Racer:
    who = f"{racer.name} ({racer.player_id})"
    try:
        state = RacerState(racer.state)
    except ValueError:
        report.problems.append(f"{who}: unknown state {racer.state!r}")
        state = RacerState.GONE
    result = Racer(racer.player_id, racer.name, state, racer.state_at_ms)
    game = deal(replay.game, replay.game_number)
    on_before = game.progress()[0]
    last_at = replay.started_at_ms
    for index, move in enumerate(racer.moves):
        if move.ply != index:
            report.problems.append(f"{who}: move {index} has ply {move.ply}")
        if not replay.started_at_ms <= move.at_ms < replay.ends_at_ms or move.at_ms < last_at:
            report.problems.append(f"{who}: move {index} at an impossible time {move.at_ms}")
        last_at = move.at_ms
        try:
            game.play(move.move)
        except EngineError as exc:
            report.problems.append(f"{who}: move {index} {move.move!r} is refused: {exc}")
            break
        on_now = game.progress()[0]
        if on_now != on_before:
            result.reached_at_ms = move.at_ms - replay.started_at_ms
            on_before = on_now
    result.on_foundations, result.total = game.progress()
    result.moves = game.ply
    won = game.is_won()
    if won != (state is RacerState.FINISHED):
        report.problems.append(
            f"{who}: state {state.value} but the board is {'' if won else 'not '}won"
        )
    if state is RacerState.FINISHED and racer.moves and racer.state_at_ms != racer.moves[-1].at_ms:
        report.problems.append(f"{who}: finish time is not the winning move's time")
    if state is RacerState.STUCK and not game.is_stuck():
        report.problems.append(f"{who}: state stuck but the board has a way forward")
    report.lines.append(
        f"{who}: {len(racer.moves)} moves, {result.on_foundations}/{result.total} on foundations, "
        f"{state.value}"
    )
    return result


def verify_replay(replay: ReplayModel) -> VerifyReport:
    """Recompute commitment, boards, progress and ranking; list every disagreement."""
    report = VerifyReport()
    if not is_commitment_valid(replay.commitment, replay.game, replay.game_number, replay.salt):
        report.problems.append("commitment does not match game, number and salt")
    else:
        report.lines.append(f"commitment ok: sha256({replay.game}, {replay.game_number}, salt)")
    try:
        racers = [_replay_racer(replay, racer, report) for racer in replay.racers]
    except EngineError as exc:
        report.problems.append(f"cannot deal {replay.game} {replay.game_number}: {exc}")
        return report
    expected = rank_racers(racers, replay.started_at_ms)
    if expected != replay.results:
        report.problems.append("results differ from the ranking recomputed from the moves")
        for line in expected:
            report.lines.append(
                f"  expected #{line.rank} {line.name} {line.state} {line.on_foundations}"
            )
    else:
        for line in expected:
            report.lines.append(
                f"#{line.rank} {line.name}: {line.state}, {line.on_foundations}/{line.total}, "
                f"{line.elapsed_ms / 1000:.1f} s"
            )
    return report
