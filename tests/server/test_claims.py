"""Claims across nodes (server/claims.py): in the order every node reads them, a node's
connection of a player is replaced only by a claim read after its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel

from solrace.server.broker import Broker, MemoryBroker
from solrace.server.claims import Claim, ClaimRelay
from solrace.server.hub import Hub
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, Welcome
from solrace.server.session import Session
from solrace.server.store import MemoryStore
from tests.server.refusing_redis import refusing_broker
from tests.server.sessions import RecordingSession, opened, running_hub, start_race_of_two
from tests.waiting import eventually, eventually_async


class Node:
    """One node's relay over its player sessions, recording what the relay decided."""

    def __init__(self, node_id: str, broker: Broker | None = None) -> None:
        self.node_id = node_id
        self.sessions: dict[str, Session] = {}
        self.replaced: list[tuple[str, int]] = []
        self.confirmed: list[tuple[str, int]] = []
        self.relay = ClaimRelay(
            broker or MemoryBroker(), node_id, self.sessions.get, self._replace, self._confirm
        )

    async def _replace(self, player_id: PlayerId, session: Session, claim: Claim) -> None:
        self.replaced.append((player_id, session.session_id))
        del self.sessions[player_id]

    async def _confirm(self, player_id: PlayerId, session: Session) -> None:
        self.confirmed.append((player_id, session.session_id))

    def connect(self, player_id: str, session_id: int) -> Claim:
        self.sessions[player_id] = RecordingSession(session_id)
        return Claim(player_id=PlayerId(player_id), node=self.node_id, session=session_id)


async def read_all(nodes: list[Node], claims: list[Claim]) -> None:
    for node in nodes:
        for claim in claims:
            await node.relay.receive(claim)


async def test_the_claim_read_last_keeps_its_connection() -> None:
    a, b = Node("a"), Node("b")
    first, second = a.connect("p1", 1), b.connect("p1", 7)  # both connected at once
    await read_all([a, b], [first, second])
    assert a.replaced == [("p1", 1)] and "p1" not in a.sessions
    assert b.replaced == [] and b.confirmed == [("p1", 7)]


async def test_a_claim_read_before_one_s_own_replaces_nothing() -> None:
    a, b = Node("a"), Node("b")
    early = Claim(player_id=PlayerId("p1"), node="b", session=3)  # b's connection, since closed
    mine = a.connect("p1", 1)
    await read_all([a], [early, mine])
    assert a.replaced == [] and a.confirmed == [("p1", 1)]
    await a.relay.receive(b.connect("p1", 4))  # a later one does
    assert a.replaced == [("p1", 1)]


async def test_claims_of_the_same_node_and_of_closed_connections_are_left_alone() -> None:
    a = Node("a")
    old = a.connect("p1", 1)
    new = a.connect("p1", 2)  # the hub closed session 1 itself (4003 on one node)
    await read_all([a], [old, new, Claim(player_id=PlayerId("p2"), node="b", session=9)])
    assert a.replaced == [] and a.confirmed == [("p1", 2)]
    a.relay.forget(PlayerId("p1"))  # its connection closed: a later claim finds nothing confirmed
    await a.relay.receive(Claim(player_id=PlayerId("p1"), node="b", session=5))
    assert a.replaced == []


async def test_a_claim_that_does_not_read_is_ignored() -> None:
    assert Claim.decode(b"{not json") is None
    assert Claim.decode(b'{"player_id": "p1"}') is None
    claim = Claim(player_id=PlayerId("p1"), node="a", session=1)
    assert Claim.decode(claim.encode()) == claim


