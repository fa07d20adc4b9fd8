"""A node after many races: what it keeps per race is gone once the race has left its memory.

Real servers on loopback (a real `redis-server` for the Redis store) and real clients; the
checks are on the sizes of the node's own maps, never on time or memory figures
(`bench/soak.py` watches those over minutes)."""

from __future__ import annotations

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    Error,
    Hello,
    JoinRace,
    ListRaces,
    Ping,
    Pong,
    RaceFinished,
    RaceList,
    RaceSnapshot,
    RaceStarted,
    Resign,
    Sync,
    Unwatch,
    Watch,
)
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    LeaveTournament,
    TournamentRace,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)
from solrace.server.store.redis import RedisStore
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race, start_race
from tests.integration.test_http import _get
from tests.integration.test_tournaments import FAST as TOURNAMENTS
from tests.integration.test_tournaments import admin_act, create
from tests.integration.wsclient import Client, connect_client
from tests.waiting import eventually

RACES = 4
ROUNDS = 3


async def test_a_redis_store_keeps_no_record_of_the_races_that_ended(
    start_server: ServerFactory, redis_url: str
) -> None:
    app = await start_server(store=redis_url, finished_kept_s=0.05)
    store = app.store
    assert isinstance(store, RedisStore)
    url = f"ws://127.0.0.1:{app.port}"
    ann, bob = await connect_client(url, "ann"), await connect_client(url, "bob")
    try:
        for number in range(1, RACES + 1):
            race_id = await start_race(ann, [bob], game_number=str(number))
            assert store.remembered_races == 1  # the live race: compare-and-set in one call
            for player in (ann, bob):
                await player.send(Resign(race_id=race_id))
            for player in (ann, bob):
                await player.expect(RaceFinished, lambda m, r=race_id: m.race_id == r)
        await eventually(lambda: not app.hub.keeper.races, what="the ended races forgotten")
        assert store.remembered_races == 0
    finally:
        await ann.close()
        await bob.close()


async def one_of_everything(
    app: App, ann: Client, bob: Client, director: Client, number: int
) -> Client:
    """One round of what a node sees besides plain races; returns bob's new connection.

    A private race (bob refused without its code) that a spectator watches and unwatches
    before following the lobby and leaving, and another drops out of; bob drops mid-race and
    comes back on a new connection. A race whose other racer drops for good (forfeited at
    the end of his grace). A rated race. Two connections the server closes. A tournament
    watched by a spectator who drops, which bob leaves (ann is champion)."""
    url = f"ws://127.0.0.1:{app.port}"
    code = f"code-{number}"
    race_id = await create_race(ann, seats=2, invite_code=code, game_number=str(number + 1))
    await bob.send(JoinRace(race_id=race_id))
    await bob.expect(Error, lambda m: m.request == "join_race")
    await bob.send(JoinRace(race_id=race_id, invite_code=code))
    for racer in (ann, bob):
        await racer.expect(RaceStarted, lambda m: m.race_id == race_id)
    watcher, dropper = await connect_client(url), await connect_client(url)
    for spectator in (watcher, dropper):
        await spectator.send(Watch(race_id=race_id))
        await spectator.expect(RaceSnapshot, lambda m: m.race_id == race_id)
    await watcher.send(Unwatch(race_id=race_id))
    await watcher.send(ListRaces(follow=True))
    await watcher.expect(RaceList)
    await watcher.close()
    assert dropper.connection.transport is not None
    dropper.connection.transport.abort()
    token = bob.welcome.token if bob.welcome is not None else None
    assert bob.connection.transport is not None
    bob.connection.transport.abort()
    bob = await connect_client(url, token=token)
    await bob.send(Sync(race_id=race_id))
    await bob.expect(Board, lambda m: m.race_id == race_id)
    await finish(race_id, ann, bob)

    gone = await connect_client(url, f"gone{number}")
    race_id = await start_race(ann, [gone], game_number=str(number + 1))
    assert gone.connection.transport is not None
    gone.connection.transport.abort()
    await finish(race_id, ann)  # once his grace has run out

    await finish(await start_race(ann, [bob], rated=True, game_number=None), ann, bob)

    for refused in (await connect_client(url), await Client.open(url)):
        await refused.send_raw("not binary")
        assert await refused.closed() == CloseCode.UNSUPPORTED_DATA
    forged = await Client.open(url)
    await forged.send(Hello(protocol=PROTOCOL_VERSION, token="p1.forged.token"))
    assert await forged.closed() == CloseCode.AUTH_FAILED

    tid = (await create(director, "single_elimination", time_limit_s=300)).tournament_id
    fan = await connect_client(url)
    for watching in (director, fan):
        await watching.send(WatchTournament(tournament_id=tid))
        await watching.expect(TournamentView, lambda m: m.tournament.tournament_id == tid)
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
    await director.expect(TournamentView, lambda m: len(m.tournament.players) == 2)
    await director.send(admin_act(tid, "start"))
    for player in (ann, bob):
        await player.expect(TournamentRace, lambda m: m.tournament_id == tid)
    assert fan.connection.transport is not None
    fan.connection.transport.abort()
    await bob.send(LeaveTournament(tournament_id=tid))
    await director.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    await director.send(UnwatchTournament(tournament_id=tid))
    await director.send(Ping(nonce=number))  # answered once the unwatch is done
    await director.expect(Pong, lambda m: m.nonce == number)
    for each in (ann, bob, director):
        each.inbox.clear()
    return bob


