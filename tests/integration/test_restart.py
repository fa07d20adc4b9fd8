"""A real process: kill -9 mid-race and restart on the same data; SIGTERM closes with 1012."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import (
    Board,
    GetReplay,
    MakeMove,
    MoveAck,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    Replay,
    Resign,
    Sync,
)
from solrace.server.protocol.replay import verify_replay
from tests.integration.helpers import play, start_race
from tests.integration.process import ServerProcess
from tests.integration.wsclient import connect_client
from tests.waiting import eventually

Starter = Callable[..., Awaitable[ServerProcess]]


@pytest.fixture
async def processes(tmp_path: Path) -> AsyncIterator[Starter]:
    started: list[ServerProcess] = []

    async def start(*extra: str) -> ServerProcess:
        process = await ServerProcess.start(tmp_path / "data", *extra)
        started.append(process)
        return process

    yield start
    for process in started:
        await process.kill()


async def test_kill_9_mid_race_then_restart_continues_from_last_ack(processes: Starter) -> None:
    first = await processes()
    alice, bob = await connect_client(first.url, "alice"), await connect_client(first.url, "bob")
    race_id = await start_race(alice, [bob], time_limit_s=600)
    acked = await play(alice, race_id, ["deal", "deal", "deal"])
    await play(bob, race_id, ["deal"])
    started_at = next(m.started_at_ms for m in alice.received if hasattr(m, "started_at_ms"))
    tokens = {c.player_id: c.welcome.token for c in (alice, bob) if c.welcome}

    await first.kill()
    assert await alice.closed() is not None
    await bob.close()

    second = await processes()
    alice2 = await connect_client(second.url, token=tokens[alice.player_id])
    bob2 = await connect_client(second.url, token=tokens[bob.player_id])
    assert alice2.welcome and alice2.welcome.active_races == [race_id]
    await alice2.send(Sync(race_id=race_id, epoch="before the crash", since_version=9))
    snapshot = await alice2.expect(RaceSnapshot)
    assert snapshot.started_at_ms == started_at, "the clock keeps the original start"
    assert {p.player_id: p.moves for p in snapshot.progress} == {
        alice.player_id: 3,
        bob.player_id: 1,
    }
    board = await alice2.expect(Board)
    assert board.ply == 3
    # The last acknowledged move is there: resending it is a duplicate; play goes on.
    await alice2.send(MakeMove(race_id=race_id, seq=3, move="deal"))
    again = await alice2.expect(MoveAck)
    assert again.duplicate and again.ply == acked[-1].ply
    [ack] = await play(alice2, race_id, ["deal"], first_seq=4)
    assert ack.ply == 3
    await bob2.expect(
        Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 4
    )
    for each in (alice2, bob2):
        await each.send(Resign(race_id=race_id))
    await alice2.expect(RaceFinished)
    await alice2.send(GetReplay(race_id=race_id))
    replay = (await alice2.expect(Replay)).replay
    assert verify_replay(replay).is_valid
    assert sum(len(r.moves) for r in replay.racers) == 5
    for each in (alice2, bob2):
        await each.close()


async def test_a_race_whose_time_ran_out_while_killed_is_finished_before_the_first_hello(
    tmp_path: Path, processes: Starter
) -> None:
    """kill -9, restart after the race's time limit: the restart recovered the race as
    running and left the time-out to the first tick, so a client connecting before it had
    the race in its welcome's `active_races` and a `running` snapshot, its moves refused
    `time_up`, and `race_finished` moments later. The restarted node ticks only every 30 s
    here, so that its first hello surely comes before its first tick."""
    first = await processes()
    ann, bob = await connect_client(first.url, "ann"), await connect_client(first.url, "bob")
    race_id = await start_race(ann, [bob], time_limit_s=3)
    started = next(m for m in ann.received if isinstance(m, RaceStarted))
    await play(ann, race_id, ["deal"])
    assert ann.welcome is not None and ann.welcome.token is not None
    token = ann.welcome.token
    await first.kill()
    assert await ann.closed() is not None
    await bob.close()

    def time_is_up() -> bool:
        return wall_clock_ms() > started.ends_at_ms

    await eventually(time_is_up, within=10)
    second = await ServerProcess.start(
        tmp_path / "data", "--min-time-limit-s", "1", env={"SOLRACE_TICK_S": "30"}
    )
    try:
        back = await connect_client(second.url, token=token)
        assert back.welcome is not None and back.welcome.active_races == []
        await back.send(Sync(race_id=race_id, epoch="before the crash", since_version=0))
        snapshot = await back.expect(RaceSnapshot)
        assert snapshot.race.status == "finished"
        assert snapshot.results is not None
        assert {r.name: r.state for r in snapshot.results} == {
            "ann": "timed_out",
            "bob": "timed_out",
        }
        await back.close()
    finally:
        await second.kill()


async def test_sigterm_closes_clients_with_1012_and_exits_0(processes: Starter) -> None:
    server = await processes()
    watcher = await connect_client(server.url)
    assert await server.terminate() == 0
    assert await watcher.closed() == CloseCode.SERVICE_RESTART
