"""What one node (SQLite) rebuilds at a restart, for the crash windows a real kill rarely hits:
states made here on the store exactly as a kill -9 between two writes leaves it."""

from __future__ import annotations

import time
from pathlib import Path

from solrace.server.app import App
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.messages import (
    Error,
    MakeMove,
    MoveAck,
    RaceFinished,
    RaceSnapshot,
    Resign,
    Sync,
)
from solrace.server.protocol.records import MoveRecord, RacerState, RaceStatus
from solrace.server.protocol.wire import Message
from solrace.server.race_sync import FORGET_EVERY_MS
from solrace.server.store import SqliteStore
from tests.integration.conftest import ServerFactory, make_settings
from tests.integration.helpers import play, start_race
from tests.integration.wsclient import WAIT_S, Client
from tests.waiting import eventually


async def connect(app: App, name: str) -> Client:
    client = await Client.open(f"ws://127.0.0.1:{app.port}")
    await client.hello(name)
    return client


async def test_a_stuck_board_acknowledged_just_before_a_crash_is_stored_at_the_restart(
    start_server: ServerFactory,
) -> None:
    """A move that gets its racer stuck (or wins) is stored and acknowledged before the
    racer's board is: a kill -9 in between left the racer `playing` in the record, and the
    race waited for its time limit."""
    first = await start_server()
    ann, bob = await connect(first, "ann"), await connect(first, "bob")
    race_id = await start_race(ann, [bob], game="vegas-klondike", game_number="10")
    await play(ann, race_id, ["deal"] * 22)  # the 23rd deal leaves ann stuck
    ann_id = ann.player_id
    for each in (ann, bob):
        await each.close()
    await first.stop()
    store = SqliteStore(first.settings.data_dir / "solrace.sqlite3")
    await store.open()
    now = time.time_ns() // 1_000_000
    await store.append_move(
        MoveRecord(race_id=race_id, player_id=ann_id, ply=22, seq=23, move="deal", at_ms=now)
    )
    record = await store.get_race(race_id)
    await store.close()
    assert record is not None
    assert {r.player_id: r.state for r in record.racers}[ann_id] is RacerState.PLAYING

    again = await start_server()
    race = again.hub.races[race_id].race

    def ann_is_stuck() -> bool:
        return race.racers[ann_id].state is RacerState.STUCK

    await eventually(ann_is_stuck, within=WAIT_S)
    stored = await again.store.get_race(race_id)
    assert stored is not None
    assert {r.player_id: r.state for r in stored.racers}[ann_id] is RacerState.STUCK


async def test_a_race_finished_just_before_a_restart_still_answers_a_resend_and_a_sync(
    start_server: ServerFactory,
) -> None:
    """A finished race stays in memory for `finished_kept_s` to answer late resends and
    syncs; a restart emptied memory, and they got `unknown_race`."""
    first = await start_server()
    ann, bob = await connect(first, "ann"), await connect(first, "bob")
    race_id = await start_race(ann, [bob])
    [ack] = await play(ann, race_id, ["deal"])
    for each in (ann, bob):
        await each.send(Resign(race_id=race_id))
    finished = await ann.expect(RaceFinished)
    assert ann.welcome is not None and ann.welcome.token is not None
    token = ann.welcome.token
    for each in (ann, bob):
        await each.close()
    await first.stop()

    again = await start_server()
    back = await Client.open(f"ws://127.0.0.1:{again.port}")
    await back.hello(token=token)
    await back.send(MakeMove(race_id=race_id, seq=1, move="deal"))  # its ack was lost, say
    duplicate = await back.expect(MoveAck)
    assert duplicate.duplicate and duplicate.ply == ack.ply
    await back.send(Sync(race_id=race_id, epoch=finished.epoch, since_version=0))
    caught_up = await back.expect(RaceFinished)
    assert caught_up.results == finished.results
    assert not [m for m in back.received if isinstance(m, Error)]
    await back.close()


async def test_a_race_whose_time_ran_out_while_the_node_was_down_answers_a_sync_after_it(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    """The node was down past a race's time limit, and past `finished_kept_s` after it: the
    restart times the race out (finished at its time limit, long ago) and kept it in memory
    for no time at all, so the racers coming back were told it had finished (`unknown_race`,
    fetch the replay) and never got its `race_finished`. A race stays `finished_kept_s`
    from when this node finished it."""
    kept_s = 60.0
    first = await start_server(finished_kept_s=kept_s)
    ann, bob = await connect(first, "ann"), await connect(first, "bob")
    race_id = await start_race(ann, [bob], time_limit_s=600)
    await play(ann, race_id, ["deal"])
    assert ann.welcome is not None and ann.welcome.token is not None
    token = ann.welcome.token
    for each in (ann, bob):
        await each.close()
    await first.stop()

    # Back up after the time limit and `finished_kept_s` more.
    offset = [(600 + int(kept_s) + 5) * 1000]
    again = App(make_settings(tmp_path, finished_kept_s=kept_s))
    again.hub.clock = lambda: wall_clock_ms() + offset[0]
    await again.start()
    try:
        await again.hub.tick()  # the time limit is applied, if the ticker has not yet
        stored = await again.store.get_race(race_id)
        assert stored is not None and stored.status is RaceStatus.FINISHED
        offset[0] += FORGET_EVERY_MS  # the next look for races to forget comes
        await again.hub.tick()

        back = await Client.open(f"ws://127.0.0.1:{again.port}")
        await back.hello(token=token)
        await back.send(Sync(race_id=race_id, epoch="before the restart", since_version=3))
        answer = await back.expect(Message, lambda m: isinstance(m, RaceSnapshot | Error))
        assert isinstance(answer, RaceSnapshot), answer
        snapshot = answer
        assert snapshot.results is not None
        assert [(r.name, r.state) for r in snapshot.results] == [
            ("ann", "timed_out"),
            ("bob", "timed_out"),
        ]
        assert not [m for m in back.received if isinstance(m, Error)]
        await back.close()
    finally:
        await again.stop()
