"""Several nodes: one connection per player across them.

On one node a player's later hello closes the earlier connection with 4003
(`PlayerSessions.claimant_of`). Across nodes, each node announces every hello that identifies a
player (by token or by name) on the broker (channel `claims`: the player, the node, the
session). Redis hands a channel's messages to every subscriber in the order it took them, so
every node agrees which of two claims came last. A node closes its connection of a player (4003)
when another connection's claim comes after that connection's own: it must have seen its own
claim come back first. If the other claim comes first, the other connection is the earlier one
and its own node closes it.

The broker delivers at most once: a claim it loses (Redis down, or refusing it) leaves both
connections open, as before there were claims; the race's holder (the connection last marked
connected) still decides whose close marks the racer away.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from solrace.server.broker import Broker, BrokerError, ChannelListener, Notice
from solrace.server.outage import Outage
from solrace.server.protocol.ids import PlayerId
from solrace.server.session import Session

log = logging.getLogger("solrace.server.claims")

CHANNEL = "claims"


class Claim(Notice):
    """`session` of `node` speaks for `player_id` from now on."""

    player_id: PlayerId
    node: str
    session: int


class ClaimRelay:
    """This node's end of the `claims` channel: `claimant(player)` is this node's latest
    connection of the player (or None); `replaced(player, session, claim)` closes it,
    `claim` (another node's) being later; `confirmed(player, session)` is told when it is the
    latest so far (its races name it as their holder). Both are awaited in the order of the
    claims: a node's races are handed over after it held them, never before."""

    def __init__(
        self,
        broker: Broker,
        node_id: str,
        claimant: Callable[[PlayerId], Session | None],
        replaced: Callable[[PlayerId, Session, Claim], Awaitable[None]],
        confirmed: Callable[[PlayerId, Session], Awaitable[None]],
    ) -> None:
        self.broker = broker
        self.node_id = node_id
        self.claimant = claimant
        self.replaced = replaced
        self.confirmed = confirmed
        #: Player -> the session of this node whose claim came back through the channel:
        #: a claim of the player read after that one is later, and replaces it.
        self._confirmed: dict[PlayerId, int] = {}
        self._listener = ChannelListener(broker, CHANNEL, self._handle, log)
        self.announcing = Outage(log, "announcing connections to the other nodes")

    async def start(self) -> None:
        await self._listener.start()

    async def stop(self) -> None:
        await self._listener.stop()

    async def claim(self, player_id: PlayerId, session: Session) -> None:
        """Announce that `session`, of this node, now speaks for `player_id`."""
        claim = Claim(player_id=player_id, node=self.node_id, session=session.session_id)
        try:
            await self.broker.publish(CHANNEL, claim.encode())
        except BrokerError as exc:
            self.announcing.failed(f"{player_id}'s connection not announced: {exc}")
        else:
            self.announcing.worked()

    def forget(self, player_id: PlayerId) -> None:
        """This node's connection of `player_id` closed: nothing is kept for it."""
        self._confirmed.pop(player_id, None)

    async def _handle(self, data: bytes | None) -> None:
        claim = None if data is None else Claim.decode(data)
        if claim is not None:  # a gap: the claims lost are lost (see the module)
            await self.receive(claim)

    async def receive(self, claim: Claim) -> None:
        """A claim read from the channel, in the order every node reads them."""
        player_id = claim.player_id
        local = self.claimant(player_id)
        if local is None:
            return
        if claim.node == self.node_id:
            # Two connections of one node settle it there (`PlayerSessions.claimant_of`): only
            # ours counts.
            if claim.session == local.session_id:
                self._confirmed[player_id] = local.session_id  # it came back: later ones win
                await self.confirmed(player_id, local)
        elif self._confirmed.get(player_id) == local.session_id:
            del self._confirmed[player_id]
            await self.replaced(player_id, local, claim)


__all__ = ["CHANNEL", "Claim", "ClaimRelay"]
