"""Replays: everything needed to re-check a finished race offline, and the check itself.

A replay holds the game, the revealed number and salt, the commitment published at the start,
and each racer's moves with server times. `verify_replay` recomputes the commitment, every
board (each move must be legal), each racer's progress and the final ranking; `parse_replay`
reads a replay file's bytes (JSON or msgpack; `solrace.replay_file` reads the file) and says in one
line what is wrong with one that is not.
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass, field
from typing import Final

from pydantic import BaseModel, ValidationError

from solrace.engine import EngineError, Game, deal
from solrace.server.protocol.codec import unpack_map
from solrace.server.protocol.commitment import is_commitment_valid
from solrace.server.protocol.errors import DecodeError
from solrace.server.protocol.messages import ReplayModel, ReplayMove, ReplayRacer, ResultEntry
from solrace.server.protocol.race import Racer, rank_racers
from solrace.server.protocol.records import MoveRecord, RaceRecord, RacerState
from solrace.server.protocol.safe_text import one_line


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


class ReplayFileError(ValueError):
    """Bytes that are not a replay; the message says why in one line."""


_KINDS: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
    bytes: "binary data",
}


def _where(loc: tuple[int | str, ...]) -> str:
    """``("racers", 0, "moves", 2, "at_ms")`` -> ``racers[0].moves[2].at_ms``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text or "the replay"


def describe_invalid(exc: ValidationError) -> str:
    """A replay's schema errors in one line: missing fields, unknown fields, the first invalid
    values (without pydantic's help links)."""
    missing: list[str] = []
    unknown: list[str] = []
    invalid: list[str] = []
    for error in exc.errors(include_url=False):
        where = _where(error["loc"])
        if error["type"] == "missing":
            missing.append(where)
        elif error["type"] == "extra_forbidden":
            unknown.append(where)
        else:
            invalid.append(f"{where} ({error['msg']})")
    parts = []
    for label, names, limit in (
        ("missing", missing, 12),
        ("unknown", unknown, 12),
        ("invalid", invalid, 4),
    ):
        if names:
            more = f" and {len(names) - limit} more" if len(names) > limit else ""
            parts.append(f"{label}: {', '.join(names[:limit])}{more}")
    return "; ".join(parts)


class _UnreadableJSON(Exception):
    """Well-formed JSON that Python will not read: nesting deeper than the interpreter's
    recursion limit, or a number longer than `sys.get_int_max_str_digits()`."""


