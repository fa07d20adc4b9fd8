"""Changes of racers' connections the store refused, waiting for the tick to store them
(server/runtime.py `RaceRuntime.keep_unstored`, server/race_apply.py `apply_or_log` and
`store_connections`): only what can still matter waits, at most two changes a racer. A
racer reconnecting through an outage over real sockets: tests/integration/test_outage_bounds.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NamedTuple

from solrace.server.broker import Broker, MemoryBroker
from solrace.server.hub import Hub
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.race_changes import connection_change
from solrace.server.runtime import RaceRuntime, UnstoredConnection
from solrace.server.tournament_host import HubRaceHost
from tests.server.sessions import (
    HeldSaves,
    RecordingSession,
    opened,
    running_hub,
    start_race_of_two,
)

T1, T2, T3 = 1_000_000, 2_000_000, 3_000_000  # server times (ms) of the changes


def player(session: RecordingSession) -> PlayerId:
    assert session.player_id is not None
    return session.player_id


def holder(runtime: RaceRuntime, player_id: PlayerId) -> str:
    held = runtime.race.racers[player_id].holder
    assert held is not None
    return held


async def stored_racers(hub: Hub, race_id: RaceId) -> dict[PlayerId, tuple[bool, int | None]]:
    """Each racer's connection as the store has it: connected, and away since when."""
    record = await hub.keeper.store.get_race(race_id)
    assert record is not None
    return {r.player_id: (r.connected, r.disconnected_at_ms) for r in record.racers}


def waiting(runtime: RaceRuntime) -> list[tuple[PlayerId, str]]:
    """Whose connection changes wait for the store, and what each does."""
    return [(u.player_id, u.what) for u in runtime.unstored_connections]


class Racing(NamedTuple):
    """A hub on a store whose saves can fail, and its race of alice and bob."""

    store: HeldSaves
    hub: Hub
    race_id: RaceId
    runtime: RaceRuntime
    alice: RecordingSession
    bob: RecordingSession

    async def store_back(self) -> None:
        """The store takes writes again: the tick stores every change that waited."""
        self.store.failing = False
        await self.hub.tick()
        assert not self.runtime.unstored_connections

    async def alice_leaves_and_stays_away(self, what: str) -> None:
        """alice's change `what` is the one waiting for the store; her connection closes;
        once the store takes writes she is stored away since `T1` (as another node marked her)."""
        one = player(self.alice)
        assert waiting(self.runtime) == [(one, what)]
        self.alice.closed = True
        await self.hub.disconnected(self.alice)
        await self.store_back()
        assert (await stored_racers(self.hub, self.race_id))[one] == (False, T1)


@asynccontextmanager
async def race_of_two(broker: Broker | None = None) -> AsyncIterator[Racing]:
    """A hub on a `HeldSaves` store (with `broker`: several nodes) running a race of two."""
    store = HeldSaves()
    async with opened(store), running_hub(store, broker=broker) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        yield Racing(store, hub, race_id, hub.races[race_id], alice, bob)


async def test_a_racer_marked_away_again_and_again_waits_once_away_since_the_first() -> None:
    """A racer of a gone node is marked away at every presence watch while the store refuses
    it: one change waits, and the racer is stored away since the first (its grace runs from
    then; the later ones would find it away and change nothing)."""
    async with race_of_two() as racing:
        store, hub, race_id, runtime, alice, _ = racing
        away = player(alice)
        held_by = holder(runtime, away)
        store.failing = True
        for at in (T1, T2, T3):
            change = connection_change(away, False, at, held_by)
            await hub.keeper.apply_or_log(runtime, change, away, "marked away", away=True)
        assert [u.what for u in runtime.unstored_connections] == ["marked away"]

        await racing.store_back()
        assert (await stored_racers(hub, race_id))[away] == (False, T1)


