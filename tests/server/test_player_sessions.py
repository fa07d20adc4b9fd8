"""Which session holds each player (server/player_sessions.py): two connections of one player,
the later of which holds the player's races."""

from __future__ import annotations

import asyncio

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Sync, Welcome
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)
from tests.waiting import eventually


class ClosingSession(RecordingSession):
    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.close_code: CloseCode | None = None

    def close(self, code: CloseCode, reason: str) -> None:
        self.close_code = code
        super().close(code, reason)


async def test_of_two_hellos_with_one_token_at_once_the_later_replaces_the_earlier() -> None:
    """Two tabs: the first hello is still marking its race (its save held by the store) when
    the second arrives. The first is closed with 4003, the second gets the race's events and
    holds the racer, and when it leaves the racer is marked away (it used to stay connected
    through the first, closed, connection, or both stayed open)."""
    store = HeldSaves()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, _bob = await start_race_of_two(hub)
        token = next(m.token for m in alice.sent if isinstance(m, Welcome))
        await hub.disconnected(alice)
        first, second = ClosingSession(11), ClosingSession(12)
        store.holding = True
        hello = Hello(protocol=PROTOCOL_VERSION, token=token)
        earlier = asyncio.create_task(hub.handle(first, hello))
        await asyncio.wait_for(store.held.wait(), 5)  # the first hello is marking its race
        later = asyncio.create_task(hub.handle(second, hello))
        # The second hello replaces the first before it waits for the race in turn.
        await eventually(lambda: first.close_code is not None, within=5, what="the first's close")
        assert first.close_code is CloseCode.REPLACED
        store.release.set()
        await asyncio.wait_for(asyncio.gather(earlier, later), 5)
        player_id = first.player_id
        assert player_id is not None and hub.players[player_id] is second
        racer = hub.races[race_id].race.racers[player_id]
        assert racer.connected and racer.holder == hub.holder_of(second)
        await hub.disconnected(first)  # the replaced one's goodbye changes nothing
        assert hub.races[race_id].race.racers[player_id].connected
        await hub.disconnected(second)
        assert not hub.races[race_id].race.racers[player_id].connected


async def test_a_sync_that_waited_for_the_race_records_the_newest_connection() -> None:
    """The first tab's sync waits for the race while a second tab says hello: whichever
    change is applied last, the racer is held by the second tab, so that its close marks
    the racer away (a stale holder kept the racer 'connected' through a closed socket)."""
    async with running_hub() as hub:
        race_id, alice, _bob = await start_race_of_two(hub)
        token = next(m.token for m in alice.sent if isinstance(m, Welcome))
        player_id = alice.player_id
        assert player_id is not None
        runtime = hub.races[race_id]
        second = ClosingSession(12)
        async with runtime.lock:  # the race is busy: both requests wait for it, hello first
            hello = asyncio.create_task(
                hub.handle(second, Hello(protocol=PROTOCOL_VERSION, token=token))
            )
            await eventually(lambda: hub.claimant_of(player_id) is second, within=5, what="claim")
            sync = asyncio.create_task(hub.handle(alice, Sync(race_id=race_id)))  # after it
        await asyncio.wait_for(asyncio.gather(hello, sync), 5)
        assert runtime.race.racers[player_id].holder == hub.holder_of(second)
        await hub.disconnected(alice)
        await hub.disconnected(second)
        assert not runtime.race.racers[player_id].connected
