"""Every case recorded from PySolFC (tests/engine/data) replayed through the engine."""

from __future__ import annotations

from typing import Any

import pytest

from solrace.engine import Game, IllegalMoveError, deal

from .conformance import GAME_KEYS, deals_data, extra_of, layout_text, moves_data, probe_move


def _deal_cases() -> list[tuple[str, str]]:
    return [(key, number) for key, g in deals_data()["games"].items() for number in g["deals"]]


@pytest.mark.parametrize(("key", "number"), _deal_cases())
def test_deal_matches_pysolfc(key: str, number: str) -> None:
    case = deals_data()["games"][key]["deals"][number]
    game = deal(GAME_KEYS[key], number)
    assert game.pysolfc_id == deals_data()["games"][key]["pysolfc_game_id"]
    assert game.pile_texts() == layout_text(case["layout"])


def test_rejected_numbers_are_refused() -> None:
    from solrace.engine import InvalidGameNumberError

    for number in deals_data()["header"]["rejected_seeds"]:
        with pytest.raises(InvalidGameNumberError):
            deal("klondike", number)


def _playouts() -> list[tuple[str, int]]:
    return [
        (name.split("/", 1)[1], i)
        for name, ds in moves_data()["datasets"].items()
        for i in range(len(ds["playouts"]))
    ]


def _check_probe(game: Game, state: dict[str, str], probe: dict[str, Any]) -> None:
    move = probe_move(probe)
    legal = game.legal_moves()
    where = f"{move} at ply {game.ply}"
    assert game.is_legal(move) == probe["legal"], where
    assert (move in legal) == probe["legal"], where
    if not probe["legal"]:
        with pytest.raises(IllegalMoveError):
            game.play(move)
        assert game.pile_texts() == state, f"refused {where} changed the board"
        return
    game.play(move)
    expected = dict(state)
    expected.update(probe["changed_piles"])
    assert game.pile_texts() == expected, where
    assert extra_of(game) == probe["extra_after"], where
    assert game.is_won() == probe["won_after"], where
    assert set(game.touched_piles()) == set(probe["changed_piles"]), where
    game.undo()
    assert game.pile_texts() == state, f"undo of {where}"


@pytest.mark.parametrize(("key", "index"), _playouts())
def test_playout_matches_pysolfc(key: str, index: int) -> None:
    playout = moves_data()["datasets"][f"pysolfc_defaults/{key}"]["playouts"][index]
    game = deal(GAME_KEYS[key], playout["deal_seed"])
    for position in playout["positions"]:
        for step in position["moves_since_previous_position"]:
            game.play(probe_move(step))
        assert game.ply == position["action_index"]
        state = position["state"]
        assert game.pile_texts() == state, f"position at ply {game.ply}"
        assert extra_of(game) == position["extra"]
        for probe in position["probes"]:
            _check_probe(game, state, probe)
    final = playout["final"]
    assert [str(m) for m in game.history] == playout["actions"]
    assert game.pile_texts() == final["state"]
    assert extra_of(game) == final["extra"]
    assert game.is_won() == final["won"]
    if final["end_reason"] == "no_legal_action":
        assert game.legal_moves() == []
        assert game.is_stuck()
