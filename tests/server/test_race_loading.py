"""Loading races into a node (server/race_loading.py): recovering the live races at start on
several nodes follows each one, and a read that fails leaves no subscription behind."""

from __future__ import annotations

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import MoveRecord
from solrace.server.race_relay import race_channel
from solrace.server.store import StoreUnavailableError
from solrace.server.store.memory import MemoryStore
from tests.server.sessions import opened, running_hub, start_race_of_two


class MovesAway(MemoryStore):
    """A memory store whose moves cannot be read while `away` is set."""

    away = False

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        if self.away:
            raise StoreUnavailableError("the moves are away")
        return await super().get_moves(race_id)


async def test_a_race_that_cannot_be_recovered_leaves_no_subscription() -> None:
    """Several nodes: recovering a race subscribes to its notices, then reads its moves; a
    read that failed left the subscription open for good."""
    store, broker = MovesAway(), MemoryBroker()
    async with opened(store), running_hub(store, broker=broker, progress_interval_s=600) as first:
        race_id, _, _ = await start_race_of_two(first)
        channel = race_channel(race_id)
        following = len(broker.subscriptions[channel])  # the first node's
        async with running_hub(store, broker=broker, progress_interval_s=600) as second:
            store.away = True
            with pytest.raises(StoreUnavailableError):
                await second.keeper.recover()
            assert len(broker.subscriptions[channel]) == following
            store.away = False
            await second.keeper.recover()
            assert race_id in second.races
            assert len(broker.subscriptions[channel]) == following + 1
