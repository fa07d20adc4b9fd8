"""Replays and private races against a curious client, on a real node: before a race ends
nobody (a racer, a spectator, a racer of another race) gets its replay, its number or its
salt; an invite code limits who joins, not who lists, watches or replays the race
(docs/protocol.md), and no frame to anyone ever holds the code."""

from __future__ import annotations

from solrace.server.app import App
from solrace.server.protocol.messages import (
    Board,
    Error,
    GetReplay,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    MoveRejected,
    RaceFinished,
    RaceList,
    RaceSnapshot,
    Replay,
    Resign,
    StartRace,
    Watch,
)
from tests.integration.conftest import ClientFactory
from tests.integration.helpers import create_race, play, seat_and_start, start_race

CODE = "opensesame-7d1f"


async def test_a_race_s_replay_number_and_salt_wait_for_its_end(
    server: App, client: ClientFactory
) -> None:
    alice, bob, carol, dave = [await client(n) for n in ("alice", "bob", "carol", "dave")]
    watcher = await client()
    await watcher.hello()
    race_id = await start_race(alice, [bob], game_number=None)
    other = await start_race(carol, [dave], game_number=None)
    await watcher.send(Watch(race_id=race_id))
    await watcher.expect(RaceSnapshot)
    await play(alice, race_id, ["deal", "deal"])
    await alice.send(Resign(race_id=race_id))  # out of the race, which runs on for bob
    for asker in (alice, bob, watcher, carol):
        await asker.send(GetReplay(race_id=race_id))
        refusal = await asker.expect(Error, lambda m: m.request == "get_replay")
        assert refusal.code == "not_finished" and refusal.race_id == race_id

    # Spectators cannot act, anonymous or a player (a racer of another race).
    await carol.send(Watch(race_id=race_id))
    await carol.expect(RaceSnapshot, lambda m: m.race_id == race_id)
    for spectator, code in ((watcher, "identity_required"), (carol, "not_in_race")):
        for request in (Resign(race_id=race_id), LeaveRace(race_id=race_id)):
            await spectator.send(request)
            refusal = await spectator.expect(Error, lambda m, t=request.type: m.request == t)
            assert refusal.code == code
        await spectator.send(StartRace(race_id=race_id))
        assert (await spectator.expect(Error, lambda m: m.request == "start_race")).code == code
        await spectator.send(MakeMove(race_id=race_id, seq=1, move="deal"))
        assert (await spectator.expect(MoveRejected)).code == "not_in_race"
    await play(bob, race_id, ["deal"])  # bob's race is as it was

    await bob.send(Resign(race_id=race_id))
    finished = await watcher.expect(RaceFinished)
    assert finished.game_number is not None and finished.salt is not None
    secrets = (finished.game_number.encode(), finished.salt.encode())
    for each in (alice, bob, watcher, carol, dave):
        end = next(
            (i for i, m in enumerate(each.received) if isinstance(m, RaceFinished)),
            len(each.received),
        )
        before_end = each.frames[:end]
        assert not [f for f in before_end for s in secrets if s in f], "revealed before the end"
    await carol.send(GetReplay(race_id=race_id))
    replay = (await carol.expect(Replay)).replay
    assert (replay.game_number, replay.salt) == (finished.game_number, finished.salt)
    for each in (carol, dave):
        await each.send(Resign(race_id=other))


async def test_a_private_race_is_listed_watched_and_replayed_but_its_code_never_sent(
    server: App, client: ClientFactory
) -> None:
    alice, bob, mallory = await client("alice"), await client("bob"), await client("mallory")
    watcher = await client()
    await watcher.hello()
    race_id = await create_race(alice, invite_code=CODE)
    for asker in (mallory, watcher):
        await asker.send(ListRaces())
        [listed] = (await asker.expect(RaceList)).races
        assert listed.race_id == race_id and listed.private
    for code in (None, "opensesame", CODE.upper()):
        await mallory.send(JoinRace(race_id=race_id, invite_code=code))
        refusal = await mallory.expect(Error, lambda m: m.request == "join_race")
        assert refusal.code == "bad_invite"
    await watcher.send(Watch(race_id=race_id))
    await watcher.expect(RaceSnapshot)
    await bob.send(JoinRace(race_id=race_id, invite_code=CODE))
    await seat_and_start(race_id, [], [alice, bob])
    await watcher.expect(Board, lambda m: m.player_id == bob.player_id)
    for racer in (alice, bob):
        await racer.send(Resign(race_id=race_id))
    await watcher.expect(RaceFinished)
    await mallory.send(GetReplay(race_id=race_id))
    await mallory.expect(Replay)
    for each in (alice, bob, mallory, watcher):
        assert not [f for f in each.frames if CODE.encode() in f], "a frame held the code"
