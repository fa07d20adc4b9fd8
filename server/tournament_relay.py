"""Tournaments on several nodes: after each change it saves, a node publishes a small notice
on the broker (channel `tournaments`: the tournament id, its new version, the node and the
`tournament_race` notices of the races it opened); every other node reads them, pushes the
reloaded view to its own watchers of that tournament and hands each `tournament_race` to the
seated players connected to it.

One channel for every tournament, not one per tournament: a node must hear about a race for a
player connected to it without knowing which tournaments that player is in, and a tournament
changes a few times a minute at most. The broker delivers at most once: a gap (`None`) makes
the node push the stored view to every watcher it has, and a player who missed a notice still
finds the race in `welcome.active_races` and in the pushed view's live matches."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pydantic import Field

from solrace.server.broker import Broker, BrokerError, ChannelListener, Notice
from solrace.server.protocol.tournament_messages import TournamentRace

log = logging.getLogger("solrace.server.tournament_relay")

CHANNEL = "tournaments"


class ChangeNotice(Notice):
    """A tournament moved on (saved as `version` by `node`), maybe opening races."""

    tournament_id: str
    version: int
    node: str
    races: list[TournamentRace] = Field(default_factory=list)


Receiver = Callable[[ChangeNotice | None], Awaitable[None]]


class TournamentRelay:
    """This node's end of the `tournaments` channel."""

    def __init__(self, broker: Broker, node_id: str, receive: Receiver) -> None:
        self.broker = broker
        self.node_id = node_id
        self.receive = receive
        self._listener = ChannelListener(broker, CHANNEL, self._handle, log)

    async def start(self) -> None:
        await self._listener.start()

    async def stop(self) -> None:
        await self._listener.stop()

    async def publish(self, tournament_id: str, version: int, races: list[TournamentRace]) -> None:
        notice = ChangeNotice(
            tournament_id=tournament_id, version=version, node=self.node_id, races=races
        )
        try:
            await self.broker.publish(CHANNEL, notice.encode())
        except BrokerError as exc:  # other nodes catch up on their next change
            log.warning("tournament %s: change not announced: %s", tournament_id, exc)

    async def _handle(self, data: bytes | None) -> None:
        """Another node's notice, or a gap (`None`: some may be lost, or one did not read);
        this node's own are not handed on."""
        notice = None if data is None else ChangeNotice.decode(data)
        if notice is not None and notice.node == self.node_id:
            return
        await self.receive(notice)


__all__ = ["CHANNEL", "ChangeNotice", "TournamentRelay"]
