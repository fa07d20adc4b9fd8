"""A race in memory (server/runtime.py): a racer's progress comes back from its board alone,
the same whether the board was played live, rebuilt from the stored moves or followed from
another node's notices; the moves being stored are counted however their storing ends."""

from __future__ import annotations

import random

import pytest

from solrace.engine import deal
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    MakeMove,
    MoveAck,
)
from solrace.server.protocol.records import MoveRecord
from tests.server.sessions import running_hub, start_race_of_two

START_MS = 1_700_000_000_000


def reached_by_replay(game_id: str, number: str, moves: list[MoveRecord], started: int) -> int:
    """When the count on the foundations last changed, replaying the moves on a fresh deal."""
    game = deal(game_id, number)
    before, reached = game.progress()[0], 0
    for move in moves:
        game.play(move.move)
        now = game.progress()[0]
        if now != before:
            before, reached = now, max(0, move.at_ms - started)
    return reached


async def test_progress_from_the_board_matches_a_replay_of_the_moves() -> None:
    clock = [START_MS]
    async with running_hub(clock=lambda: clock[0]) as hub:
        race_id, alice, _ = await start_race_of_two(
            hub, game="klondike", game_number="1002", time_limit_s=3600
        )
        runtime = hub.races[race_id]
        started = runtime.race.started_at_ms or 0
        player = alice.player_id or PlayerId("")
        shadow, rng = deal("klondike", "1002"), random.Random(3)
        for seq in range(150):
            # Foundation moves first now and then: the count goes up (and down: f-to-t moves).
            moves = shadow.legal_moves()
            to_f = [m for m in moves if m.dst.startswith("f")]
            move = rng.choice(to_f if to_f and rng.random() < 0.7 else moves)
            shadow.play(move)
            clock[0] += rng.randrange(50, 3000)
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move=str(move)))
            assert isinstance(alice.sent[-1], MoveAck)
        stored = [m for m in await hub.store.get_moves(race_id) if m.player_id == player]
        expected = reached_by_replay("klondike", "1002", stored, started)
        assert expected > 0 and shadow.progress()[0] > 0, "the line put cards on the foundations"

        runtime.restore_progress(player)  # the board as played live
        racer = runtime.race.racers[player]
        assert (racer.reached_at_ms, racer.on_foundations, racer.moves) == (
            expected,
            shadow.progress()[0],
            150,
        )
        runtime.race.racers[player].reached_at_ms = -1
        runtime.restore_board(player, stored)  # rebuilt from the store (a restart, a conflict)
        runtime.restore_progress(player)
        assert runtime.race.racers[player].reached_at_ms == expected

        runtime.restore_board(player, stored[:-40])  # followed from notices (another node)
        for record in stored[-40:]:
            assert runtime.apply_stored_move(record)
        runtime.restore_progress(player)
        assert runtime.race.racers[player].reached_at_ms == expected


async def test_a_move_being_stored_counts_until_its_storing_ends_however_it_ends() -> None:
    async with running_hub() as hub:
        race_id, _, _ = await start_race_of_two(hub)
        runtime = hub.races[race_id]
        assert not runtime.is_storing_move
        with runtime.storing_move():
            with runtime.storing_move():
                assert runtime.is_storing_move
            assert runtime.is_storing_move  # the other one is still being stored
        assert not runtime.is_storing_move
        with pytest.raises(OSError), runtime.storing_move():
            raise OSError("the disk is full")
        assert not runtime.is_storing_move
