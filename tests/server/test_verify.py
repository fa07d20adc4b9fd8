from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solrace.engine import deal
from solrace.server.protocol.codec import encode
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Replay,
    ReplayModel,
    ReplayMove,
    ReplayRacer,
    ResultEntry,
)
from solrace.server.protocol.replay import (
    ReplayFileError,
    build_replay,
    parse_replay,
    verify_replay,
)
from solrace.server.verify import main
from tests.server.protocol.test_race import running

# Stock clicks on klondike 1 put no card on a foundation: the ranking stays 0/52 at 0 s.
MOVES = ("deal", "deal", "deal")
ILLEGAL = "t0-t1"  # klondike 1: t1 needs a red 9 on TS, not QH


def sample(moves: tuple[str, ...] = ("deal",)) -> ReplayModel:
    game = deal("klondike", "1")
    for move in moves:
        game.play(move)
    on, total = game.progress()
    return ReplayModel(
        race_id=RaceId("r1"),
        game="klondike",
        game_number="1",
        salt="s",
        commitment=commit("klondike", "1", "s"),
        rated=False,
        time_limit_s=60,
        started_at_ms=1000,
        ends_at_ms=61000,
        finished_at_ms=2000,
        racers=[
            ReplayRacer(
                player_id=PlayerId("p1"),
                name="ann",
                state="resigned",
                state_at_ms=2000,
                moves=[
                    ReplayMove(ply=ply, move=move, at_ms=1500 + ply)
                    for ply, move in enumerate(moves)
                ],
            )
        ],
        results=[
            ResultEntry(
                rank=1,
                player_id=PlayerId("p1"),
                name="ann",
                state="resigned",
                on_foundations=on,
                total=total,
                elapsed_ms=0,
            )
        ],
    )


def with_illegal_move(ply: int) -> dict[str, Any]:
    """`sample(MOVES)` as JSON with an illegal move inserted at `ply` (plies renumbered)."""
    data: dict[str, Any] = json.loads(sample(MOVES).model_dump_json())
    moves = data["racers"][0]["moves"]
    moves.insert(ply, {"ply": ply, "move": ILLEGAL, "at_ms": moves[ply - 1]["at_ms"]})
    for index, move in enumerate(moves):
        move["ply"] = index
    return data


def write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "race.json"
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def test_a_true_replay_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, sample(MOVES).model_dump_json())
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "commitment verified: it is sha256 of game klondike, number 1 and the salt" in out
    assert (
        "ann (p1): 3 moves, all legal; recomputed: 0 of 52 cards on the foundations, board "
        "not won; state in the file: resigned"
    ) in out
    assert out.splitlines()[-1] == "replay verified"
    assert "PROBLEM" not in out


@pytest.mark.parametrize(
    "change",
    [
        {"game_number": "2"},
        {"salt": "t"},
        {
            "racers": [
                {
                    "player_id": "p1",
                    "name": "ann",
                    "state": "finished",
                    "state_at_ms": 2000,
                    "moves": [{"ply": 0, "move": "t0-t1", "at_ms": 1500}],
                }
            ]
        },
    ],
)
def test_a_tampered_replay_does_not(tmp_path: Path, change: dict[str, object]) -> None:
    data = json.loads(sample().model_dump_json()) | change
    path = write(tmp_path, json.dumps(data))
    assert main([str(path), "-q"]) == 1


def test_quiet_prints_nothing_for_a_replay_that_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, sample(MOVES).model_dump_json())
    assert main([str(path), "-q"]) == 0
    assert capsys.readouterr() == ("", "")


def test_quiet_prints_only_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps(with_illegal_move(1)))
    assert main([str(path), "--quiet"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "PROBLEM: ann (p1): illegal move 't0-t1' at ply 1: t1 builds down in alternating "
        "colours: it needs a red 9 on TS, not QH; the 2 moves after it are not replayed"
    ]


def test_an_illegal_move_is_named_with_its_ply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, json.dumps(with_illegal_move(3)))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM: ann (p1): illegal move 't0-t1' at ply 3: t1 builds down" in out
    assert "is not replayed" not in out  # nothing follows the last move
    assert "ann (p1): 3 of 4 moves legal, then an illegal one" in out
    assert "all legal" not in out
    assert out.splitlines()[-1] == "replay does NOT verify (1 problem)"

    report = verify_replay(ReplayModel.model_validate(with_illegal_move(3)))
    assert report.commitment_ok
    [illegal] = report.illegal
    assert illegal is not None and (illegal.index, illegal.move) == (3, ILLEGAL)


