"""Engine views to wire form (server/protocol/views.py), and the move ack built without models.

The hub encodes a move ack straight from the engine's cards (`touched_pile_fields`,
`codec.encode_move_ack`); the model path (`touched_pile_models`, `MoveAck`, `encode`) is the
reference it must match byte for byte, over random playouts of every game.
"""

from __future__ import annotations

import random

import pytest

from solrace.engine import GAME_IDS, Game, deal
from solrace.server.protocol.codec import decode_server, encode, encode_move_ack
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import MoveAck
from solrace.server.protocol.views import touched_pile_fields, touched_pile_models

SEEDS = (1, 2, 3)
PLIES = 150


def model_ack(game: Game, race_id: RaceId, seq: int, at_ms: int) -> MoveAck:
    """The ack of the last move as the hub built it before the fast path: through models."""
    on, total = game.progress()
    won = game.is_won()
    return MoveAck(
        race_id=race_id,
        seq=seq,
        ply=game.ply - 1,
        move=str(game.history[-1]),
        at_ms=at_ms,
        piles=touched_pile_models(game),
        on_foundations=on,
        total=total,
        won=won,
        stuck=not won and game.is_stuck(),
    )


def fast_ack_frame(game: Game, race_id: RaceId, seq: int, at_ms: int) -> bytes:
    """The ack of the last move as the hub builds it now."""
    on, total = game.progress()
    won = game.is_won()
    return encode_move_ack(
        race_id=race_id,
        seq=seq,
        ply=game.ply - 1,
        move=str(game.history[-1]),
        at_ms=at_ms,
        piles=touched_pile_fields(game),
        on_foundations=on,
        total=total,
        won=won,
        stuck=not won and game.is_stuck(),
    )


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_fast_move_ack_is_the_model_ack_byte_for_byte(game_id: str) -> None:
    deals = flips = 0
    for seed in SEEDS:
        rng = random.Random(f"{game_id}/{seed}")
        game = deal(game_id, str(rng.randrange(1, 10**18)))
        race_id = RaceId(f"r{seed}")
        for seq in range(PLIES):
            moves = game.legal_moves()
            if not moves:
                break
            # Stock clicks are most of a real race's moves: favour them when there is one.
            stock_clicks = [m for m in moves if m.n == 0]
            move = rng.choice(stock_clicks if stock_clicks and rng.random() < 0.3 else moves)
            down_before = {p.name: p.face_down_count() for p in game.piles}
            game.play(move)
            at_ms = 1_700_000_000_000 + seq * 250
            expected = model_ack(game, race_id, seq, at_ms)
            frame = fast_ack_frame(game, race_id, seq, at_ms)
            assert frame == encode(expected)
            assert decode_server(frame) == expected
            deals += "stock" in game.touched_piles()
            flips += any(
                p.name != "stock" and p.face_down_count() < down_before[p.name] for p in game.piles
            )
    # The playouts did cover the moves that take from the stock or turn a card face up.
    if any(p.name == "stock" for p in deal(game_id, "1").piles):
        assert deals > 0
    if game_id.startswith("klondike") or "-klondike" in game_id:
        assert flips > 0


def test_fast_pile_fields_hide_what_the_player_view_hides() -> None:
    game = deal("klondike", "1")
    game.play("deal")
    fields = touched_pile_fields(game)
    assert [f["name"] for f in fields] == ["stock", "waste"]
    stock, waste = fields
    assert stock["cards"] == []  # the stock's order is never shown
    assert stock["down"] == len(game.pile_by_name("stock").cards) > 0
    assert waste["down"] == 0
    assert len(waste["cards"]) == len(game.pile_by_name("waste").cards) > 0
    assert fields == [m.model_dump() for m in touched_pile_models(game)]
