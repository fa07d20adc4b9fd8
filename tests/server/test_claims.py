"""Claims across nodes (server/claims.py): in the order every node reads them, a node's
connection of a player is replaced only by a claim read after its own."""

from __future__ import annotations

from solrace.server.broker import MemoryBroker
from solrace.server.claims import Claim, ClaimRelay
from solrace.server.session import Session
from tests.server.sessions import RecordingSession


class Node:
    """One node's relay over its player sessions, recording what the relay decided."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.sessions: dict[str, Session] = {}
        self.replaced: list[tuple[str, int]] = []
        self.confirmed: list[tuple[str, int]] = []
        self.relay = ClaimRelay(
            MemoryBroker(), node_id, self.sessions.get, self._replace, self._confirm
        )

    def _replace(self, player_id: str, session: Session) -> None:
        self.replaced.append((player_id, session.session_id))
        del self.sessions[player_id]

    async def _confirm(self, player_id: str, session: Session) -> None:
        self.confirmed.append((player_id, session.session_id))

    def connect(self, player_id: str, session_id: int) -> Claim:
        self.sessions[player_id] = RecordingSession(session_id)
        return Claim(player_id=player_id, node=self.node_id, session=session_id)


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
    early = Claim(player_id="p1", node="b", session=3)  # b's connection, since closed
    mine = a.connect("p1", 1)
    await read_all([a], [early, mine])
    assert a.replaced == [] and a.confirmed == [("p1", 1)]
    await a.relay.receive(b.connect("p1", 4))  # a later one does
    assert a.replaced == [("p1", 1)]


async def test_claims_of_the_same_node_and_of_closed_connections_are_left_alone() -> None:
    a = Node("a")
    old = a.connect("p1", 1)
    new = a.connect("p1", 2)  # the hub closed session 1 itself (4003 on one node)
    await read_all([a], [old, new, Claim(player_id="p2", node="b", session=9)])
    assert a.replaced == [] and a.confirmed == [("p1", 2)]
    a.relay.forget("p1")  # its connection closed: a later claim finds nothing confirmed
    await a.relay.receive(Claim(player_id="p1", node="b", session=5))
    assert a.replaced == []


async def test_a_claim_that_does_not_read_is_ignored() -> None:
    assert Claim.decode(b"{not json") is None
    assert Claim.decode(b'{"player_id": "p1"}') is None
    claim = Claim(player_id="p1", node="a", session=1)
    assert Claim.decode(claim.encode()) == claim