def test_forged_results_are_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(sample(MOVES).model_dump_json())
    data["results"][0]["on_foundations"] = 7
    path = write(tmp_path, json.dumps(data))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert (
        "PROBLEM: results line 1 does not match the moves: the file says #1 ann (p1) resigned "
        "7/52, last card out at 0.000s; recomputed: #1 ann (p1): 0 of 52 cards on the "
        "foundations, board not won, state resigned as the file says; differs in cards on the "
        "foundations: 7 in the file, 0 from the moves\n"
    ) in out
    assert "results match" not in out


def finished_with_moves_left_out(cards_stated: int) -> dict[str, Any]:
    """`sample(MOVES)` forged: ann `finished`, with `cards_stated` cards out in its results,
    though its moves put none out (the winning moves left out)."""
    data: dict[str, Any] = json.loads(sample(MOVES).model_dump_json())
    data["racers"][0] |= {"state": "finished", "state_at_ms": 1502}
    data["results"][0] |= {"state": "finished", "on_foundations": cards_stated, "elapsed_ms": 502}
    return data


def test_a_finish_the_moves_do_not_make_is_not_said_as_a_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forged finish: what was recomputed said as cards out of the total, the board they
    make and the file's state (it said `the moves give #1 ann (p1) finished 0/52 in 0.502s`,
    read as a finish), and the mismatch by name."""
    path = write(tmp_path, json.dumps(finished_with_moves_left_out(52)))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert (
        "ann (p1): 3 moves, all legal; recomputed: 0 of 52 cards on the foundations, board not "
        "won; state in the file: finished"
    ) in out
    assert (
        "PROBLEM: results line 1 does not match the moves: the file says #1 ann (p1) finished "
        "52/52 in 0.502s; recomputed: #1 ann (p1): 0 of 52 cards on the foundations, board not "
        "won, state finished as the file says; differs in cards on the foundations: 52 in the "
        "file, 0 from the moves"
    ) in out
    assert not [line for line in out if "finished 0/52" in line], out


def test_results_that_agree_with_a_forged_finish_are_not_said_as_a_finish() -> None:
    report = verify_replay(ReplayModel.model_validate(finished_with_moves_left_out(0)))
    assert report.problems[0] == "ann (p1): state finished but the board is not won"
    assert report.lines[-1] == (
        "  #1 ann (p1): 0 of 52 cards on the foundations, board not won, state finished as "
        "the file says"
    )


def test_a_results_line_wrong_where_it_does_not_show_says_where() -> None:
    data = json.loads(sample(MOVES).model_dump_json())
    data["results"][0]["elapsed_ms"] = 3  # no card out: the line shows no time
    assert problems_of(data) == [
        "results line 1 does not match the moves: the file says #1 ann (p1) resigned 0/52; "
        "recomputed: #1 ann (p1): 0 of 52 cards on the foundations, board not won, state "
        "resigned as the file says; differs in time (elapsed_ms): 3 in the file, 0 from the moves"
    ]


def test_a_msgpack_replay_message_verifies(tmp_path: Path) -> None:
    path = write(tmp_path, encode(Replay(replay=sample(MOVES))))
    assert main([str(path), "-q"]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "{not json",
            "invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes",
        ),
        (
            '{\n  "race_id": "r1"\n  "game": 1}',
            "invalid JSON at line 3, column 3: Expecting ',' delimiter",
        ),
        ("hello", "neither JSON (Expecting value at line 1, column 1) nor a msgpack map"),
        ("", "the file is empty"),
        ("[1, 2]", "a replay is an object (a map), not an array"),
        (
            "{}",
            "missing: race_id, game, game_number, salt, commitment, rated, time_limit_s, "
            "started_at_ms, ends_at_ms, finished_at_ms, racers, results",
        ),
    ],
)
def test_a_file_that_is_not_a_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = write(tmp_path, content)
    assert main([str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"solrace verify: {path} is not a solrace replay: {message}\n"


def test_schema_errors_are_one_line_without_links() -> None:
    data = json.loads(sample(MOVES).model_dump_json())
    del data["salt"]
    data["rated"] = "no"
    data["color"] = "red"
    data["racers"][0]["moves"][2]["at_ms"] = "soon"
    with pytest.raises(ReplayFileError) as caught:
        parse_replay(json.dumps(data).encode())
    assert str(caught.value) == (
        "missing: salt; unknown: color; invalid: rated (Input should be a valid boolean), "
        "racers[0].moves[2].at_ms (Input should be a valid integer)"
    )


def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nowhere.json")]) == 2
    assert capsys.readouterr().err == (
        f"solrace verify: cannot read {tmp_path / 'nowhere.json'}: No such file or directory\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deep"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "invalid JSON: nested too deep"),
        (b'{"started_at_ms": ' + b"9" * 5000 + b"}", "invalid JSON: a number longer than "),
        # Not starting with a bracket: read as msgpack first, then as JSON.
        (b" \n" + b"[" * 100_000, "invalid JSON: nested too deep"),
        (
            b'\xef\xbb\xbf{"rated": ' + b"9" * 5000 + b"}",  # UTF-8 with a byte order mark
            "neither JSON (a number longer than 4300 digits) nor a msgpack map",
        ),
    ],
    ids=["deep-array", "deep-object", "long-number", "deep-after-space", "long-number-bom"],
)
def test_json_beyond_pythons_limits_is_not_a_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    """Nesting past the recursion limit and numbers past `sys.get_int_max_str_digits()` are
    well-formed JSON that `json.loads` refuses with a RecursionError or a bare ValueError:
    one line and status 2, like any other file that is not a replay."""
    path = write(tmp_path, content)
    assert main([str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"solrace verify: {path} is not a solrace replay: {message}")
    assert err.count("\n") == 1


def problems_of(data: dict[str, Any]) -> list[str]:
    return verify_replay(ReplayModel.model_validate(data)).problems


def resigned_at(at_ms: int) -> dict[str, Any]:
    """`sample(MOVES)` (moves at 1500, 1501, 1502) with the resignation at `at_ms`."""
    data: dict[str, Any] = json.loads(sample(MOVES).model_dump_json())
    data["racers"][0]["state_at_ms"] = at_ms
    return data


def test_moves_after_a_resignation_do_not_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert problems_of(resigned_at(1502)) == []  # a move in the same millisecond: possible
    path = write(tmp_path, json.dumps(resigned_at(1500)))
    assert main([str(path), "-q"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "PROBLEM: ann (p1): 2 moves after its state became resigned at 1500 "
        "(the first: move 1 at 1501)"
    ]


@pytest.mark.parametrize(
    ("state", "at_ms", "problem"),
    [
        ("gone", 1501, "ann (p1): a move after its state became gone at 1501 (the first: "),
        ("timed_out", 2000, "ann (p1): timed out at 2000, not at the race's time limit (61000)"),
        ("playing", 2000, "ann (p1): state playing in a race that has finished"),
        ("joined", 2000, "ann (p1): state joined in a race that has finished"),
        ("resigned", None, "ann (p1): state resigned without the time it was set"),
        ("resigned", 999, "ann (p1): state resigned at 999, before the race started (1000)"),
    ],
)
def test_a_racer_state_no_race_can_end_with(state: str, at_ms: int | None, problem: str) -> None:
    data = resigned_at(2000)
    data["racers"][0] |= {"state": state, "state_at_ms": at_ms}
    data["results"][0]["state"] = state
    found = problems_of(data)
    assert found[0].startswith(problem), found


def test_moves_after_a_finish_or_stuck_board_do_not_verify() -> None:
    """A finished or stuck racer's state time is its last move's: later moves are forged."""
    for state in ("finished", "stuck"):
        data = resigned_at(1501)
        data["racers"][0]["state"] = state
        data["results"][0]["state"] = state
        assert (
            f"ann (p1): a move after its state became {state} at 1501 (the first: move 2 at 1502)"
        ) in problems_of(data)


def test_moves_outside_the_race_do_not_verify() -> None:
    before = resigned_at(2000) | {"started_at_ms": 1501, "ends_at_ms": 61501}
    assert "ann (p1): move 0 at an impossible time 1500" in problems_of(before)
    after_end = resigned_at(1501) | {"finished_at_ms": 1501}
    assert (
        "ann (p1): a move after the race finished at 1501 (the first: move 2 at 1502)"
        in problems_of(after_end)
    )
    backwards = resigned_at(2000) | {"finished_at_ms": 900, "ends_at_ms": 900}
    assert problems_of(backwards)[:2] == [
        "the time limit ends (900) before the race starts (1000)",
        "the race finished (900) before it started (1000)",
    ]


def test_a_time_limit_that_does_not_end_when_it_says_does_not_verify() -> None:
    """The race's end is its start plus its time limit: a file that changes one of the three
    (a longer limit shown, a later end) is forged."""
    data = resigned_at(2000)
    assert problems_of(data) == []
    assert problems_of(data | {"time_limit_s": 600}) == [
        "the time limit ends at 61000, not 600 s after the start (601000)"
    ]
    assert problems_of(data | {"ends_at_ms": 3_661_000}) == [
        "the time limit ends at 3661000, not 60 s after the start (61000)"
    ]


def test_a_race_ended_by_a_late_tick_verifies() -> None:
    """A tick that comes late (a store outage, a stalled node) marks a racer past its grace
    gone at its own time, then ends the race at its time limit: a state set after the finish
    is the server's own record, not a forgery."""
    race = running(2)
    away = next(iter(race.racers))
    race.set_connected(away, False, 58_000)  # its grace runs past the time limit (61,000)
    race.tick(70_000)
    record = race.to_record()
    gone = next(r for r in record.racers if r.player_id == away)
    assert record.finished_at_ms is not None and gone.state_at_ms is not None
    assert gone.state_at_ms > record.finished_at_ms
    problems = verify_replay(build_replay(record, [])).problems
    # The test race's commitment is made up; nothing else is wrong with it.
    assert [p for p in problems if not p.startswith("commitment does not match")] == []


