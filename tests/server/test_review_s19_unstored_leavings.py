"""A racer's leavings waiting for the store (server/runtime.py `RaceRuntime.keep_unstored`)
when the racer's coming back between them was stored: the grace runs from its last
leaving, not from the one before its coming back."""

from __future__ import annotations

from solrace.server.hub import Hub
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Welcome
from solrace.server.protocol.records import RacerState
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)

GRACE_S = 30
T1 = 1_000_000  # server times (ms): the race starts, alice leaves
T2 = T1 + 20_000  # she comes back
T3 = T1 + 40_000  # she leaves again: past her grace from T1, not from T3


async def stored_racer(hub: Hub, race_id: RaceId, player_id: PlayerId) -> tuple[bool, int | None]:
    """The racer's connection as the store has it: connected, and away since when."""
    record = await hub.keeper.store.get_race(race_id)
    assert record is not None
    [racer] = [r for r in record.racers if r.player_id == player_id]
    return racer.connected, racer.disconnected_at_ms


async def test_a_leaving_after_a_stored_coming_back_is_not_dropped_for_an_older_one() -> None:
    """alice's connection closes while the store refuses writes (her leaving waits); the
    store takes writes again and she comes back through a new connection before the tick
    (stored: connected); the store refuses again and that connection closes too. Once the
    store takes writes, she is stored away since her last leaving: the older leaving,
    applied to the newer connection (none of hers is open here), had put her away since the
    first, and her grace, run out since, put her out at once."""
    now = [T1]
    store = HeldSaves()
    async with opened(store), running_hub(store, clock=lambda: now[0], grace_s=GRACE_S) as hub:
        race_id, alice, _ = await start_race_of_two(hub)
        one = alice.player_id
        assert one is not None
        token = next(m for m in alice.sent if isinstance(m, Welcome)).token
        runtime = hub.races[race_id]

        store.failing = True
        alice.closed = True
        await hub.disconnected(alice)  # away since T1: refused, waits
        assert [u.what for u in runtime.unstored_connections] == ["marked away"]

        store.failing = False
        now[0] = T2
        again = RecordingSession(3)
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=token))
        assert await stored_racer(hub, race_id, one) == (True, None)

        store.failing = True
        now[0] = T3
        again.closed = True
        await hub.disconnected(again)  # away since T3: refused

        store.failing = False
        await hub.tick()
        assert not runtime.unstored_connections
        assert await stored_racer(hub, race_id, one) == (False, T3)
        assert runtime.race.racers[one].state is RacerState.PLAYING  # her grace runs
