"""Two nodes on one Redis that freezes (SIGSTOP) for longer than the store's timeouts while a
race goes on: what a node was answered `unavailable` for may still be stored once Redis runs
again (it runs the commands sent before it froze), and every node's sessions then hear of it;
a race finished that way counts in its tournament. The store's timeout is made short here
(0.3 s instead of 5 s) so that the freeze outlasts it within a fast test.
"""

from __future__ import annotations

import pytest

from solrace.server.app import App
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import Error, Progress, RaceFinished, RaceStarted, Resign
from solrace.server.protocol.records import RaceStatus
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    TournamentRace,
    TournamentView,
    WatchTournament,
)
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race, play, seat_and_start
from tests.integration.solver import scoring_line
from tests.integration.test_tournaments import FAST, admin_act, create
from tests.integration.wsclient import WAIT_S, connect_client
from tests.redis_server import RedisServer
from tests.waiting import eventually_async

pytestmark = pytest.mark.redis

#: Each store call's wait for Redis here (the store's default is 5 s, three tries).
STORE_TIMEOUT_S = 0.3
#: Progress batches are folded in only with a race's other changes here: a batch stored on a
#: timer as Redis froze would run, once Redis runs again, ahead of the save the test sent
#: and make that save's version stale (its finish refused: the test would wait for nothing).
RARE_BATCHES = {"progress_interval_s": 600}


def url(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


def short_store_timeout(app: App) -> None:
    """The node's store gives up on a silent Redis after `STORE_TIMEOUT_S`."""
    assert isinstance(app.store, RedisStore)
    app.store.timeout_s = STORE_TIMEOUT_S


async def test_a_finish_answered_unavailable_but_stored_after_a_freeze_reaches_both_nodes(
    own_redis_server: RedisServer, redis_nodes: ServerFactory
) -> None:
    first = await redis_nodes(own_redis_server.url, prepare=short_store_timeout, **RARE_BATCHES)
    second = await redis_nodes(own_redis_server.url, prepare=short_store_timeout, **RARE_BATCHES)
    alice = await connect_client(url(first), "alice")
    bob = await connect_client(url(second), "bob")
    race_id = await create_race(alice, seats=2)
    await seat_and_start(race_id, [bob], [alice, bob])
    await bob.send(Resign(race_id=race_id))
    await alice.expect(Progress, lambda m: m.progress.state == "resigned")

    with own_redis_server.frozen():
        # The last racer resigns: the race's finish is sent to a Redis that answers nothing.
        await alice.send(Resign(race_id=race_id))
        refused = await alice.expect(Error, lambda m: m.request == "resign")
        assert refused.code == ErrorCode.UNAVAILABLE.value

    # Redis runs the save it was sent before it froze: the race is finished in the store,
    # though the node that sent it took it for refused. Nobody sends anything more, yet
    # both racers, on both nodes, are told how it ended.
    async def is_stored_finished() -> bool:
        stored = await second.store.get_race(race_id)
        return stored is not None and stored.status is RaceStatus.FINISHED

    await eventually_async(is_stored_finished, within=WAIT_S, what="the finish stored")
    stored = await second.store.get_race(race_id)
    assert stored is not None
    for racer in (alice, bob):
        finished = await racer.expect(RaceFinished, lambda m: m.race_id == race_id)
        assert finished.version == stored.version
    for racer in (alice, bob):
        await racer.close()


async def test_a_tournament_race_finished_by_a_save_answered_unavailable_counts(
    own_redis_server: RedisServer, redis_nodes: ServerFactory
) -> None:
    nodes = {"prepare": short_store_timeout, **FAST, **RARE_BATCHES}
    first = await redis_nodes(own_redis_server.url, **nodes)
    second = await redis_nodes(own_redis_server.url, **nodes)
    admin = await connect_client(url(first), "director")
    ann, bob = await connect_client(url(first), "ann"), await connect_client(url(second), "bob")
    tid = (await create(admin, "single_elimination", time_limit_s=300)).tournament_id
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    race_id = (await ann.expect(TournamentRace)).race_id
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == race_id)
    await bob.send(Resign(race_id=race_id))
    await ann.expect(Progress, lambda m: m.progress.state == "resigned")
    await play(
        ann, race_id, scoring_line("klondike", first.hub.races[race_id].race.record.game_number)
    )

    with own_redis_server.frozen():
        await ann.send(Resign(race_id=race_id))  # ahead of bob: she wins the final
        refused = await ann.expect(Error, lambda m: m.request == "resign")
        assert refused.code == ErrorCode.UNAVAILABLE.value

    # The finish Redis stored after all is the match's result: the final is decided.
    for racer in (ann, bob):
        await racer.expect(RaceFinished, lambda m: m.race_id == race_id)

    async def is_decided() -> bool:
        stored = await first.store.get_tournament(tid)
        return stored is not None and stored.phase == "finished"

    await eventually_async(is_decided, within=WAIT_S, what="the tournament finished")
    await admin.send(WatchTournament(tournament_id=tid))
    view = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert view.tournament.champion == ann.player_id
    for client in (admin, ann, bob):
        await client.close()
