"""The broker contract on `memory:` and a real Redis: two nodes, ordered fan-out, gaps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis

from solrace.server import broker as broker_module
from solrace.server.broker import (
    Broker,
    BrokerError,
    BrokerUnavailableError,
    ChannelListener,
    MemoryBroker,
    RedisBroker,
    Subscription,
    open_broker,
)
from tests.redis_server import RedisServer
from tests.server.refusing_redis import refusing_broker
from tests.server.sessions import opened_broker
from tests.waiting import eventually_async

WAIT_S = 10.0


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def nodes(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Broker, Broker]]:
    """Two nodes' brokers: one shared object in memory, two connections to one Redis."""
    if request.param == "memory":
        shared = MemoryBroker()
        await shared.open()
        yield shared, shared
        await shared.close()
        return
    url: str = request.getfixturevalue("redis_url")
    node_a, node_b = open_broker(url), open_broker(url)
    await node_a.open()
    await node_b.open()
    yield node_a, node_b
    await node_a.close()
    await node_b.close()


async def drain(subscription: Subscription, count: int) -> list[bytes | None]:
    return [await subscription.get(WAIT_S) for _ in range(count)]


async def test_every_node_gets_every_message_in_order(nodes: tuple[Broker, Broker]) -> None:
    node_a, node_b = nodes
    on_a = await node_a.subscribe("race:r1")
    on_b = await node_b.subscribe("race:r1")
    sent = [f"event {i}".encode() for i in range(100)]
    for data in sent:
        await node_a.publish("race:r1", data)
    assert await drain(on_a, 100) == sent
    assert await drain(on_b, 100) == sent


async def test_channels_are_separate(nodes: tuple[Broker, Broker]) -> None:
    node_a, node_b = nodes
    first = await node_b.subscribe("race:r1")
    second = await node_b.subscribe("race:r2")
    await node_a.publish("race:r2", b"two")
    await node_a.publish("race:r1", b"one")
    assert await first.get(WAIT_S) == b"one"
    assert await second.get(WAIT_S) == b"two"


async def test_a_closed_subscription_ends_and_the_others_carry_on(
    nodes: tuple[Broker, Broker],
) -> None:
    node_a, node_b = nodes
    leaving = await node_b.subscribe("race:r1")
    staying = await node_b.subscribe("race:r1")
    await leaving.close()
    await node_a.publish("race:r1", b"after")
    assert await staying.get(WAIT_S) == b"after"
    assert [item async for item in leaving] == []
    await staying.close()
    again = await node_b.subscribe("race:r1")  # the channel can be taken up again
    await node_a.publish("race:r1", b"again")
    assert await again.get(WAIT_S) == b"again"


async def test_nothing_is_replayed_to_a_late_subscriber(nodes: tuple[Broker, Broker]) -> None:
    node_a, node_b = nodes
    early = await node_b.subscribe("race:r1")
    await node_a.publish("race:r1", b"before")
    assert await early.get(WAIT_S) == b"before"
    late = await node_b.subscribe("race:r1")
    await node_a.publish("race:r1", b"after")
    assert await late.get(WAIT_S) == b"after"
    assert await early.get(WAIT_S) == b"after"


async def test_a_slow_subscriber_gets_a_gap_and_slows_nobody(
    nodes: tuple[Broker, Broker],
) -> None:
    node_a, node_b = nodes
    assert isinstance(node_b, MemoryBroker | RedisBroker)
    node_b.max_queued = 4
    slow = await node_b.subscribe("race:r1")
    fast = await node_b.subscribe("race:r1")
    sent = [bytes([i]) for i in range(3)]
    for data in sent:
        await node_a.publish("race:r1", data)
    assert await drain(fast, 3) == sent
    for i in range(3, 12):
        await node_a.publish("race:r1", bytes([i]))
        assert await fast.get(WAIT_S) == bytes([i])  # the fast one keeps up, one by one
    first = await slow.get(WAIT_S)
    assert first is None  # "you missed some: reload from the store"
    assert slow.gaps >= 1


async def test_broker_close_ends_every_subscription(nodes: tuple[Broker, Broker]) -> None:
    _, node_b = nodes
    subscription = await node_b.subscribe("race:r1")
    await node_b.close()
    assert [item async for item in subscription] == []


async def test_an_ended_subscription_gives_what_is_queued_then_stops() -> None:
    broker = MemoryBroker()
    subscription = await broker.subscribe("race:r1")
    await broker.publish("race:r1", b"one")
    subscription.end()
    await broker.publish("race:r1", b"two")  # dropped
    assert [item async for item in subscription] == [b"one"]
    await broker.close()