def test_a_replay_without_racers_does_not_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = resigned_at(2000) | {"racers": [], "results": []}
    path = write(tmp_path, json.dumps(data))
    assert main([str(path), "-q"]) == 1
    assert capsys.readouterr().out == "PROBLEM: the replay has no racers\n"


def test_a_racer_listed_twice_does_not_verify() -> None:
    data = resigned_at(2000)
    data["racers"] *= 2
    data["results"] *= 2  # the ranking of the two copies: a tie, as the file says
    assert problems_of(data) == ["racer p1 is listed more than once"]


def test_results_naming_someone_who_did_not_race_do_not_verify() -> None:
    data = resigned_at(2000)
    data["results"].append(data["results"][0] | {"rank": 2, "player_id": "p9", "name": "eve"})
    assert problems_of(data) == [
        "results line 2 does not match the moves: the file says #2 eve (p9) resigned 0/52; "
        "recomputed: nothing (no such racer)"
    ]


def test_long_values_are_shortened_when_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = resigned_at(2000) | {"game_number": "9" * 100_000}
    data["racers"][0]["moves"][0]["move"] = "x" * 100_000
    path = write(tmp_path, json.dumps(data))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "9" * 100 not in out and "x" * 300 not in out
    assert f"klondike deal {'9' * 30}... (100000 characters)" in out
    assert max(len(line) for line in out.splitlines()) < 500


@pytest.mark.parametrize("ok", [True, False])
def test_names_in_the_file_cannot_forge_lines_or_drive_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ok: bool
) -> None:
    """A racer's name is the file's: printed raw, its newlines wrote a forged `replay
    verified` line, an ESC sequence could hide the real verdict (`\\x1b[8m`), and a lone
    surrogate (valid JSON) crashed the output (exit status 1, as if the replay were false)."""
    name = "ann\n  #1 x\nreplay verified\x1b[8m\ud800"
    data: dict[str, Any] = json.loads(sample(MOVES).model_dump_json())
    data["racers"][0]["name"] = name
    data["results"][0]["name"] = name if ok else "ann"
    path = tmp_path / "race.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # \ud800 stays a JSON escape
    assert main([str(path)]) == (0 if ok else 1)
    out = capsys.readouterr().out
    assert "\x1b" not in out and not any(0xD800 <= ord(c) <= 0xDFFF for c in out)
    lines = out.splitlines()
    assert lines.count("replay verified") == (1 if ok else 0), out
    assert lines[-1] == ("replay verified" if ok else "replay does NOT verify (1 problem)")
    assert "ann\\x0a  #1 x\\x0areplay verified\\x1b[8m\\ud800 (p1)" in out
