"""The deals held for a tournament round: a finished race whose deal is held shows its
spectators no final boards until the round ends and the tournament service releases the deal
in the store (`RaceRecord.deal_held`).

`HeldDeals` keeps this node's copies up with those releases, for the race keeper
(race_sync.py), which owns it: a release on this node (`release_deal`), one another node made
in the store (`take_releases` when a tournament changed elsewhere, `take_release` when a
request loads a finished race whose deal this copy holds). Once a copy knows its deal was
released, the race's spectators get the boards held back until then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import RaceStatus
from solrace.server.protocol.tournament_messages import tournament_of_race
from solrace.server.race_delivery import RaceDelivery
from solrace.server.runtime import RaceRuntime
from solrace.server.store import Store, StoreError

log = logging.getLogger("solrace.server.race_held_deals")


class HeldDeals:
    """The releases of the held deals of the races this node holds (`races`, the keeper's):
    asked of `store`, the final boards sent by `delivery`."""

    def __init__(
        self,
        store: Store,
        races: Mapping[RaceId, RaceRuntime],
        delivery: RaceDelivery,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.store = store
        self.races = races
        self.delivery = delivery
        self.clock = clock

    async def take_release(self, runtime: RaceRuntime) -> None:
        """Several nodes: a finished race whose deal this copy holds. The tournament service
        releases it in the store when its round ends, on whichever node (on its own node it
        also tells this node's keeper: `release_deal`), which this copy does not follow; the
        store is asked (a held deal stays held if it cannot answer)."""
        try:
            record = await self.store.get_race(runtime.race_id)
        except StoreError as exc:
            log.warning("race %s: release of its deal not checked: %s", runtime.race_id, exc)
            return
        if record is not None and not record.deal_held:
            self.release_deal(runtime.race_id)

    async def take_releases(self, tournament_id: str | None = None) -> None:
        """Several nodes: another node changed the tournament `tournament_id` (maybe ending a
        round; None: any tournament, changes may have been missed). Its finished races held
        here whose deal is held and which someone here watches ask the store whether it was
        released, so that their spectators get the final boards now (the node ending the
        round releases only its own copies). The races are read together, not one after
        another: a round of a big tournament has many."""
        waiting = [
            runtime
            for runtime in self.races.values()
            if runtime.spectators
            and runtime.race.record.deal_held
            and runtime.race.status is RaceStatus.FINISHED
            and (tournament_id is None or tournament_of_race(runtime.race_id) == tournament_id)
        ]
        await asyncio.gather(*(self.take_release(runtime) for runtime in waiting))

    def release_deal(self, race_id: RaceId) -> None:
        """The race's deal was released in the store (its tournament round ended): this node's
        copy, if it has one, knows it too, and the race's spectators get the boards held back
        until now."""
        runtime = self.races.get(race_id)
        if runtime is None or not runtime.race.record.deal_held:
            return
        runtime.race.release_deal()
        if runtime.saved is not None:
            runtime.saved = runtime.saved.model_copy(update={"deal_held": False})
        self.delivery.push_spectator_boards(runtime, self.clock(), force=True)


__all__ = [
    "HeldDeals",
]