async def test_a_listener_stops_though_its_handler_swallowed_the_cancellation(
    nodes: tuple[Broker, Broker],
) -> None:
    """A handler's store call may lose the cancellation of the listener's task (redis-py
    on Python 3.11 does, now and then): `stop` still ends the reading once the message is
    handled, instead of the reader waiting for the next message (a node's stop waited out
    its whole deadline on the tournaments' channel)."""
    node_a, node_b = nodes
    handling = asyncio.Event()
    handled: list[bytes | None] = []

    async def swallowing_receive(data: bytes | None) -> None:
        handled.append(data)
        handling.set()
        with contextlib.suppress(asyncio.CancelledError):  # as a Redis client may drop it
            await asyncio.Event().wait()

    listener = ChannelListener(node_b, "tournaments", swallowing_receive, logging.getLogger())
    await listener.start()
    await node_a.publish("tournaments", b"one")
    async with asyncio.timeout(WAIT_S):
        await handling.wait()
        await listener.stop()
    assert handled == [b"one"]


def test_unknown_broker_urls_are_refused() -> None:
    with pytest.raises(ValueError) as refused:
        open_broker("nats://localhost")
    assert str(refused.value) == (
        "unsupported broker URL 'nats://localhost'; accepted: memory:, "
        "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or unix://PATH (a Redis socket)"
    )


@pytest.mark.redis
async def test_a_redis_restart_gives_a_gap_then_live_messages(
    own_redis_server: RedisServer,
) -> None:
    node_a, node_b = RedisBroker(own_redis_server.url), RedisBroker(own_redis_server.url)
    await node_a.open()
    await node_b.open()
    try:
        subscription = await node_b.subscribe("race:r1")
        await node_a.publish("race:r1", b"before")
        assert await subscription.get(WAIT_S) == b"before"

        own_redis_server.stop()
        with pytest.raises(BrokerUnavailableError):
            await node_a.publish("race:r1", b"lost")
        own_redis_server.start()

        # Once node B is subscribed again it says so with a gap; what follows is live.
        assert await subscription.get(WAIT_S) is None
        await node_a.publish("race:r1", b"after")
        assert await subscription.get(WAIT_S) == b"after"
        assert node_b.reconnects >= 1
    finally:
        await node_a.close()
        await node_b.close()


# --- opening: the broker's own errors, never redis-py's ---------------------------------------


@pytest.mark.redis
async def test_opening_while_redis_is_away_is_unavailable_and_can_be_retried(
    own_redis_server: RedisServer,
) -> None:
    broker = RedisBroker(own_redis_server.url)
    own_redis_server.stop()
    with pytest.raises(BrokerUnavailableError, match="redis unreachable"):
        await broker.open()
    own_redis_server.start()
    await broker.open()  # the same object, after a failed open
    try:
        subscription = await broker.subscribe("race:r1")
        await broker.publish("race:r1", b"live")
        assert await subscription.get(WAIT_S) == b"live"
    finally:
        await broker.close()


@pytest.mark.redis
async def test_a_url_redis_refuses_or_that_does_not_parse_is_a_broker_error(
    redis_url: str,
) -> None:
    no_such_database = redis_url.rsplit("/", 1)[0] + "/99"
    for url, reason in [
        (no_such_database, "Redis refused the broker: DB index is out of range"),
        ("redis://127.0.0.1:notaport/0", "invalid Redis URL: Port could not be cast"),
    ]:
        with pytest.raises(BrokerError, match=reason) as refused:
            await RedisBroker(url).open()
        assert not isinstance(refused.value, BrokerUnavailableError)  # retrying won't help


async def test_a_node_that_stops_announcing_drops_out_after_its_ttl(
    nodes: tuple[Broker, Broker],
) -> None:
    node_a, node_b = nodes
    assert "a" in (await node_a.announce("a", 300)).alive
    assert (await node_b.announce("b", 60_000)).alive >= {"a", "b"}
    # "a" says nothing more: once its 300 ms are up (the broker's clock), it is gone.
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while "a" in (await node_b.announce("b", 60_000)).alive:
        assert asyncio.get_running_loop().time() < deadline, "a never dropped out"
        await asyncio.sleep(0.05)
    back = await node_a.announce("a", 300)  # and it is back once it speaks again
    assert "b" in back.alive
    assert not back.lost, "a's presence ran out: it was not lost"


async def test_a_node_that_withdraws_is_gone_at_once(nodes: tuple[Broker, Broker]) -> None:
    node_a, node_b = nodes
    await node_a.announce("a", 60_000)
    assert (await node_b.announce("b", 60_000)).alive >= {"a", "b"}
    await node_a.withdraw("a")  # stopping on purpose: no need to wait for its minute
    assert "a" not in (await node_b.announce("b", 60_000)).alive
    await node_a.withdraw("a")  # twice is harmless


