"""Following a race and reading it back (server/watch_requests.py): a replay is built once and
sent again as it was; on several nodes a racer's sync gets the board of its stored moves."""

from __future__ import annotations

import pytest

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    Error,
    GetReplay,
    Hello,
    JoinRace,
    MakeMove,
    MoveAck,
    Replay,
    Resign,
    Sync,
    Welcome,
)
from solrace.server.protocol.records import MoveRecord
from solrace.server.race_changes import own_board
from solrace.server.store import MemoryStore
from tests.server.sessions import (
    RecordingSession,
    open_race_watched_on_b,
    opened,
    running_hub,
    start_race_of_two,
    two_nodes,
)
from tests.waiting import eventually


class CountingMoves(MemoryStore):
    """The memory store, counting the move logs read."""

    reads = 0

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        self.reads += 1
        return await super().get_moves(race_id)


async def test_a_replay_is_built_once_and_sent_again_as_it_was() -> None:
    store = CountingMoves()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        await hub.handle(alice, GetReplay(race_id=race_id))
        refused = alice.sent[-1]
        assert isinstance(refused, Error) and refused.code == "not_finished"  # nothing kept
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
        for session in (alice, bob, alice):
            await hub.handle(session, GetReplay(race_id=race_id))
        replays = [m for s in (alice, bob) for m in s.sent if isinstance(m, Replay)]
        assert len(replays) == 3 and replays[0] == replays[1] == replays[2]
        assert replays[0].replay.race_id == race_id and store.reads == 1


@pytest.mark.redis
async def test_a_racer_syncing_on_another_node_gets_the_board_of_its_stored_moves(
    redis_url: str,
) -> None:
    """Node B holds a race from before its start (a spectator watches it there). Alice plays
    7 moves on node A, published with a progress batch, which node B hears. Her link goes to
    node B (its hello brings her board there up to her 7 stored moves); then the last request
    of her old link on node A, an 8th move, is acknowledged and stored there, its batch not
    published yet (its fold waits for a store that was away). Her sync on B then answers with
    the board of her 8 stored moves, not B's copy of 7."""
    async with two_nodes(redis_url) as (node_a, node_b):
        race_id, alice, bob, _ = await open_race_watched_on_b(node_a, node_b)
        copy = node_b.races[race_id]

        await node_a.handle(bob, JoinRace(race_id=race_id))
        await node_a.tick()
        runtime = node_a.races[race_id]
        alice_id = PlayerId(alice.player_id or "")
        for seq in range(7):
            await node_a.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
        await node_a.keeper.progress.fold(runtime)  # published with the 7 moves
        await eventually(
            lambda: alice_id in copy.boards and copy.boards[alice_id].game.ply == 7,
            within=10,
            what="node B hearing of the start and of the 7 moves published",
        )

        (welcome,) = [m for m in alice.sent if isinstance(m, Welcome)]
        again = RecordingSession(4)  # alice's new link, on node B
        await node_b.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        await node_a.handle(alice, MakeMove(race_id=race_id, seq=7, move="deal"))  # old link
        acks = [m for m in alice.sent if isinstance(m, MoveAck)]
        assert [a.ply for a in acks] == list(range(8)), "8 moves acknowledged"
        assert copy.boards[alice_id].game.ply == 7, "node B has not heard of the 8th"
        await node_b.handle(again, Sync(race_id=race_id))

        stored = [m for m in await node_b.store.get_moves(race_id) if m.player_id == alice_id]
        assert len(stored) == 8
        boards = [m for m in again.sent if isinstance(m, Board) and m.player_id == alice_id]
        assert boards, "a racer's sync answers with its board"
        assert [b.ply for b in boards] == [8] * len(boards)
        assert boards[-1].board == own_board(runtime, alice_id).board  # node A's, acknowledged
