"""Whole races over real WebSockets: a win, a 4-player race, duplicate moves, replays."""

from __future__ import annotations

from solrace.server.app import App
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.messages import (
    GetReplay,
    MakeMove,
    MoveAck,
    Progress,
    RaceFinished,
    Replay,
    Resign,
)
from solrace.server.protocol.replay import verify_replay
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import play, refused, start_race
from tests.integration.solver import scoring_line, solve


async def test_two_player_race_played_to_a_win(server: App, client: ClientFactory) -> None:
    line = solve("klondike", "1")
    assert line is not None
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob], game_number="1")

    acks = await play(alice, race_id, line)
    assert acks[-1].won and acks[-1].on_foundations == 52
    # Bob follows Alice's progress live, card counts only.
    await bob.expect(
        Progress,
        lambda m: m.progress.player_id == alice.player_id and m.progress.state == "finished",
    )
    await bob.send(Resign(race_id=race_id))
    finished = await bob.expect(RaceFinished)
    assert [(r.rank, r.name, r.state) for r in finished.results] == [
        (1, "alice", "finished"),
        (2, "bob", "resigned"),
    ]
    assert finished.game_number == "1"
    assert finished.salt is not None
    assert finished.commitment == commit("klondike", "1", finished.salt)
    await alice.expect(RaceFinished)

    await alice.send(GetReplay(race_id=race_id))
    replay = (await alice.expect(Replay)).replay
    assert [m.move for m in replay.racers[0].moves] == line
    report = verify_replay(replay)
    assert report.is_valid, report.problems


async def test_four_player_race_with_resign_stuck_and_time_out(
    server: App, client: ClientFactory
) -> None:
    ann, ben, cat, dan = [await client(name) for name in ("ann", "ben", "cat", "dan")]
    race_id = await start_race(
        ann, [ben, cat, dan], game="vegas-klondike", game_number="10", time_limit_s=600
    )
    await play(ann, race_id, scoring_line("vegas-klondike", "10"))
    await ben.send(Resign(race_id=race_id))
    acks = await play(cat, race_id, ["deal"] * 23)
    assert acks[-1].stuck
    # A stuck board's race is over: further moves are refused.
    assert (await refused(cat, race_id, 99, "deal")).code == "not_playing"
    # Dan does nothing; the server's clock ends the race for Ann and Dan. It is moved past
    # the time limit once every move is in: a real limit of a few seconds could run out
    # during the thirty-odd stored moves above on a slow machine (ann and cat timed out).
    assert server.hub.races[race_id].race.is_live
    server.hub.clock = lambda: wall_clock_ms() + 601_000
    finished = await dan.expect(RaceFinished, within=15)
    ranking = [(r.rank, r.name, r.state) for r in finished.results]
    assert ranking[0] == (1, "ann", "timed_out")
    assert sorted(ranking[1:]) == [
        (2, "ben", "resigned"),
        (2, "cat", "stuck"),
        (2, "dan", "timed_out"),
    ]
    assert finished.results[0].on_foundations == 1
    await ann.expect(RaceFinished)


async def test_duplicate_moves_are_answered_idempotently(
    server: App, client: ClientFactory
) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    [first] = await play(alice, race_id, ["deal"])
    await alice.send(MakeMove(race_id=race_id, seq=1, move="deal"))
    again = await alice.expect(MoveAck, lambda m: m.seq == 1)
    assert again.duplicate and again.model_copy(update={"duplicate": False}) == first
    # The board moved once: ply 1 is the next one.
    [second] = await play(alice, race_id, ["deal"], first_seq=2)
    assert second.ply == 1
    # The same seq with another move is refused, and so is a repeated refusal answered alike.
    assert (await refused(alice, race_id, 1, "t0-t1")).code == "seq_reused"
    rejection = await refused(alice, race_id, 7, "t0-t1")
    assert rejection.code == "illegal_move"
    assert await refused(alice, race_id, 7, "t0-t1") == rejection