@pytest.mark.redis
async def test_an_announce_says_its_presence_was_lost_by_a_redis_restarted_without_data(
    own_redis_server: RedisServer,
) -> None:
    """Redis restarts without its data (no AOF) between two announces: the next one goes
    through (the connection made again, with no error to tell) and says this node's presence,
    whose time was not up, was lost; the one after, not. The node's own presence that only
    ran out is not taken for lost."""
    async with (
        opened_broker(RedisBroker(own_redis_server.url)) as broker,
        opened_broker(RedisBroker(own_redis_server.url)) as other,
    ):
        assert not (await broker.announce("a", 60_000)).lost
        assert not (await broker.announce("a", 60_000)).lost
        own_redis_server.kill()
        shutil.rmtree(own_redis_server.folder / "appendonlydir")
        own_redis_server.start()
        after = await broker.announce("a", 60_000)
        assert after.lost and after.alive == {"a"}
        assert not (await broker.announce("a", 60_000)).lost

        await broker.announce("a", 50)

        async def ran_out() -> bool:
            return "a" not in (await other.announce("b", 60_000)).alive

        await eventually_async(ran_out, within=WAIT_S, what="a's presence to run out")
        assert not (await broker.announce("a", 60_000)).lost


async def test_each_node_alive_notes_its_secret_s_fingerprint_with_its_presence(
    nodes: tuple[Broker, Broker],
) -> None:
    """What a node starting reads to tell whether the nodes alive sign with its secret: the
    fingerprint each noted, kept while the node is alive and dropped once it withdraws."""
    node_a, node_b = nodes
    await node_a.announce("a", 60_000)
    assert await node_a.note_secret("a", "fa") == {"a": "fa"}
    await node_b.announce("b", 60_000)
    assert await node_b.note_secret("b", "fb") == {"a": "fa", "b": "fb"}
    assert await node_a.node_secrets() == {"a": "fa", "b": "fb"}
    await node_a.withdraw("a")
    assert await node_b.node_secrets() == {"b": "fb"}


@pytest.mark.redis
async def test_nodes_that_stop_leave_no_secret_behind(redis_url: str) -> None:
    """A node that withdraws (a clean stop) takes its secret's fingerprint out with its
    presence, in one step: once the last node has stopped, neither is left in Redis."""
    async with contextlib.AsyncExitStack() as stack:
        node_a, node_b = RedisBroker(redis_url), RedisBroker(redis_url)
        for broker in (node_a, node_b):
            await broker.open()
            stack.push_async_callback(broker.close)
        for node_id, broker in (("a", node_a), ("b", node_b)):
            await broker.announce(node_id, 60_000)
            await broker.note_secret(node_id, f"f{node_id}")
        with redis.Redis.from_url(redis_url, decode_responses=True) as admin:
            secrets_key = node_a.prefix + "node-secrets"
            assert admin.hgetall(secrets_key) == {"a": "fa", "b": "fb"}
            await node_a.withdraw("a")
            assert admin.hgetall(secrets_key) == {"b": "fb"}
            await node_b.withdraw("b")
            assert admin.exists(secrets_key, node_a.prefix + "nodes") == 0


@pytest.mark.redis
async def test_a_command_redis_refuses_is_a_broker_error_not_redis_s(redis_url: str) -> None:
    """Redis answering with an error (a user's NOPERM here, a replica's READONLY after a
    failover) is a `BrokerError` from every command, which callers catch (`publish` let
    redis-py's own error out, and a hello's connection closed 1011)."""
    async with refusing_broker(redis_url) as broker:
        calls: list[tuple[Callable[[], Awaitable[object]], str]] = [
            (lambda: broker.publish("claims", b"hi"), "message on claims not published: .*publish"),
            (lambda: broker.announce("a", 60_000), "node presence not announced: .*eval"),
            (lambda: broker.withdraw("a"), "node presence not withdrawn: .*eval"),
        ]
        for call, reason in calls:
            with pytest.raises(BrokerError, match=reason) as refused:
                await call()
            assert not isinstance(refused.value, BrokerUnavailableError)  # Redis is there


@pytest.mark.redis
async def test_a_command_redis_does_not_answer_is_unavailable_after_the_reply_timeout(
    own_redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung Redis (SIGSTOP: the connection open, no answer) fails each command once
    `REPLY_TIMEOUT_S` has passed, as an outage; none waits for good (a stopping node's
    publish did), and the broker closes."""
    monkeypatch.setattr(broker_module, "REPLY_TIMEOUT_S", 0.2)
    broker = RedisBroker(own_redis_server.url)
    await broker.open()
    subscription = await broker.subscribe("race:r1")
    try:
        with own_redis_server.frozen():
            calls: list[Callable[[], Awaitable[object]]] = [
                lambda: broker.publish("race:r1", b"hi"),
                lambda: broker.announce("a", 60_000),
                lambda: broker.withdraw("a"),
            ]
            for call in calls:
                with pytest.raises(BrokerUnavailableError, match=r"no answer in 0\.2 s"):
                    async with asyncio.timeout(WAIT_S):  # the test's guard, not the broker's
                        await call()
            async with asyncio.timeout(WAIT_S):
                await broker.close()
        assert subscription.closed
    finally:
        await broker.close()
