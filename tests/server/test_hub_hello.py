"""Answering a hello (server/hub_hello.py): a hello while the store is away."""

from __future__ import annotations

from solrace.server.protocol.competition_records import RatingRecord
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Error, Hello, Welcome
from solrace.server.ratings import RatingService
from solrace.server.store import MemoryStore, StoreUnavailableError
from tests.server.sessions import RecordingSession, opened, running_hub


class RatingsAway(MemoryStore):
    """The memory store, with rating reads that fail while `failing` is set."""

    failing = False

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        if self.failing:
            raise StoreUnavailableError("the store is away")
        return await super().get_ratings(player_id)


async def test_a_store_outage_in_hello_neither_loses_the_name_nor_half_identifies() -> None:
    store = RatingsAway()
    async with opened(store), running_hub(store, countdown_s=3.0) as hub:
        hub.plug_in(ratings_of=RatingService(store).display_ratings)
        store.failing = True

        # A new name needs no store read after its creation: the token always reaches it.
        first = RecordingSession(1)
        await hub.handle(first, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        (welcome,) = first.sent
        assert isinstance(welcome, Welcome) and welcome.token is not None

        # A returning player whose ratings cannot be read is told to retry, and nothing
        # changed: the same connection's next hello is answered.
        again = RecordingSession(2)
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        assert again.sent == [
            Error(
                code=ErrorCode.UNAVAILABLE.value,
                message="store unavailable; retry",
                request="hello",
                race_id=None,
            )
        ]
        assert (
            not again.said_hello and hub.players.get(welcome.player_id or PlayerId("")) is not again
        )
        store.failing = False
        await hub.handle(again, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        assert isinstance(again.sent[-1], Welcome) and again.sent[-1].player_id == welcome.player_id
