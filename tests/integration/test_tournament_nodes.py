"""A tournament served by two nodes sharing a real Redis: the admin and ann on node A, bob and
a spectator on node B. Views pushed after every change reach the watcher on B, bob gets his
`tournament_race` on B (and the race's events), and he counts as present though only B has
him: no no-show forfeit. The spectator watching the race on B gets no board while the round's
deal is held, and the final boards once node A has ended the round. A race finish a node
stored and was killed before counting is counted once the other nodes find it gone."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import (
    Board,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    Resign,
    Watch,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    TournamentRace,
    TournamentView,
    WatchTournament,
    tournament_race_id,
)
from solrace.server.store import StoreUnavailableError
from solrace.server.tournament_live import Live
from solrace.server.tournament_relay import ChangeNotice
from tests.integration.conftest import ServerFactory, make_settings
from tests.integration.helpers import play
from tests.integration.solver import scoring_line
from tests.integration.test_tournaments import FAST, admin_act, create
from tests.integration.wsclient import Client
from tests.waiting import eventually, eventually_async

pytestmark = pytest.mark.redis

Opener = Callable[..., Awaitable[Client]]


@pytest.fixture
async def nodes(tmp_path: Path, redis_url: str) -> AsyncIterator[list[App]]:
    apps: list[App] = []
    for n in (1, 2):
        app = App(make_settings(tmp_path / f"node{n}", store=None, redis=redis_url, **FAST))
        await app.start()
        apps.append(app)
    yield apps
    for app in apps:
        await app.stop()


@pytest.fixture
async def clients() -> AsyncIterator[Opener]:
    opened: list[Client] = []

    async def open_client(app: App, name: str | None = None) -> Client:
        client = await Client.open(f"ws://127.0.0.1:{app.port}")
        opened.append(client)
        await client.hello(name)
        return client

    yield open_client
    for client in opened:
        await client.close()


def tid_of(message: Any, tid: str) -> bool:
    return bool(message.tournament.tournament_id == tid)


async def test_views_race_notices_and_presence_reach_every_node(
    nodes: list[App], clients: Opener
) -> None:
    node_a, node_b = nodes
    node_a.tournaments.rng = random.Random(4)  # a known deal (the start is asked of node A)
    admin, ann = await clients(node_a, "director"), await clients(node_a, "ann")
    bob, watcher = await clients(node_b, "bob"), await clients(node_b)
    view = await create(admin, "single_elimination", time_limit_s=300, no_show_grace_s=3)
    tid = view.tournament_id
    await watcher.send(WatchTournament(tournament_id=tid))
    await watcher.expect(TournamentView)
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    # Joins on both nodes are pushed to the watcher on B.
    await watcher.expect(TournamentView, lambda m: len(m.tournament.players) == 2)

    await admin.send(admin_act(tid, "start"))  # node A opens the race
    notices = [await p.expect(TournamentRace) for p in (ann, bob)]
    assert notices[0] == notices[1]
    race_id = notices[0].race_id
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == race_id)
    running = await watcher.expect(TournamentView, lambda m: m.tournament.phase == "running")
    assert [live.race_id for live in running.tournament.live] == [race_id]
    await watcher.send(Watch(race_id=race_id))

    def both_present() -> bool:
        live = node_a.tournaments.live.get(tid)
        matches = [] if live is None else live.tournament.live_matches()
        return bool(matches) and set(matches[0].present) == {ann.player_id, bob.player_id}

    await eventually(both_present, within=10.0, what="bob (on node B) reported present by node A")
    assert bob.player_id not in node_a.hub.players

    deal_number = node_a.hub.races[race_id].race.record.game_number
    await bob.send(Resign(race_id=race_id))
    await play(ann, race_id, scoring_line("klondike", deal_number))
    assert not [m for m in watcher.inbox if isinstance(m, Board)]  # the deal is held
    await ann.send(Resign(race_id=race_id))
    await bob.expect(RaceFinished, lambda m: m.race_id == race_id)
    final = await watcher.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert final.tournament.champion == ann.player_id
    assert final.tournament.rounds[0].matches[0].forfeited == []  # bob was never a no-show
    # Node A ended the round and released the deal; B hears of the change and shows the
    # spectator the final boards (it had to watch again for them).
    for racer in (ann, bob):
        await watcher.expect(
            Board, lambda m, p=racer.player_id: m.race_id == race_id and m.player_id == p
        )


async def test_a_node_holds_a_tournament_made_elsewhere_that_nobody_watches_here(
    nodes: list[App], clients: Opener
) -> None:
    """Each node loads the unfinished tournaments as it starts, and holds one made later on
    another node though nobody watches it here (a notice of any change loads it), so that with
    that node gone it still marks presence and forfeits no-shows in it."""
    node_a, node_b = nodes
    admin, ann = await clients(node_a, "director"), await clients(node_a, "ann")
    view = await create(admin, "single_elimination", time_limit_s=300)
    tid = view.tournament_id
    await ann.send(JoinTournament(tournament_id=tid))
    await ann.expect(TournamentView)
    await eventually(lambda: tid in node_b.tournaments.live, what="node B holding it")


async def test_deals_released_by_the_tick_after_an_outage_reach_the_other_nodes_spectators(
    nodes: list[App], clients: Opener
) -> None:
    """The store refuses node A's release of the final's deal as the tournament finishes; A's
    tick releases it once the store is back, and announces it as any change is announced: the
    spectator watching on node B gets the final boards then, with no later change of the
    tournament to bring them (a release by the tick said nothing, and B's spectator waited
    for good)."""
    node_a, node_b = nodes
    node_a.tournaments.rng = random.Random(4)  # a known deal (the start is asked of node A)
    admin, ann, bob = [await clients(node_a, name) for name in ("director", "ann", "bob")]
    watcher = await clients(node_b)
    view = await create(admin, "single_elimination", time_limit_s=300)
    tid = view.tournament_id
    await watcher.send(WatchTournament(tournament_id=tid))
    await watcher.expect(TournamentView)
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)

    store = node_a.store
    real_save = store.save_race_if
    away = True
    refused = 0

    async def releases_refused(race: RaceRecord, expected: RaceRecord | None) -> bool:
        nonlocal refused
        if away and expected is not None and expected.deal_held and not race.deal_held:
            refused += 1
            raise StoreUnavailableError("the store is away (injected)")
        return await real_save(race, expected)

    store.save_race_if = releases_refused  # type: ignore[method-assign]
    try:
        await admin.send(admin_act(tid, "start"))
        race_id = (await ann.expect(TournamentRace)).race_id
        for player in (ann, bob):
            await player.expect(RaceStarted, lambda m: m.race_id == race_id)
        await watcher.send(Watch(race_id=race_id))
        await watcher.expect(RaceSnapshot, lambda m: m.race_id == race_id)
        deal_number = node_a.hub.races[race_id].race.record.game_number
        await bob.send(Resign(race_id=race_id))
        await play(ann, race_id, scoring_line("klondike", deal_number))
        await ann.send(Resign(race_id=race_id))
        await watcher.expect(TournamentView, lambda m: m.tournament.phase == "finished")
        await eventually(lambda: refused > 0, what="node A's release refused")
        assert not [m for m in watcher.inbox if isinstance(m, Board)]  # still held

        away = False  # the store is back: node A's tick releases the deal
        for racer in (ann, bob):
            await watcher.expect(
                Board, lambda m, p=racer.player_id: m.race_id == race_id and m.player_id == p
            )
        record = await store.get_tournament(tid)
        assert record is not None and record.phase == "finished"
    finally:
        store.save_race_if = real_save  # type: ignore[method-assign]


async def test_a_tournament_node_b_found_by_its_tick_is_acted_on_once_by_both_nodes(
    nodes: list[App], clients: Opener
) -> None:
    """Node B hears no notice (each is lost): it finds the tournament made on node A among
    the store's open ones at a tick and holds it from then on. Both nodes then tick it: bob,
    gone before the start, is forfeited once (by whichever node's save lands first; the
    other's compare-and-set fails and finds it done), the final asks for one race on one
    deal, and node B lets the tournament go once it is settled."""
    node_a, node_b = nodes
    relay = node_b.tournaments.relay
    assert relay is not None
    lost: list[str] = []

    async def lose(notice: ChangeNotice | None) -> None:
        if notice is not None:
            lost.append(notice.tournament_id)

    relay.receive = lose
    admin, ann, bob = [await clients(node_a, name) for name in ("director", "ann", "bob")]
    view = await create(admin, "single_elimination", time_limit_s=300, no_show_grace_s=1)
    tid = view.tournament_id
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await eventually(lambda: tid in node_b.tournaments.live, what="node B's tick holding it")
    assert tid in lost  # not from a notice

    await bob.close()
    await admin.send(admin_act(tid, "start"))
    race_id = (await ann.expect(TournamentRace)).race_id

    async def settled() -> bool:
        record = await node_a.store.get_tournament(tid)
        return record is not None and record.settled

    await eventually_async(settled, within=30.0, what="bob forfeited and the tournament settled")
    record = await node_a.store.get_tournament(tid)
    assert record is not None
    final = Live.from_record(record, lambda round_number, race_number: "1002").tournament
    (only,) = final.rounds
    (match,) = only.matches.values()
    assert match.forfeited == {bob.player_id} and final.champion() == ann.player_id
    assert list(only.game_numbers) == [1]  # one race asked for, on one deal
    assert race_id == tournament_race_id(tid, 1)
    stored = await node_a.store.get_race(race_id)
    assert stored is not None and stored.game_number == only.game_numbers[1]
    assert await node_a.store.get_race(tournament_race_id(tid, 2)) is None
    await eventually(lambda: tid not in node_b.tournaments.live, what="node B letting it go")


async def test_a_tournament_node_b_cannot_read_leaves_its_tick_to_the_others(
    nodes: list[App], clients: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """An open tournament in the store whose document the nodes cannot read (written by a
    newer solrace, or damaged) is left alone by their ticks, said once: a tournament made
    after it on node A (every notice lost) is still found and held by node B's tick."""
    node_a, node_b = nodes
    relay = node_b.tournaments.relay
    assert relay is not None

    async def lose(notice: ChangeNotice | None) -> None:
        pass

    relay.receive = lose
    unreadable = TournamentRecord(
        tournament_id="t-newer",
        version=1,
        phase="registration",
        created_at_ms=0,
        document=json.dumps({"state": {"schema": 99}}),  # a newer solrace's
    )
    assert await node_a.store.save_tournament(unreadable, None)
    admin = await clients(node_a, "director")
    tid = (await create(admin, "single_elimination")).tournament_id
    await eventually(lambda: tid in node_b.tournaments.live, what="node B's tick holding it")
    assert "t-newer" not in node_b.tournaments.live
    # Said once by each node whose tick met it (both tick it), not at every tick.
    said = [r.getMessage() for r in caplog.records if "t-newer" in r.getMessage()]
    assert 1 <= len(said) <= 2 and all("cannot be read" in m for m in said)


async def test_a_race_finish_a_killed_node_stored_but_never_counted_counts_once_it_is_found_gone(
    redis_nodes: ServerFactory, redis_url: str, clients: Opener
) -> None:
    """The node that stores a race's finish counts it in its tournament; one killed in between
    (here: its tournament hook taken away, the same state) left the final decided in the store
    and the tournament running. Once a node is found gone, the nodes resume their tournaments
    as at a start: the finish counts."""
    first, second = [await redis_nodes(redis_url, node_ttl_s=1.0, **FAST) for _ in range(2)]
    admin = await clients(first, "director")
    ann, bob = await clients(first, "ann"), await clients(second, "bob")
    tid = (await create(admin, "single_elimination", time_limit_s=300)).tournament_id
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView, lambda m: tid_of(m, tid))
    await admin.send(admin_act(tid, "start"))
    race_id = (await ann.expect(TournamentRace)).race_id
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == race_id)
    number = first.hub.races[race_id].race.record.game_number
    await play(ann, race_id, scoring_line("klondike", number))  # ahead of bob: she wins
    # The node storing the finish (ann's, for her resign comes last) never counts it.
    first.hub.keeper.remove_finish_hook(first.tournaments.race_finished)
    await bob.send(Resign(race_id=race_id))
    await ann.send(Resign(race_id=race_id))
    for racer in (ann, bob):
        await racer.expect(RaceFinished, lambda m: m.race_id == race_id)
    stored = await second.store.get_tournament(tid)
    assert stored is not None and stored.phase == "running"

    # A third node announces itself (seen alive at the next watch, every 0.2 s), then
    # goes silent: it is found gone.
    assert first.broker is not None
    await first.broker.announce("ghost", 400)

    async def is_decided() -> bool:
        record = await second.store.get_tournament(tid)
        return record is not None and record.phase == "finished"

    await eventually_async(is_decided, within=10, what="the final counted")
    await admin.send(WatchTournament(tournament_id=tid))
    view = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert view.tournament.champion == ann.player_id
