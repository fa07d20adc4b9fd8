"""Spectators: live progress, boards delayed by the spectator delay, no way to act."""

from __future__ import annotations

import asyncio

import pytest

from solrace.server.app import App
from solrace.server.protocol.messages import (
    Board,
    Error,
    ListRaces,
    MakeMove,
    MoveAck,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceList,
    RaceSnapshot,
    Watch,
)
from tests.integration.conftest import ClientFactory, ServerFactory
from tests.integration.helpers import create_race, play, seat_and_start, start_race

DELAY_S = 1.0


@pytest.fixture
async def server(start_server: ServerFactory) -> App:
    return await start_server(spectator_delay_casual_s=DELAY_S)


async def test_spectators_see_progress_live_and_boards_delayed(
    server: App, client: ClientFactory
) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    watcher = await client()
    await watcher.hello()
    await watcher.send(ListRaces())
    assert [r.status for r in (await watcher.expect(RaceList)).races] == ["running"]
    await watcher.send(Watch(race_id=race_id))
    snapshot = await watcher.expect(RaceSnapshot)
    assert snapshot.commitment is not None and snapshot.game_number is None
    await watcher.expect(Board, lambda m: m.player_id == alice.player_id and m.ply == 0)

    # The delay runs from the move's time on the server, taken before the move is stored and
    # acknowledged: timed from the ack, a slow store write (a loaded machine) ate into it.
    loop = asyncio.get_running_loop()
    sent_at = loop.time()
    await alice.send(MakeMove(race_id=race_id, seq=1, move="deal"))
    await alice.expect(MoveAck)
    live = await watcher.expect(Progress, lambda m: m.progress.moves == 1)
    assert live.progress.player_id == alice.player_id
    # The board with that move comes only after the delay, and with the delay stated.
    delayed = await watcher.expect(Board, lambda m: m.player_id == alice.player_id and m.ply == 1)
    assert loop.time() - sent_at >= DELAY_S - 0.05
    assert delayed.delayed_ms == int(DELAY_S * 1000)

    # Spectators cannot act; racers cannot spectate their own race.
    await watcher.send(MakeMove(race_id=race_id, seq=1, move="deal"))
    assert (await watcher.expect(MoveRejected)).code == "not_in_race"
    await alice.send(Watch(race_id=race_id))
    assert (await alice.expect(Error)).code == "not_allowed"
    await play(bob, race_id, ["deal"])


async def test_a_player_who_watched_a_race_then_joined_it_gets_no_other_racer_s_board(
    server: App, client: ClientFactory
) -> None:
    """Watching is for spectators: joining ends it (the adversarial review's watcher kept
    getting the opponent's boards, undelayed, after it sat down in the race)."""
    alice, bob, carol = await client("alice"), await client("bob"), await client()
    await carol.hello()
    race_id = await create_race(alice, seats=2)
    for watcher in (bob, carol):
        await watcher.send(Watch(race_id=race_id))
        await watcher.expect(RaceSnapshot)
    await seat_and_start(race_id, [bob], [alice, bob])
    await play(alice, race_id, ["deal"])
    # The spectator gets Alice's board after the delay; Bob, a racer now, gets none.
    await carol.expect(Board, lambda m: m.player_id == alice.player_id and m.ply == 1)
    await bob.send(Ping(nonce=5))
    await bob.expect(Pong)  # answered after that push
    assert not [m for m in bob.inbox if isinstance(m, Board) and m.player_id == alice.player_id]