async def test_a_racer_coming_back_drops_its_earlier_changes_only() -> None:
    """A racer marked away, then back through another connection, while the store refuses
    both: only its coming back waits. Another racer's change stays, and both are stored once
    the store takes them."""
    async with race_of_two() as racing:
        store, hub, race_id, runtime, alice, bob = racing
        one, other = player(alice), player(bob)
        held_by, other_held_by = holder(runtime, one), holder(runtime, other)
        store.failing = True
        keeper = hub.keeper
        gone = connection_change(other, False, T1, other_held_by)
        await keeper.apply_or_log(runtime, gone, other, "marked away", away=True)
        away = connection_change(one, False, T1, held_by)
        await keeper.apply_or_log(runtime, away, one, "marked away", away=True)
        back = connection_change(one, True, T2, "elsewhere:7")
        await keeper.apply_or_log(runtime, back, one, "marked back", away=False)
        assert waiting(runtime) == [(other, "marked away"), (one, "marked back")]

        await racing.store_back()
        assert await stored_racers(hub, race_id) == {one: (True, None), other: (False, T1)}
        assert runtime.race.racers[one].holder == "elsewhere:7"


async def test_a_change_refused_while_an_older_one_is_stored_waits_after_it() -> None:
    """While the tick stores a racer's waiting change, a newer change of the racer is
    refused and drops it from the waiting ones: the tick stores the newer one after it,
    and does not take it for the one it stored."""
    async with race_of_two() as racing:
        store, hub, race_id, runtime, alice, _ = racing
        one = player(alice)
        held_by = holder(runtime, one)
        store.failing = True
        away = connection_change(one, False, T1, held_by)
        await hub.keeper.apply_or_log(runtime, away, one, "marked away", away=True)

        store.failing, store.holding = False, True
        ticking = asyncio.create_task(hub.tick())
        await asyncio.wait_for(store.held.wait(), timeout=5)  # the away change being saved
        back = connection_change(one, True, T2, held_by)
        runtime.keep_unstored(UnstoredConnection(back, one, "marked back", away=False))
        store.holding = False
        store.release.set()
        await asyncio.wait_for(ticking, timeout=5)

        assert not runtime.unstored_connections
        assert (await stored_racers(hub, race_id))[one] == (True, None)


# --- a racer marked connected through a connection that closes before the store takes it ---


async def marked_away_by_another_node(hub: Hub, race_id: RaceId, racer: PlayerId) -> None:
    """The race stores `racer` away through the connection it holds, as another node's watch
    does for the racers of a node it took for gone."""
    runtime = hub.races[race_id]
    gone = connection_change(racer, False, T1, holder(runtime, racer))
    await hub.keeper.apply_to_race(runtime, gone)
    assert (await stored_racers(hub, race_id))[racer] == (False, T1)


async def test_a_racer_marked_back_by_the_watch_and_gone_before_the_store_took_it_stays_away() -> (
    None
):
    """Several nodes: the presence watch marks a racer connected here back (another node
    had marked it away) while the store refuses writes; its connection closes meanwhile, and
    its leaving finds the racer away (the refused change was undone), changes nothing and
    does not wait. Once the store takes writes, the waiting change finds the connection
    closed and leaves the racer away: it marked the racer connected through the closed
    connection, and the racer, gone, was never put out."""
    async with race_of_two(MemoryBroker()) as racing:
        store, hub, race_id, _, alice, _ = racing
        assert hub.presence is not None
        await marked_away_by_another_node(hub, race_id, player(alice))

        store.failing = True
        await hub.presence.watch(hub.clock())
        await racing.alice_leaves_and_stays_away("marked back")


async def test_a_seated_racer_marked_here_and_gone_before_the_store_took_it_stays_away() -> None:
    """The same for a tournament race opened elsewhere, whose seated racer connected here is
    marked here (`HubRaceHost.mark_connected_here`) while the store refuses writes."""
    async with race_of_two(MemoryBroker()) as racing:
        store, hub, race_id, runtime, alice, _ = racing
        one = player(alice)
        await marked_away_by_another_node(hub, race_id, one)

        store.failing = True
        await HubRaceHost(hub, None).mark_connected_here(runtime, [(one, alice)])
        await racing.alice_leaves_and_stays_away("marked here")