def _load_json(data: bytes) -> object:
    """`json.loads`, with the two limits it hits on hostile input turned into one error (a
    `RecursionError` and a `ValueError` that is not a `JSONDecodeError` otherwise escape)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise _UnreadableJSON("nested too deep") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        raise _UnreadableJSON(
            f"a number longer than {sys.get_int_max_str_digits()} digits"
        ) from None


def parse_replay(data: bytes) -> ReplayModel:
    """A replay from a file's bytes: JSON (a bare replay, or a `replay` message) or one msgpack
    frame of either. `ReplayFileError` says what is wrong in one line."""
    if not data.strip():
        raise ReplayFileError("the file is empty")
    value: object
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            value = _load_json(data)
        except json.JSONDecodeError as exc:
            raise ReplayFileError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except UnicodeDecodeError:
            raise ReplayFileError("invalid JSON: not UTF-8 text") from None
        except _UnreadableJSON as exc:
            raise ReplayFileError(f"invalid JSON: {exc}") from None
    else:
        try:
            value = unpack_map(data)
        except DecodeError:
            try:
                value = _load_json(data)
            except json.JSONDecodeError as exc:
                raise ReplayFileError(
                    f"neither JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}) "
                    "nor a msgpack map"
                ) from None
            except UnicodeDecodeError:
                raise ReplayFileError("neither JSON nor a msgpack map") from None
            except _UnreadableJSON as exc:
                raise ReplayFileError(f"neither JSON ({exc}) nor a msgpack map") from None
    if isinstance(value, dict) and value.get("type") == "replay":
        value = value.get("replay")
    if not isinstance(value, dict):
        kind = _KINDS.get(type(value), type(value).__name__)
        raise ReplayFileError(f"a replay is an object (a map), not {kind}")
    try:
        return ReplayModel.model_validate(value)
    except ValidationError as exc:
        raise ReplayFileError(describe_invalid(exc)) from None


def shorten(text: str, limit: int = 40) -> str:
    """A value from a replay file as it is printed: on one line, its control characters
    escaped (`one_line`: a forged name must not write lines of its own, nor drive the
    terminal), whole up to `limit` characters, else its start and its length (a forged
    file's 100,000-digit game number is not a screenful)."""
    if len(text) > limit:
        text = f"{text[: limit - 10]}... ({len(text)} characters)"
    return one_line(text)


@dataclass(frozen=True, slots=True)
class IllegalMove:
    """The first move of a racer that the engine refuses (the rest are not replayed)."""

    index: int
    """Position in the racer's move list (0-based: the ply it should have)."""
    move: str
    reason: str
    after: int
    """How many moves follow it (not replayed, so not checked)."""

    def describe(self) -> str:
        rest = ""
        if self.after:
            rest = f"; the {self.after} move{'s' if self.after > 1 else ''} after it"
            rest += " are not replayed" if self.after > 1 else " is not replayed"
        move = shorten(repr(self.move))
        return f"illegal move {move} at ply {self.index}: {shorten(self.reason, 200)}{rest}"


@dataclass
class VerifyReport:
    """What `verify_replay` found: no problems means the replay checks out.

    `lines` say what was checked and found true, `problems` what was not; `illegal` has one
    entry per racer of the replay, in order (None: every move of that racer is legal);
    `boards` what each racer's moves make of the deal, by player id (`board_text`)."""

    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    commitment_ok: bool = False
    illegal: list[IllegalMove | None] = field(default_factory=list)
    boards: dict[str, str] = field(default_factory=dict)

    @property
    def is_valid(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        """One line: the result of every check together."""
        if self.is_valid:
            return "replay verified"
        count = len(self.problems)
        return f"replay does NOT verify ({count} problem{'' if count == 1 else 's'})"


def _who(racer: ReplayRacer) -> str:
    return f"{shorten(racer.name)} ({shorten(racer.player_id)})"


def _check_racer_times(replay: ReplayModel, racer: ReplayRacer, report: VerifyReport) -> None:
    """A finished race's racer is done (its state set at the start or later, a time-out at the
    race's end) and made no move after its state changed or after the race finished. A state
    may be set after the finish: a tick that comes late (a store outage) marks racers past
    their grace gone at its own time before it ends the race at its time limit."""
    who = _who(racer)
    state, at = racer.state, racer.state_at_ms
    if state in (RacerState.JOINED, RacerState.PLAYING):
        report.problems.append(f"{who}: state {state} in a race that has finished")
        return
    if at is None:
        report.problems.append(f"{who}: state {shorten(state)} without the time it was set")
        return
    if at < replay.started_at_ms:
        report.problems.append(
            f"{who}: state {shorten(state)} at {at}, before the race started "
            f"({replay.started_at_ms})"
        )
    if state == RacerState.TIMED_OUT and at != replay.ends_at_ms:
        report.problems.append(
            f"{who}: timed out at {at}, not at the race's time limit ({replay.ends_at_ms})"
        )
    for limit, what in (
        (at, f"its state became {shorten(state)}"),
        (replay.finished_at_ms, "the race finished"),
    ):
        late = [index for index, move in enumerate(racer.moves) if move.at_ms > limit]
        if late:
            first = late[0]
            count = f"{len(late)} moves" if len(late) > 1 else "a move"
            report.problems.append(
                f"{who}: {count} after {what} at {limit} "
                f"(the first: move {first} at {racer.moves[first].at_ms})"
            )


def _replay_racer(replay: ReplayModel, racer: ReplayRacer, report: VerifyReport) -> Racer:
    who = _who(racer)
    try:
        state = RacerState(racer.state)
    except ValueError:
        report.problems.append(f"{who}: unknown state {shorten(repr(racer.state))}")
        state = RacerState.GONE
    else:
        _check_racer_times(replay, racer, report)
    result = Racer(racer.player_id, racer.name, state, racer.state_at_ms)
    game = deal(replay.game, replay.game_number)
    on_before = game.progress()[0]
    last_at = replay.started_at_ms
    illegal: IllegalMove | None = None
    for index, move in enumerate(racer.moves):
        if move.ply != index:
            report.problems.append(f"{who}: move {index} has ply {move.ply}")
        if not replay.started_at_ms <= move.at_ms < replay.ends_at_ms or move.at_ms < last_at:
            report.problems.append(f"{who}: move {index} at an impossible time {move.at_ms}")
        last_at = move.at_ms
        try:
            game.play(move.move)
        except EngineError as exc:
            illegal = IllegalMove(index, move.move, str(exc), len(racer.moves) - index - 1)
            report.problems.append(f"{who}: {illegal.describe()}")
            break
        on_now = game.progress()[0]
        if on_now != on_before:
            result.reached_at_ms = move.at_ms - replay.started_at_ms
            on_before = on_now
    report.illegal.append(illegal)
    result.on_foundations, result.total = game.progress()
    result.moves = game.ply
    report.boards[racer.player_id] = board_text(game, illegal)
    if illegal is None:
        # The board is the racer's final board: its state must agree with it.
        won = game.is_won()
        if won != (state is RacerState.FINISHED):
            report.problems.append(
                f"{who}: state {state.value} but the board is {'' if won else 'not '}won"
            )
        if (
            state is RacerState.FINISHED
            and racer.moves
            and racer.state_at_ms != racer.moves[-1].at_ms
        ):
            report.problems.append(f"{who}: finish time is not the winning move's time")
        if state is RacerState.STUCK and not game.is_stuck():
            report.problems.append(f"{who}: state stuck but the board has a way forward")
        count = len(racer.moves)
        report.lines.append(
            f"{who}: {count} move{'' if count == 1 else 's'}, all legal; recomputed: "
            f"{cards_text(result.on_foundations, result.total)}, "
            f"{report.boards[racer.player_id]}; state in the file: {state.value}"
        )
    else:
        report.lines.append(
            f"{who}: {illegal.index} of {len(racer.moves)} moves legal, then an illegal one"
        )
    return result


def cards_text(on_foundations: int, total: int) -> str:
    """`13 of 52 cards on the foundations`: a count said as what it counts."""
    return f"{on_foundations} of {total} cards on the foundations"


def board_text(game: Game, illegal: IllegalMove | None) -> str:
    """What a racer's moves made of the deal, as a recomputed line says it: `board won`,
    `board stuck`, `board not won` (a way forward left), or where an illegal move stopped it.
    Only a won board is a finish, whatever state the file gives."""
    if illegal is not None:
        return f"board as of the illegal move at ply {illegal.index}"
    if game.is_won():
        return "board won"
    return "board stuck" if game.is_stuck() else "board not won"


def result_time(entry: ResultEntry) -> str:
    """A result's time said as what it is (the ranking's, docs/protocol.md): a completed
    board's completion time (`in 93.012s`), else when the racer put its last card out (its
    count was reached then: `last card out at 8.700s`); nothing without a card out. To the
    millisecond, as the ranking compares them: two lines never look alike with two ranks."""
    seconds = entry.elapsed_ms / 1000
    if entry.state == "finished":
        return f"in {seconds:.3f}s"
    if entry.on_foundations == 0:
        return ""
    return f"last card out at {seconds:.3f}s"


def entry_text(entry: ResultEntry) -> str:
    """A results line in words (verify, replays): `#1 ann (p1) finished 52/52 in 61.200s`,
    `#2 bob (p2) timed_out 17/52, last card out at 8.700s`."""
    line = (
        f"#{entry.rank} {shorten(entry.name)} ({shorten(entry.player_id)}) {shorten(entry.state)} "
        f"{entry.on_foundations}/{entry.total}"
    )
    time = result_time(entry)
    if not time:
        return line
    return f"{line} {time}" if entry.state == "finished" else f"{line}, {time}"


def _race_problems(replay: ReplayModel) -> list[str]:
    """What no finished race can look like, whatever its moves: no racers, a racer listed
    twice, a race that finished before it started, a time limit that does not end its time
    after the start (a race's end is its start plus its time limit)."""
    problems = []
    if not replay.racers:
        problems.append("the replay has no racers")
    seen: set[str] = set()
    for racer in replay.racers:
        if racer.player_id in seen:
            problems.append(f"racer {shorten(racer.player_id)} is listed more than once")
        seen.add(racer.player_id)
    if replay.ends_at_ms <= replay.started_at_ms:
        problems.append(
            f"the time limit ends ({replay.ends_at_ms}) before the race starts "
            f"({replay.started_at_ms})"
        )
    if replay.finished_at_ms < replay.started_at_ms:
        problems.append(
            f"the race finished ({replay.finished_at_ms}) before it started "
            f"({replay.started_at_ms})"
        )
    limit_ms = replay.time_limit_s * 1000
    if replay.ends_at_ms != replay.started_at_ms + limit_ms:
        problems.append(
            f"the time limit ends at {replay.ends_at_ms}, not {replay.time_limit_s} s after "
            f"the start ({replay.started_at_ms + limit_ms})"
        )
    return problems


def verify_replay(replay: ReplayModel) -> VerifyReport:
    """Recompute commitment, boards, progress and ranking; list every disagreement."""
    report = VerifyReport()
    game, number = shorten(replay.game), shorten(replay.game_number)
    report.commitment_ok = is_commitment_valid(
        replay.commitment, replay.game, replay.game_number, replay.salt
    )
    if report.commitment_ok:
        report.lines.append(
            f"commitment verified: it is sha256 of game {game}, number {number} and the salt"
        )
    else:
        report.problems.append(
            f"commitment does not match game {game}, number {number} and the salt"
        )
    report.problems += _race_problems(replay)
    try:
        racers = [_replay_racer(replay, racer, report) for racer in replay.racers]
    except EngineError as exc:
        report.problems.append(f"cannot deal {game} {number}: {shorten(str(exc), 400)}")
        return report
    expected = rank_racers(racers, replay.started_at_ms)
    if expected == replay.results:
        report.lines.append("results match the ranking recomputed from the moves:")
        for entry in expected:
            board = report.boards.get(entry.player_id, "")
            # A finish on a board not won (a problem already): not said as a finish.
            is_unwon_finish = entry.state == "finished" and board != "board won"
            text = recomputed_text(entry, board) if is_unwon_finish else entry_text(entry)
            report.lines.append(f"  {text}")
        return report
    basis = "the moves" if not any(report.illegal) else "the moves up to the illegal one"
    for line, (given, computed) in enumerate(
        itertools.zip_longest(replay.results, expected), start=1
    ):
        if given == computed:
            continue
        says = "nothing" if given is None else entry_text(given)
        if computed is None:
            gives = "nothing (no such racer)"
        else:
            gives = recomputed_text(computed, report.boards.get(computed.player_id, ""))
        problem = f"results line {line} does not match {basis}: the file says {says}; "
        problem += f"recomputed: {gives}"
        if given is not None and computed is not None:
            problem += "; differs in " + "; ".join(_differences(given, computed))
        report.problems.append(problem)
    return report


def recomputed_text(entry: ResultEntry, board: str) -> str:
    """A results line recomputed from the moves, said as what it is: the cards its moves put
    out, the board they make (`board_text`), and the state, which is the file's (only a won
    board is a finish: `finished 13/52` read as a finish): `#1 ann (p1): 13 of 52 cards on
    the foundations, board not won, state finished as the file says`."""
    line = (
        f"#{entry.rank} {shorten(entry.name)} ({shorten(entry.player_id)}): "
        f"{cards_text(entry.on_foundations, entry.total)}"
    )
    if board:
        line += f", {board}"
    line += f", state {shorten(entry.state)} as the file says"
    time = result_time(entry)
    is_finish = entry.state != "finished" or board == "board won"
    return f"{line}, {time}" if time and is_finish else line


#: How `_differences` names the fields of a results line.
_FIELD_WORDS: Final = {
    "on_foundations": "cards on the foundations",
    "total": "cards in the deal",
    "elapsed_ms": "time (elapsed_ms)",
}


def _differences(given: BaseModel, computed: BaseModel) -> list[str]:
    """The fields of two results lines that differ: `what: file value in the file,
    recomputed value from the moves`."""
    return [
        f"{_FIELD_WORDS.get(name, name)}: {shorten(repr(getattr(given, name)))} in the file, "
        f"{shorten(repr(getattr(computed, name)))} from the moves"
        for name in type(given).model_fields
        if getattr(given, name) != getattr(computed, name)
    ]
