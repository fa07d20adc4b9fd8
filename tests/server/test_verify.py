from __future__ import annotations

import json
from pathlib import Path

import pytest

from solrace.engine import deal
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.messages import ReplayModel, ReplayMove, ReplayRacer, ResultEntry
from solrace.server.verify import main


def sample() -> ReplayModel:
    game = deal("klondike", "1")
    game.play("deal")
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
                moves=[ReplayMove(ply=0, move="deal", at_ms=1500)],
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


def test_a_true_replay_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "race.json"
    path.write_text(sample().model_dump_json())
    assert main([str(path)]) == 0
    assert "replay verified" in capsys.readouterr().out


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
    path = tmp_path / "race.json"
    path.write_text(json.dumps(data))
    assert main([str(path), "-q"]) == 1


def test_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "race.json"
    path.write_text("{not json")
    assert main([str(path)]) == 2
