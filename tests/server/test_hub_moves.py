"""The hub's move handling (server/hub_moves.py): acks sent as frames built without models.

The sessions here implement `send` only, so every frame the hub hands to `send_frame` comes
back through the session's fallback (decoding it): what a client would read.
"""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from solrace.engine import Audience, deal
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    MakeMove,
    MoveAck,
    MoveRejected,
    RaceEvent,
    Resign,
)
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import MoveRecord, RacerState, RaceStatus
from solrace.server.protocol.views import board_for, touched_pile_models
from solrace.server.runtime import ACKS_KEPT, UNDO_KEPT
from solrace.server.store import MemoryStore, StoreUnavailableError
from solrace.server.store.redis import RedisStore
from tests.server.sessions import opened, running_hub, start_race_of_two

GAME_NUMBER = "1002"
NOW_MS = 1_700_000_000_000


async def test_acks_are_the_moves_as_the_mover_sees_them_and_resends_repeat_them() -> None:
    async with running_hub(clock=lambda: NOW_MS) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER, time_limit_s=3600)

        shadow = deal("klondike", GAME_NUMBER)  # the same moves on a board of our own
        rng = random.Random(7)
        acks: list[MoveAck] = []
        for seq in range(ACKS_KEPT + 30):
            moves = shadow.legal_moves()
            if not moves:
                break
            move = rng.choice(moves)
            shadow.play(move)
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move=str(move)))
            # The ack, then the move's progress event.
            ack = next(m for m in reversed(alice.sent) if isinstance(m, MoveAck))
            on, total = shadow.progress()
            assert ack == MoveAck(
                race_id=race_id,
                seq=seq,
                ply=seq,
                move=str(shadow.history[-1]),
                at_ms=NOW_MS,
                piles=touched_pile_models(shadow),
                on_foundations=on,
                total=total,
                won=shadow.is_won(),
                stuck=not shadow.is_won() and shadow.is_stuck(),
            )
            acks.append(ack)
        assert len(acks) > ACKS_KEPT + 10

        for ack in (acks[-ACKS_KEPT], acks[-ACKS_KEPT // 2], acks[-1]):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=ack.seq, move=ack.move))
            assert alice.sent[-1] == ack.model_copy(update={"duplicate": True})
        # Older answers are not kept (nor undo records: a board's memory stays bounded); a resend
        # of such a move is answered with the board as it is now.
        board = hub.races[race_id].boards[alice.player_id or PlayerId("")]
        assert len(board.acks) == ACKS_KEPT and board.game.undo_depth <= 2 * UNDO_KEPT
        oldest = acks[0]
        await hub.handle(alice, MakeMove(race_id=race_id, seq=oldest.seq, move=oldest.move))
        on, total = shadow.progress()
        assert alice.sent[-1] == oldest.model_copy(
            update={
                "duplicate": True,
                "piles": list(board_for(shadow, Audience.PLAYER).piles),
                "on_foundations": on,
                "total": total,
            }
        )


async def test_a_refused_seq_answers_the_same_move_again_and_refuses_another() -> None:
    async with running_hub() as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        player = alice.player_id or PlayerId("")

        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="w-s"))
        refused = alice.sent[-1]
        assert isinstance(refused, MoveRejected) and refused.code == "illegal_move"
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="w-s"))
        assert alice.sent[-1] == refused  # the same answer again

        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        reused = alice.sent[-1]
        assert isinstance(reused, MoveRejected) and reused.code == "seq_reused"
        assert hub.races[race_id].boards[player].game.ply == 0, "nothing was played"
        await hub.handle(alice, MakeMove(race_id=race_id, seq=2, move="deal"))
        assert isinstance(alice.sent[-1], MoveAck) and alice.sent[-1].ply == 0


async def test_a_board_stored_at_once_keeps_when_its_count_was_reached() -> None:
    """A stuck board is stored at once, with the moves of its batch not folded in yet: the
    time its count on the foundations was reached (the tie-break between stuck racers) is
    the move that reached it, not the stuck move."""
    now = [NOW_MS]
    async with running_hub(clock=lambda: now[0], progress_interval_s=600) as hub:
        race_id, cat, _ = await start_race_of_two(
            hub, game="vegas-klondike", game_number="10", time_limit_s=3600
        )
        started = hub.races[race_id].race.started_at_ms
        assert started is not None
        # One pass through the stock, taking the aces it shows; the last ace at the 19th move.
        line = ["deal"] * 6 + ["w-f2"] + ["deal"] * 7 + ["w-f3"] + ["deal"] * 3 + ["w-f0"]
        line += ["deal"] * 7
        for seq, move in enumerate(line):
            now[0] = NOW_MS + 1_000 * (seq + 1)
            await hub.handle(cat, MakeMove(race_id=race_id, seq=seq, move=move))
        acks = [m for m in cat.sent if isinstance(m, MoveAck)]
        assert len(acks) == len(line) and acks[-1].stuck
        racer = hub.races[race_id].race.racers[cat.player_id or PlayerId("")]
        assert (racer.state.value, racer.on_foundations, racer.moves) == ("stuck", 3, len(line))
        assert racer.reached_at_ms == NOW_MS + 1_000 * 19 - started


