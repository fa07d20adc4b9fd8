"""A race's results on several nodes sharing a real Redis agree with its stored moves,
whichever node ends it: a racer's acknowledged moves whose progress its own node still holds
in a batch count when another node times the race out, no progress event follows the finish,
and the replay fetched afterwards verifies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import (
    Board,
    GetReplay,
    JoinRace,
    Progress,
    RaceFinished,
    RaceStarted,
    RaceUpdate,
    Replay,
)
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.protocol.replay import verify_replay
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race, play
from tests.integration.solver import scoring_line
from tests.integration.wsclient import Client

pytestmark = pytest.mark.redis


class FakeClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., Awaitable[Client]]]:
    opened: list[Client] = []

    async def open_client(app: App, name: str) -> Client:
        client = await Client.open(f"ws://127.0.0.1:{app.port}")
        opened.append(client)
        await client.hello(name)
        return client

    yield open_client
    for client in opened:
        await client.close()


def assert_results_are_the_racers_figures(record: RaceRecord) -> None:
    """The stored finish ranks on the figures the record holds for each racer, and no
    progress event follows the finish."""
    assert record.status is RaceStatus.FINISHED and record.results is not None
    racers = {r.player_id: r for r in record.racers}
    for entry in record.results:
        racer = racers[entry.player_id]
        assert (entry.state, entry.on_foundations) == (racer.state.value, racer.on_foundations)
    kinds = [type(e) for e in record.events]
    assert RaceFinished in kinds and kinds[-1] is RaceFinished


async def test_a_time_out_on_one_node_counts_moves_batched_on_another(
    redis_nodes: ServerFactory, clients: Callable[..., Awaitable[Client]], redis_url: str
) -> None:
    # Tickers that never fire on their own (the test ticks node A alone), and node B holding
    # its racers' progress far longer than the test: only node A can end the race, while
    # Bob's moves are acknowledged and stored but their progress is still batched on B.
    node_a = await redis_nodes(redis_url, tick_s=3600.0)
    node_b = await redis_nodes(redis_url, tick_s=3600.0, progress_interval_s=600)
    clock = FakeClock(node_a.hub.clock())
    node_a.hub.clock = node_b.hub.clock = clock
    alice = await clients(node_a, "alice")
    bob = await clients(node_b, "bob")
    race_id = await create_race(alice, seats=2, time_limit_s=5, game_number="1")
    await bob.send(JoinRace(race_id=race_id))
    await alice.expect(RaceUpdate, lambda m: m.race.status == "countdown")
    await node_a.hub.tick()
    for each in (alice, bob):
        await each.expect(RaceStarted)
        await each.expect(Board, lambda m, c=each: m.player_id == c.player_id)

    acks = await play(bob, race_id, scoring_line("klondike", "1"))
    assert acks[-1].on_foundations == 1
    bob_id = PlayerId(bob.player_id or "")
    held = await node_a.store.get_race(race_id)
    assert held is not None
    assert {r.player_id: r.moves for r in held.racers}[bob_id] == 0  # still batched on B

    clock.now += 6_000  # past the time limit
    await node_a.hub.tick()
    finished = await alice.expect(RaceFinished)
    assert await bob.expect(RaceFinished) == finished
    by_player = {r.player_id: r for r in finished.results}
    assert by_player[bob_id].state == "timed_out"
    assert by_player[bob_id].on_foundations == acks[-1].on_foundations
    assert by_player[bob_id].rank == 1  # the only card out is Bob's
    record = await node_a.store.get_race(race_id)
    assert record is not None
    assert {r.player_id: r.moves for r in record.racers}[bob_id] == len(acks)
    assert_results_are_the_racers_figures(record)
    # Every progress event of Bob's moves came before the finish.
    bob_progress = [
        m for m in alice.received if isinstance(m, Progress) and m.progress.player_id == bob_id
    ]
    assert bob_progress[-1].progress.moves == len(acks)
    assert all(p.version < finished.version for p in bob_progress)

    # Node B stops, folding the batch it still holds (as its timer would): the finished race
    # takes no more figures from it.
    await node_b.stop()
    assert await node_a.store.get_race(race_id) == record

    await alice.send(GetReplay(race_id=race_id))
    replay = (await alice.expect(Replay)).replay
    assert {r.player_id: len(r.moves) for r in replay.racers}[bob_id] == len(acks)
    report = verify_replay(replay)
    assert report.is_valid, report.problems
