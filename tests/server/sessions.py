"""In-process hub tests: a hub that is stopped however the test ends (`running_hub`), a
session that records what the hub sends, a running race, two players on a hub with given
settings (`ann_and_bob`), a store whose race saves a test can hold or fail (`HeldSaves`), and a
Redis broker a test opens (`opened_broker`) and can hold as a frozen node's (`HeldBroker`),
and two nodes on one Redis (`two_nodes`) with a race open on one, watched on the other
(`open_race_watched_on_b`).

`RecordingSession` implements `send` only: a frame the hub hands to `send_frame` comes back
through `Session`'s fallback, decoded, so `sent` holds what a client would read."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from solrace.server.broker import Broker, RedisBroker
from solrace.server.hub import Hub, wall_clock_ms
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    Watch,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import MemoryStore, Store, StoreUnavailableError
from solrace.server.store.redis import RedisStore

StoreT = TypeVar("StoreT", bound=Store)


@contextlib.asynccontextmanager
async def opened(store: StoreT) -> AsyncIterator[StoreT]:
    """`store`, opened, and closed however the test ends."""
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def running_hub(
    store: Store | None = None,
    *,
    broker: Broker | None = None,
    clock: Callable[[], int] = wall_clock_ms,
    **settings: Any,
) -> AsyncIterator[Hub]:
    """A hub on `store` with `Settings(store="memory:", countdown_s=0, **settings)`, stopped
    however the test ends (stopping it again is harmless: a test may stop it itself).

    Whoever makes a store opens and closes it: with none given, the hub gets a memory store
    of its own, opened and closed here; a store given (a fixture's, one two nodes share, one
    in `opened`) is the caller's, open before and after. The hub is not started
    (`Hub.start`): the test ticks it itself."""
    async with contextlib.AsyncExitStack() as stack:
        if store is None:
            store = await stack.enter_async_context(opened(MemoryStore()))
        settings.setdefault("countdown_s", 0)
        hub = Hub(
            store,
            Settings(store="memory:", **settings),
            Metrics(),
            b"x" * 32,
            clock=clock,
            broker=broker,
        )
        stack.push_async_callback(hub.stop)
        yield hub


class RecordingSession(Session):
    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.sent: list[BaseModel] = []

    def send(self, message: BaseModel) -> None:
        self.sent.append(message)

    def close(self, code: CloseCode, reason: str) -> None:
        self.closed = True


class HeldSaves(MemoryStore):
    """The memory store, whose race saves can be held and fail: while `holding`, a save sets
    `held` and waits for `release`; then, while `failing`, it fails as the store being away
    (held or not)."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = False
        self.failing = False
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        if self.holding:
            self.held.set()
            await self.release.wait()
        if self.failing:
            raise StoreUnavailableError("the store is away")
        return await super().save_race_if(race, expected)


class HeldBroker(RedisBroker):
    """A node's Redis broker whose messages wait, in order, while `hold` is on (as they wait
    in the socket of a node that is frozen) and go to its subscriptions at `release`."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.waiting: list[tuple[str, bytes]] | None = None

    def hold(self) -> None:
        self.waiting = []

    def release(self) -> None:
        waiting, self.waiting = self.waiting or [], None
        for channel, data in waiting:
            super().fan_out(channel, data)

    def fan_out(self, channel: str, data: bytes) -> None:
        if self.waiting is not None:
            self.waiting.append((channel, data))
            return
        super().fan_out(channel, data)


@contextlib.asynccontextmanager
async def opened_broker(broker: RedisBroker) -> AsyncIterator[RedisBroker]:
    """`broker`, opened, and closed however the test ends."""
    await broker.open()
    try:
        yield broker
    finally:
        await broker.close()


@contextlib.asynccontextmanager
async def two_nodes(
    redis_url: str, broker_b: RedisBroker | None = None, **settings: Any
) -> AsyncIterator[tuple[Hub, Hub]]:
    """Two hubs (nodes A and B) on one Redis, each with its own store and broker (B's may be
    a `HeldBroker`), progress never folded by the clock unless `settings` say otherwise (as
    `running_hub`'s); all closed however the test ends."""
    settings.setdefault("progress_interval_s", 600)
    async with (
        opened(RedisStore(redis_url)) as store_a,
        opened(RedisStore(redis_url)) as store_b,
        opened_broker(RedisBroker(redis_url)) as broker_a,
        opened_broker(broker_b or RedisBroker(redis_url)) as opened_b,
        running_hub(store_a, broker=broker_a, **settings) as node_a,
        running_hub(store_b, broker=opened_b, **settings) as node_b,
    ):
        yield node_a, node_b


async def open_race_watched_on_b(
    node_a: Hub, node_b: Hub
) -> tuple[RaceId, RecordingSession, RecordingSession, RecordingSession]:
    """alice and bob say hello on node A, alice creates a 2-seat race there, and carol (no
    name) watches it on node B, which so holds a copy: the race id, alice, bob and carol."""
    alice, bob, carol = RecordingSession(1), RecordingSession(2), RecordingSession(3)
    await node_a.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
    await node_a.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
    await node_a.handle(alice, CreateRace(game="klondike", seats=2, time_limit_s=600))
    (race_id,) = node_a.races
    await node_b.handle(carol, Hello(protocol=PROTOCOL_VERSION))
    await node_b.handle(carol, Watch(race_id=race_id))
    return race_id, alice, bob, carol


async def start_race_of_two(
    hub: Hub,
    *,
    game: str = "klondike",
    game_number: str | None = "1002",
    time_limit_s: int = 600,
) -> tuple[RaceId, RecordingSession, RecordingSession]:
    """Two racers say hello, the first creates a 2-seat race, the second joins, the hub
    ticks (with no countdown, the race is running): the race id and the two sessions."""
    first, second = RecordingSession(1), RecordingSession(2)
    await hub.handle(first, Hello(protocol=PROTOCOL_VERSION, name="alice"))
    await hub.handle(second, Hello(protocol=PROTOCOL_VERSION, name="bob"))
    await hub.handle(
        first,
        CreateRace(game=game, seats=2, time_limit_s=time_limit_s, game_number=game_number),
    )
    (race_id,) = hub.races
    await hub.handle(second, JoinRace(race_id=race_id))
    await hub.tick()
    assert hub.races[race_id].boards, "the race did not start"
    return race_id, first, second


@contextlib.asynccontextmanager
async def ann_and_bob(
    store: MemoryStore | None = None, **settings: Any
) -> AsyncIterator[tuple[Hub, RecordingSession, RecordingSession]]:
    """A hub on a memory store (opened and closed here) with these settings, and ann and bob
    said hello."""
    async with (
        opened(store or MemoryStore()) as memory,
        running_hub(memory, **{"countdown_s": 3.0, **settings}) as hub,
    ):
        ann, bob = RecordingSession(1), RecordingSession(2)
        for session, name in ((ann, "ann"), (bob, "bob")):
            await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
        yield hub, ann, bob


def create(seats: int = 2) -> CreateRace:
    """A `create_race` of a casual klondike race with `seats` seats and a minute to play."""
    return CreateRace(game="klondike", seats=seats, time_limit_s=60)