@pytest.mark.redis
async def test_a_claim_redis_refuses_is_logged_and_the_hello_goes_on(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis refusing the claim (NOPERM here, a replica's READONLY after a failover) leaves
    the connection open, as a lost claim does (the error escaped and closed it 1011)."""
    async with refusing_broker(redis_url) as broker:
        node = Node("a", broker)
        node.connect("p1", 1)
        with caplog.at_level(logging.WARNING, logger="solrace.server.claims"):
            await node.relay.claim(PlayerId("p1"), node.sessions["p1"])
    assert node.relay.announcing.failures == 1
    [said] = [r for r in caplog.records if "p1's connection not announced" in r.getMessage()]
    assert said.name == "solrace.server.claims"
    assert "p1's connection not announced: message on claims not published" in said.getMessage()


@contextlib.asynccontextmanager
async def two_nodes(
    store: MemoryStore, broker: Broker
) -> AsyncIterator[tuple[Hub, Hub, ClaimRelay]]:
    """Two hubs on one store and broker, their claim relays listening: both hubs and node
    A's relay."""
    async with (
        opened(store),
        running_hub(store, broker=broker) as node_a,
        running_hub(store, broker=broker) as node_b,
    ):
        claims_a, claims_b = node_a.sessions.claims, node_b.sessions.claims
        assert claims_a is not None and claims_b is not None
        for relay in (claims_a, claims_b):
            await relay.start()
        yield node_a, node_b, claims_a


async def test_a_replaced_connection_hands_its_races_to_the_later_one() -> None:
    """Node A's hold of alice's race is stored after node B's (A was slow): when A reads
    B's later claim it hands the race to B's connection, whose close then marks her away."""
    store = MemoryStore()
    async with two_nodes(store, MemoryBroker()) as (node_a, node_b, claims_a):
        race_id, alice, _ = await start_race_of_two(node_a)
        welcome = next(m for m in alice.sent if isinstance(m, Welcome))
        gate = asyncio.Event()
        hold = claims_a.confirmed

        async def slow_hold(player_id: PlayerId, session: Session) -> None:
            if session.session_id == 11:  # A's second connection: held once B's is stored
                await gate.wait()
                await node_a.keeper.refresh(node_a.races[race_id])
            await hold(player_id, session)

        claims_a.confirmed = slow_hold
        on_a, on_b = RecordingSession(11), RecordingSession(21)
        await node_a.handle(on_a, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))
        await node_b.handle(on_b, Hello(protocol=PROTOCOL_VERSION, token=welcome.token))

        async def holder() -> tuple[str | None, bool]:
            record = await store.get_race(race_id)
            assert record is not None
            racer = next(r for r in record.racers if r.player_id == welcome.player_id)
            return racer.holder, racer.connected

        held = (node_b.holder_of(on_b), True)

        async def held_by_b() -> bool:
            return await holder() == held

        await eventually_async(held_by_b, what="B's connection to hold the race")
        gate.set()
        await eventually(lambda: on_a.closed, what="A's connection to be replaced")
        # A's late hold named its (closed) connection; the hand-over gave the race back to B.
        await eventually_async(held_by_b, what="the race handed over to B's connection")
        await node_b.disconnected(on_b)
        assert (await holder()) == (node_b.holder_of(on_b), False)  # away: the grace runs


class HeldPublish(MemoryBroker):
    """A broker whose claims reach every node at once, but whose publish returns to the
    publisher only once `release` is set, while `holding`."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = False
        self.release = asyncio.Event()

    async def publish(self, channel: str, data: bytes) -> None:
        await super().publish(channel, data)
        if self.holding:
            await self.release.wait()


class OrderedSession(RecordingSession):
    """Records its welcome and its close in the order they came."""

    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.order: list[str] = []

    def send(self, message: BaseModel) -> None:
        super().send(message)
        if isinstance(message, Welcome):
            self.order.append("welcome")

    def close(self, code: CloseCode, reason: str) -> None:
        super().close(code, reason)
        self.order.append(f"close {code.value}")


async def test_a_connection_replaced_before_its_welcome_gets_it_then_closes() -> None:
    """Two hellos of one player on two nodes at once: B's claim came back to node A while A
    still waited for Redis to take its own, and A's connection closed (4003) before its
    welcome, so its client never learnt who it was (the CI's flaky two-hellos test)."""
    store, broker = MemoryStore(), HeldPublish()
    async with two_nodes(store, broker) as (node_a, node_b, claims_a):
        first = RecordingSession(1)
        await node_a.handle(first, Hello(protocol=PROTOCOL_VERSION, name="alice"))
        token = next(m for m in first.sent if isinstance(m, Welcome)).token
        on_a, on_b = OrderedSession(11), OrderedSession(21)
        broker.holding = True
        hello_a = asyncio.create_task(
            node_a.handle(on_a, Hello(protocol=PROTOCOL_VERSION, token=token))
        )
        alice = PlayerId(first.player_id or "")
        await eventually(lambda: claims_a._confirmed.get(alice) == 11, what="A's claim back")
        broker.holding = False
        await node_b.handle(on_b, Hello(protocol=PROTOCOL_VERSION, token=token))
        await eventually(lambda: node_a.claimant_of(alice) is None, what="A's one replaced")
        assert on_a.order == []  # not closed before its welcome
        broker.release.set()
        await hello_a
        assert on_a.order == ["welcome", f"close {CloseCode.REPLACED.value}"]
        assert on_b.order == ["welcome"]
