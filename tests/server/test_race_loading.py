"""Loading races into a node (server/race_loading.py): recovering the live races at start on
several nodes follows each one, and a read that fails leaves no subscription behind; a
racer's hello on a node whose copy has not seen the race start takes the stored race."""

from __future__ import annotations

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Hello,
    JoinRace,
    MakeMove,
    MoveAck,
    RaceStarted,
    Welcome,
)
from solrace.server.protocol.records import MoveRecord, RaceStatus
from solrace.server.race_relay import race_channel
from solrace.server.store import StoreUnavailableError
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import (
    HeldBroker,
    RecordingSession,
    open_race_watched_on_b,
    opened,
    running_hub,
    start_race_of_two,
    two_nodes,
)


class MovesAway(MemoryStore):
    """A memory store whose moves cannot be read while `away` is set."""

    away = False

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        if self.away:
            raise StoreUnavailableError("the moves are away")
        return await super().get_moves(race_id)


async def test_a_race_that_cannot_be_recovered_leaves_no_subscription() -> None:
    """Several nodes: recovering a race subscribes to its notices, then reads its moves; a
    read that failed left the subscription open for good."""
    store, broker = MovesAway(), MemoryBroker()
    async with opened(store), running_hub(store, broker=broker, progress_interval_s=600) as first:
        race_id, _, _ = await start_race_of_two(first)
        channel = race_channel(race_id)
        following = len(broker.subscriptions[channel])  # the first node's
        async with running_hub(store, broker=broker, progress_interval_s=600) as second:
            store.away = True
            with pytest.raises(StoreUnavailableError):
                await second.keeper.recover()
            assert len(broker.subscriptions[channel]) == following
            store.away = False
            await second.keeper.recover()
            assert race_id in second.races
            assert len(broker.subscriptions[channel]) == following + 1


@pytest.mark.redis
async def test_a_hello_on_a_node_that_has_not_seen_the_start_takes_the_stored_race(
    redis_url: str,
) -> None:
    """Node B holds a race from before its start (a spectator watches it there) and hears
    nothing from the broker. The race starts on node A and alice plays 3 moves there; her
    link goes to node B. Her hello there takes the stored race: B's copy is running, her board
    at her 3 stored moves, the spectator told of the start, and her next move on B is
    acknowledged. The hello skipped the copy (no board of hers in it), whose board was then
    dealt afresh: her 4th move was refused."""
    held = HeldBroker(redis_url)
    async with two_nodes(redis_url, held) as (node_a, node_b):
        race_id, alice, bob, carol = await open_race_watched_on_b(node_a, node_b)
        copy = node_b.races[race_id]

        held.hold()  # node B hears nothing of what follows
        await node_a.handle(bob, JoinRace(race_id=race_id))
        await node_a.tick()
        for seq in range(3):
            await node_a.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
        await node_a.keeper.progress.fold(node_a.races[race_id])
        assert not copy.boards and copy.race.started_at_ms is None, "B saw nothing"

        (welcome,) = [m for m in alice.sent if isinstance(m, Welcome)]
        again = RecordingSession(4)  # alice's new link, on node B
        await node_b.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        alice_id = PlayerId(alice.player_id or "")
        assert node_b.races[race_id] is copy and copy.race.status is RaceStatus.RUNNING
        assert copy.boards[alice_id].game.ply == 3, "her board at her stored moves"
        assert any(isinstance(m, RaceStarted) for m in carol.sent), "B's spectator told"

        await node_b.handle(again, MakeMove(race_id=race_id, seq=3, move="deal"))
        answer = again.sent[-1]
        assert isinstance(answer, MoveAck), answer
        assert answer.ply == 3 and not answer.duplicate
        held.release()
