"""A tournament round's deal against a cheater, on a real node: the players of a match that
has finished try every request that names the other match (still racing on the same deal)
or their own finished race, an audience watches both races and the tournament, and no frame
any of them gets before the round ends holds a game number or salt of the round (or its
races' invite codes), or a board of its races."""

from __future__ import annotations

from solrace.server.app import App
from solrace.server.protocol.messages import (
    Board,
    Error,
    GetReplay,
    ListRaces,
    MakeMove,
    MoveAck,
    Ping,
    Pong,
    Progress,
    RaceFinished,
    RaceList,
    RaceSnapshot,
    RaceStarted,
    Replay,
    Resign,
    Sync,
    Watch,
)
from solrace.server.protocol.tournament_messages import (
    GetProfile,
    ListTournaments,
    Profile,
    TournamentList,
    TournamentRace,
    TournamentView,
    WatchTournament,
)
from tests.integration.conftest import ServerFactory
from tests.integration.test_tournament_races import first_round_of_four
from tests.integration.test_tournaments import FAST, admin_act, connect
from tests.integration.wsclient import Client


async def refused(client: Client, request: object, race_id: str) -> Error:
    await client.send(request)  # type: ignore[arg-type]
    return await client.expect(Error, lambda m: m.race_id == race_id)


async def test_no_frame_reveals_a_round_s_deal_before_the_round_ends(
    start_server: ServerFactory,
) -> None:
    app: App = await start_server(**FAST)
    admin, players, tid, notices = await first_round_of_four(app)
    first, second = sorted({n.race_id for n in notices.values()})
    in_first = [p for p in players if notices[p.player_id].race_id == first]
    in_second = [p for p in players if notices[p.player_id].race_id == second]
    audience = [await connect(app), await connect(app)]
    for watcher, race_id in zip(audience, (first, second), strict=True):
        await watcher.send(WatchTournament(tournament_id=tid))
        await watcher.expect(TournamentView)
        await watcher.send(Watch(race_id=race_id))
        await watcher.expect(RaceSnapshot, lambda m, r=race_id: m.race_id == r)
    for player in players:
        race_id = notices[player.player_id].race_id
        await player.expect(RaceStarted, lambda m, r=race_id: m.race_id == r)
        await player.send(MakeMove(race_id=race_id, seq=1, move="deal"))
        await player.expect(MoveAck, lambda m, r=race_id: m.race_id == r)

    # The first match's race ends (a tie: both resign); the second races on, on its deal.
    for player in in_first:
        await player.send(Resign(race_id=first))
    for player in in_first:
        done = await player.expect(RaceFinished, lambda m: m.race_id == first)
        assert done.game_number is None and done.salt is None
    done = await audience[0].expect(RaceFinished, lambda m: m.race_id == first)
    assert done.game_number is None and done.salt is None
    cheat = in_first[0]
    await cheat.expect(TournamentRace, lambda m: m.race_number == 2)  # the sudden death
    for race_id in (first, second):
        assert (await refused(cheat, GetReplay(race_id=race_id), race_id)).code == "not_finished"
        assert (await refused(audience[1], GetReplay(race_id=race_id), race_id)).code == (
            "not_finished"
        )
    for request in (Watch(race_id=second), Sync(race_id=second)):
        assert (await refused(cheat, request, second)).code == "not_allowed"
    await cheat.send(Sync(race_id=first))
    snapshot = await cheat.expect(RaceSnapshot, lambda m: m.race_id == first)
    assert snapshot.race.status == "finished" and snapshot.game_number is None
    await cheat.send(ListRaces())
    listed = {r.race_id: r for r in (await cheat.expect(RaceList)).races}
    assert listed[second].deal_held and listed[second].private
    await cheat.send(ListTournaments())
    await cheat.expect(TournamentList)
    await cheat.send(WatchTournament(tournament_id=tid))
    view = (await cheat.expect(TournamentView)).tournament
    assert not view.rounds[0].is_ended and view.rounds[0].game_numbers == {}
    await cheat.send(GetProfile(player_id=in_second[0].player_id))
    await cheat.expect(Profile)
    await in_second[0].send(MakeMove(race_id=second, seq=2, move="deal"))
    await audience[1].expect(Progress, lambda m: m.race_id == second and m.progress.moves == 2)

    everyone = [admin, *players, *audience]
    for each in everyone:
        await each.send(Ping(nonce=9))
        await each.expect(Pong)
    seen = {id(each): len(each.frames) for each in everyone}  # all before the round's end
    assert all(
        not isinstance(m, Board) or m.player_id == each.player_id
        for each in everyone
        for m in each.received
    ), "a board of a race whose deal is held went out"
    stored = app.store.get_race
    record = await stored(second)
    assert record is not None and record.status.value == "running"

    # The round ends (the admin decides both matches): the deals may be known from now on.
    for loser in (in_first[1], in_second[1]):
        match_id = notices[loser.player_id].match_id
        await admin.send(admin_act(tid, "forfeit", match_id=match_id, player_id=loser.player_id))
    ended = await audience[0].expect(
        TournamentView, lambda m: bool(m.tournament.rounds and m.tournament.rounds[0].is_ended)
    )
    numbers = set(ended.tournament.rounds[0].game_numbers.values())
    assert len(numbers) == 2  # the race and its sudden death
    secrets = {n.encode() for n in numbers}
    for race_id in (first, second):
        record = await stored(race_id)
        assert record is not None and record.game_number in numbers
        assert record.invite_code is not None  # the seats are the server's to fill
        secrets |= {record.salt.encode(), record.invite_code.encode()}
    for each in everyone:
        for frame in each.frames[: seen[id(each)]]:
            assert not [s for s in secrets if s in frame], "a frame held the round's deal"
    await cheat.send(GetReplay(race_id=first))
    assert (await cheat.expect(Replay)).replay.game_number in numbers
    for each in everyone:
        await each.close()
