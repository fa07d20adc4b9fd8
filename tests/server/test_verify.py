from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solrace.engine import deal
from solrace.server.protocol.codec import encode
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.messages import (
    Replay,
    ReplayModel,
    ReplayMove,
    ReplayRacer,
    ResultEntry,
)
from solrace.server.protocol.replay import ReplayFileError, parse_replay, verify_replay
from solrace.server.verify import main

# Stock clicks on klondike 1 put no card on a foundation: the ranking stays 0/52 at 0 s.
MOVES = ("deal", "deal", "deal")
ILLEGAL = "t0-t1"  # klondike 1: t1 does not accept QH on TS


def sample(moves: tuple[str, ...] = ("deal",)) -> ReplayModel:
    game = deal("klondike", "1")
    for move in moves:
        game.play(move)
    on, total = game.progress()
    return ReplayModel(
        race_id="r1",
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
                player_id="p1",
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
                player_id="p1",
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
    assert "ann (p1): 3 moves, all legal, 0/52 on foundations, resigned" in out
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
        "PROBLEM: ann (p1): illegal move 't0-t1' at ply 1: t1 does not accept QH on TS; "
        "the 2 moves after it are not replayed"
    ]


def test_an_illegal_move_is_named_with_its_ply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, json.dumps(with_illegal_move(3)))
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM: ann (p1): illegal move 't0-t1' at ply 3: t1 does not accept" in out
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
        "PROBLEM: results line 1: the file says #1 ann (p1) resigned 7/52, last card out at "
        "0.0s; the moves give #1 ann (p1) resigned 0/52\n"
    ) in out
    assert "results match" not in out


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