class BrokenAppends(MemoryStore):
    """A store with a bug in `append_move` (not an outage: no `StoreError`)."""

    async def append_move(self, move: MoveRecord) -> None:
        raise TypeError("a bug in the store")


async def test_a_store_bug_is_raised_not_told_as_an_outage() -> None:
    """An outage is `unavailable` (send it again); a bug in the store is not: a client told
    to resend would resend forever. The board is as stored (the move taken back) and the
    bug goes up to the connection, which logs it and closes with 1011."""
    store = BrokenAppends()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        board = hub.races[race_id].boards[alice.player_id or PlayerId("")]
        with pytest.raises(TypeError, match="a bug in the store"):
            await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        assert board.game.ply == 0
        assert not any(isinstance(m, MoveRejected) for m in alice.sent)


class AwayThenBack(MemoryStore):
    """A store away (an outage) until `back` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.back = False

    async def append_move(self, move: MoveRecord) -> None:
        if not self.back:
            raise StoreUnavailableError("the disk is full")
        await super().append_move(move)


async def test_moves_not_stored_in_an_outage_are_logged_once_and_its_end_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every move of every racer fails while the store is away: a line each flooded the log
    (on a full disk, filling it further). One line says the outage, one its end."""
    store = AwayThenBack()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        with caplog.at_level(logging.INFO, logger="solrace.server.hub_moves"):
            for _ in range(5):  # the client sends it again, as told
                await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
            store.back = True
            await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        assert [m.code for m in alice.sent if isinstance(m, MoveRejected)] == ["unavailable"] * 5
        assert isinstance(alice.sent[-1], MoveAck)
        lines = [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
        assert lines == [
            (
                "solrace.server.hub_moves",
                f"storing moves failed: move 0 of {alice.player_id}: the disk is full (said once "
                "until it works again)",
            ),
            ("solrace.server.hub_moves", "storing moves works again after 5 failure(s)"),
        ]


async def test_a_board_the_tick_stores_after_an_outage_ends_that_outage_in_the_log(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished or stuck board the store refused is stored by the tick once the store is
    back: that is the end of the outage, said then (before, only the next finish said it,
    and until then a new outage went unsaid)."""
    async with running_hub() as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        runtime = hub.races[race_id]
        player = alice.player_id or PlayerId("")
        [record] = [m for m in await hub.store.get_moves(race_id) if m.player_id == player]

        async def away(*args: object, **kwargs: object) -> list[RaceEvent]:
            raise RaceError(ErrorCode.UNAVAILABLE, "the store is away")

        with caplog.at_level(logging.INFO, logger="solrace.server.race_sync"):
            with monkeypatch.context() as patched:
                patched.setattr(hub.keeper, "apply_to_race", away)
                await hub.keeper.store_board(runtime, player, [record])
            assert runtime.unsettled
            await hub.keeper.tick()  # the store is back: the tick stores the board
            assert not runtime.unsettled
        lines = [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
        assert lines == [
            (
                "solrace.server.race_sync",
                f"storing boards the store refused failed: race {race_id}, {player}: the store "
                "is away (said once until it works again)",
            ),
            (
                "solrace.server.race_sync",
                "storing boards the store refused works again after 1 failure(s)",
            ),
        ]


class HeldAppends(MemoryStore):
    """A store whose appends wait for `go` (a slow disk); `started` says one is waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    async def append_move(self, move: MoveRecord) -> None:
        self.started.set()
        await self.go.wait()
        await super().append_move(move)


async def test_a_time_out_due_while_a_move_is_being_stored_waits_for_it() -> None:
    """A move checked before the race's time limit is stored and acknowledged even if the
    limit passes while it is being stored: the tick holds the time-out back until then."""
    store, now = HeldAppends(), [NOW_MS]
    async with opened(store), running_hub(store, clock=lambda: now[0]) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER, time_limit_s=60)
        race = hub.races[race_id].race
        move = MakeMove(race_id=race_id, seq=1, move="deal")
        moving = asyncio.create_task(hub.handle(alice, move))
        await asyncio.wait_for(store.started.wait(), 10)
        now[0] += 61_000  # past the time limit
        await hub.tick()
        assert race.is_live
        store.go.set()
        await asyncio.wait_for(moving, 10)
        assert [m.seq for m in alice.sent if isinstance(m, MoveAck)] == [1]
        await hub.tick()
        assert race.status is RaceStatus.FINISHED


@pytest.mark.redis
async def test_a_move_the_shared_store_says_is_too_late_is_refused_and_the_copy_reloaded(
    redis_url: str,
) -> None:
    """Several nodes: this node's copy of the race is behind (a stall, a partition) while
    another node has the racer out (gone at the end of its grace, here resigned). The move
    passes the stale copy's checks, but the shared store refuses it: `not_playing`, nothing
    stored, and the copy reloaded (the node used to store and acknowledge it)."""
    async with opened(RedisStore(redis_url)) as store, running_hub(store) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        player = alice.player_id or PlayerId("")
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        await hub.keeper.progress.fold(hub.races[race_id])
        # Another node resigns alice in the stored race (counting her stored move, as the
        # shared store requires of a racer put out); this node does not hear of it.
        stored = await store.get_race(race_id)
        assert stored is not None
        elsewhere = Race(stored, epoch="e")
        board = hub.races[race_id].boards[player]
        elsewhere.record_board(
            player,
            on_foundations=board.on_foundations,
            total=board.game.total_cards,
            moves=board.game.ply,
            won=False,
            stuck=False,
            now_ms=hub.clock(),
        )
        elsewhere.resign(player, hub.clock())
        assert await store.save_race_if(elsewhere.to_record(), stored)

        await hub.handle(alice, MakeMove(race_id=race_id, seq=2, move="deal"))
        refusal = alice.sent[-1]
        assert isinstance(refusal, MoveRejected) and refusal.code == "not_playing"
        assert [m.seq for m in await store.get_moves(race_id)] == [1]
        assert hub.races[race_id].boards[player].game.ply == 1
        assert hub.races[race_id].race.racers[player].state is RacerState.RESIGNED


class LostReplies(MemoryStore):
    """A store whose next append goes through but answers as an outage (a timeout after Redis
    ran the append: the node cannot tell)."""

    lose_next = False

    async def append_move(self, move: MoveRecord) -> None:
        await super().append_move(move)
        if self.lose_next:
            self.lose_next = False
            raise StoreUnavailableError("timed out (the append ran all the same)")


async def test_a_move_answered_unavailable_but_stored_counts_in_the_race() -> None:
    """The racer was told `unavailable` for a move the store did keep. Its next move finds the
    ply taken: the board is rebuilt from the store and sent, and the race counts the stored
    move (its progress, and so the results, used to stay a move behind until the racer's next
    acknowledged move, which a racer who then resigns never makes)."""
    async with opened(LostReplies()) as store, running_hub(store) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        player = alice.player_id or PlayerId("")
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        await hub.keeper.progress.fold(hub.races[race_id])  # nothing pending from here on
        store.lose_next = True
        await hub.handle(alice, MakeMove(race_id=race_id, seq=2, move="deal"))
        refusal = alice.sent[-1]
        assert isinstance(refusal, MoveRejected) and refusal.code == "unavailable"
        await hub.handle(alice, MakeMove(race_id=race_id, seq=3, move="deal"))
        assert any(isinstance(m, MoveRejected) and m.code == "not_allowed" for m in alice.sent)
        assert hub.races[race_id].boards[player].game.ply == 2  # the board as stored
        await hub.handle(alice, Resign(race_id=race_id))
        assert hub.races[race_id].race.racers[player].moves == 2


async def test_a_move_in_a_race_the_store_lost_is_unknown_not_unavailable() -> None:
    """A store that lost the race (Redis without persistence, restarted empty): the move is
    refused as `unknown_race`, not `unavailable` (which asks for the same move again, for
    ever)."""
    async with opened(MemoryStore()) as store, running_hub(store) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        del store._races[race_id]
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move="deal"))
        refusal = alice.sent[-1]
        assert isinstance(refusal, MoveRejected) and refusal.code == "unknown_race"
        assert hub.races[race_id].boards[alice.player_id or PlayerId("")].game.ply == 0