async def finish(race_id: RaceId, *racers: Client) -> None:
    """The racers resign; the race ends (the others out already, or once their grace ends)."""
    for racer in racers:
        await racer.send(Resign(race_id=race_id))
    for racer in racers:
        await racer.expect(RaceFinished, lambda m: m.race_id == race_id)


def held_by(app: App) -> dict[str, int]:
    """The sizes of what the node keeps per race, player, session or tournament."""
    hub, tournaments, transport = app.hub, app.tournaments, app.transport
    return {
        "races": len(hub.keeper.races),
        "players": len(hub.players),
        "lobby followers": len(hub.lobby.followers),
        "tournaments live": len(tournaments.live),
        "tournaments watched": len(tournaments.views.watched()),
        "connections": len(transport.connections),
        "sessions": len(transport.sessions),
        "addresses": len(transport.admission.open),
    }


async def test_after_rounds_of_everything_a_node_holds_only_its_connections(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**TOURNAMENTS, finished_kept_s=0.05, grace_s=0.2)
    url = f"ws://127.0.0.1:{app.port}"
    ann, bob = await connect_client(url, "ann"), await connect_client(url, "bob")
    director = await connect_client(url, "director")
    three_connected = {
        "races": 0,
        "players": 3,
        "lobby followers": 0,
        "tournaments live": 0,
        "tournaments watched": 0,
        "connections": 3,
        "sessions": 3,
        "addresses": 1,
    }
    try:
        for number in range(ROUNDS):
            bob = await one_of_everything(app, ann, bob, director, number)
            await eventually(
                lambda: held_by(app) == three_connected,
                what=f"round {number + 1}: the node holding only 3 connections' worth",
            )
    finally:
        for client in (ann, bob, director):
            await client.close()
    nothing = dict.fromkeys(three_connected, 0)
    await eventually(lambda: held_by(app) == nothing, what="the node holding nothing")


async def test_metrics_count_the_asyncio_tasks_of_the_node(start_server: ServerFactory) -> None:
    app = await start_server()
    status, _, body = await _get(app.port, "/metrics")
    counted = [line for line in body.splitlines() if line.startswith("solrace_tasks ")]
    assert status == 200 and len(counted) == 1
    assert float(counted[0].split()[1]) >= 1  # at least the task that answers the request
