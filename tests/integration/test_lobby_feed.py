"""The lobby feed over real sockets: a session that follows the lobby gets the race list
again when it changes (on one node at once, on several nodes by the periodic read)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from solrace.server.app import App
from solrace.server.protocol.messages import JoinRace, ListRaces, Ping, Pong, RaceList
from tests.integration.conftest import ServerFactory, make_settings
from tests.integration.helpers import create_race
from tests.integration.wsclient import Client


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


def listed(race_id: str, status: str, seated: int) -> Callable[[RaceList], bool]:
    def matches(message: RaceList) -> bool:
        return any(
            r.race_id == race_id and r.status == status and len(r.racers) == seated
            for r in message.races
        )

    return matches


async def test_a_follower_gets_the_list_on_every_change(start_server: ServerFactory) -> None:
    app = await start_server(lobby_push_s=0.05)
    watcher, alice, bob = [await Client.open(url_of(app)) for _ in range(3)]
    try:
        await watcher.hello("watcher")
        await alice.hello("alice")
        await bob.hello("bob")
        await watcher.send(ListRaces(follow=True))
        first = await watcher.expect(RaceList)
        assert first.races == []

        # Pushed, not asked for: a new race, then its second racer and its start.
        race_id = await create_race(alice, seats=2)
        await watcher.expect(RaceList, listed(race_id, "open", 1))
        await bob.send(JoinRace(race_id=race_id))
        await watcher.expect(RaceList, listed(race_id, "running", 2))
        assert not [m for m in alice.received if isinstance(m, RaceList)]  # followers only

        # A follower that stops following is sent nothing more. A push may still be unread
        # (the race counting down, when the push came before the tick that started it), so
        # the answer is not told by its type: the pong behind the request says it is handled.
        await watcher.send(ListRaces(follow=False))
        await watcher.send(Ping(nonce=1))
        await watcher.expect(Pong)
        assert not [s for s in app.hub.lobby.followers if s.player_id == watcher.player_id]
    finally:
        for each in (watcher, alice, bob):
            await each.close()
    # A closed follower is forgotten.
    assert not app.hub.lobby.followers


@pytest.mark.redis
async def test_a_follower_on_another_node_sees_a_new_race(tmp_path: Path, redis_url: str) -> None:
    nodes = []
    for n in (1, 2):
        settings = make_settings(
            tmp_path / f"node{n}", store=None, redis=redis_url, lobby_poll_s=0.05
        )
        nodes.append(App(settings))
        await nodes[-1].start()
    node_a, node_b = nodes
    watcher, alice = await Client.open(url_of(node_b)), await Client.open(url_of(node_a))
    try:
        await watcher.hello("watcher")
        await alice.hello("alice")
        await watcher.send(ListRaces(follow=True))
        await watcher.expect(RaceList)
        race_id = await create_race(alice, seats=2)  # on node A: node B never loads it
        await watcher.expect(RaceList, listed(race_id, "open", 1))
    finally:
        await watcher.close()
        await alice.close()
        for node in nodes:
            await node.stop()
