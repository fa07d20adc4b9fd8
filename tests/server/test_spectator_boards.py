"""Spectators' delayed boards (server/race_delivery.py `push_spectator_boards`, server/runtime.py):
a new spectator's look costs the others nothing, and a board is encoded once per ply.

A burst of watch/unwatch requests (within the rate budget) used to stall the node for seconds:
each watch moved the delayed boards on and sent them to every spectator, and found its ply by
scanning every move time of the race.
"""

from __future__ import annotations

from solrace.engine import deal
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    Hello,
    MakeMove,
    RaceSnapshot,
    Watch,
)
from tests.server.sessions import RecordingSession, running_hub, start_race_of_two

GAME_NUMBER = "1002"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def boards_of(session: RecordingSession) -> list[Board]:
    return [m for m in session.sent if isinstance(m, Board)]


async def test_a_new_spectator_gets_every_board_and_nobody_else_gets_anything() -> None:
    clock = Clock()
    # Casual: no delay. The hub is not started: batches go out when the test pushes them.
    async with running_hub(clock=clock, spectator_batch_s=3600.0) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        runtime = hub.races[race_id]
        watchers = [RecordingSession(10 + n) for n in range(5)]
        for watcher in watchers:
            await hub.handle(watcher, Hello(protocol=PROTOCOL_VERSION))
            await hub.handle(watcher, Watch(race_id=race_id))
        hub.keeper.delivery.push_spectator_boards(runtime, clock.now)  # a batch, as the tick's
        shadow = deal("klondike", GAME_NUMBER)
        for seq in range(3):  # alice's board moves on
            move = shadow.legal_moves()[0]
            shadow.play(move)
            clock.now += 10
            await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move=str(move)))
        for watcher in watchers:
            watcher.sent.clear()

        late = RecordingSession(20)
        await hub.handle(late, Hello(protocol=PROTOCOL_VERSION))
        late.sent.clear()
        await hub.handle(late, Watch(race_id=race_id))
        assert isinstance(late.sent[0], RaceSnapshot)
        assert {(b.player_id, b.ply) for b in boards_of(late)} == {
            (alice.player_id, 3),
            (next(p for p in runtime.boards if p != alice.player_id), 0),
        }
        # The others' boards move on with the next batch, not with each new spectator.
        assert all(boards_of(w) == [] for w in watchers)

        late.sent.clear()
        hub.keeper.delivery.push_spectator_boards(runtime, clock.now)
        for watcher in watchers:  # only the board that moved
            assert [(b.player_id, b.ply) for b in boards_of(watcher)] == [(alice.player_id, 3)]
        assert boards_of(late) == []  # its watch sent it these very boards


async def test_the_first_spectator_gets_each_board_once() -> None:
    """The first watch of a race sends every board; the next batch does not send the same
    boards again (it sent each twice), only boards that moved on since."""
    clock = Clock()
    async with running_hub(clock=clock, spectator_batch_s=3600.0) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        runtime = hub.races[race_id]
        watcher = RecordingSession(10)
        await hub.handle(watcher, Hello(protocol=PROTOCOL_VERSION))
        watcher.sent.clear()
        await hub.handle(watcher, Watch(race_id=race_id))
        assert len(boards_of(watcher)) == 2
        watcher.sent.clear()
        hub.keeper.delivery.push_spectator_boards(runtime, clock.now)
        assert boards_of(watcher) == []
        move = deal("klondike", GAME_NUMBER).legal_moves()[0]
        clock.now += 10
        await hub.handle(alice, MakeMove(race_id=race_id, seq=0, move=str(move)))
        hub.keeper.delivery.push_spectator_boards(runtime, clock.now)
        assert [(b.player_id, b.ply) for b in boards_of(watcher)] == [(alice.player_id, 1)]
        assert runtime.boards_sent_on_watch == {}


async def test_a_spectator_board_is_encoded_once_per_ply() -> None:
    clock = Clock()
    async with running_hub(clock=clock, spectator_batch_s=3600.0) as hub:
        race_id, alice, _ = await start_race_of_two(hub, game_number=GAME_NUMBER)
        runtime = hub.races[race_id]
        player = alice.player_id or PlayerId("")
        runtime.advance_spectator_board(player, clock.now)
        first = runtime.spectator_board_frame(player)
        assert runtime.spectator_board_frame(player) is first  # kept, not encoded again
        move = deal("klondike", GAME_NUMBER).legal_moves()[0]
        clock.now += 10
        await hub.handle(alice, MakeMove(race_id=race_id, seq=1, move=str(move)))
        assert runtime.advance_spectator_board(player, clock.now).ply == 1
        assert runtime.spectator_board_frame(player) != first
