"""A node's stop leaves no work of its presence watch running (server/node_presence.py
`NodePresence.give_up`), even when a client swallowed the watch's cancellation, as a Redis
client may (server/periodic.py): the watch then went on and started its work on the races."""

from __future__ import annotations

import asyncio
import contextlib

from solrace.server.broker import Announced, MemoryBroker
from solrace.server.race_changes import connection_change
from tests.server.sessions import HeldSaves, opened, running_hub, start_race_of_two

#: The name of the task doing a watch's work on the store and the races.
ACTING = "solrace-nodes-acting"


class SwallowingBroker(MemoryBroker):
    """The memory broker, whose announces, while `swallowing`, wait until cancelled and drop
    the cancellation, then answer as usual (`announcing` is set while one waits)."""

    def __init__(self) -> None:
        super().__init__()
        self.swallowing = False
        self.announcing = asyncio.Event()

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        if self.swallowing:
            self.announcing.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
        return await super().announce(node_id, ttl_ms)


def acting_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == ACTING and not t.done()]


async def test_a_watch_that_lost_its_cancellation_leaves_no_work_running() -> None:
    """alice is away in her race (another node marked her away) while her connection here is
    open, so a watch's work marks her back; the store holds that save. The node gives up its
    watch while it announces, and the announce drops the cancellation: the watch started its
    work and waited a fifth of the ttl for it, then ended. That work, still holding the save,
    was left running past the stop."""
    store, broker = HeldSaves(), SwallowingBroker()
    async with opened(store), running_hub(store, broker=broker, node_ttl_s=0.5) as hub:
        presence = hub.presence
        assert presence is not None
        race_id, alice, _ = await start_race_of_two(hub)
        runtime, one = hub.races[race_id], alice.player_id
        assert one is not None
        holder = runtime.race.racers[one].holder
        assert holder is not None
        await hub.keeper.apply_to_race(runtime, connection_change(one, False, hub.clock(), holder))
        assert not runtime.race.racers[one].connected

        store.holding = broker.swallowing = True
        try:
            presence.start()
            await asyncio.wait_for(broker.announcing.wait(), timeout=5)
            await asyncio.wait_for(presence.give_up(), timeout=5)
            assert acting_tasks() == []
        finally:
            store.holding = False
            store.release.set()
            left = acting_tasks()
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
