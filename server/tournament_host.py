"""What the tournament service needs from the races of its node (`RaceHost`), and the hub
giving it (`HubRaceHost`).

The service runs tournaments; the races they request are the hub's, held and changed by its
race keeper. `RaceHost` names each thing the service asks of that side, so the service
depends on those alone (and a smaller host may stand in for the hub); `HubRaceHost` answers
them from the hub's parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from solrace.server.broker import Broker
from solrace.server.hub import Hub
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import RaceRecord
from solrace.server.race_changes import Change, connected_through
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store


class RaceHost(Protocol):
    """The races of this node as the tournament service uses them."""

    @property
    def store(self) -> Store:
        """Where the races are kept (the tournaments too)."""
        ...

    @property
    def settings(self) -> Settings: ...

    @property
    def node_id(self) -> str: ...

    @property
    def broker(self) -> Broker | None:
        """Several nodes: the broker linking them; None on a single node."""
        ...

    def clock(self) -> int:
        """The server clock (ms), as the races read it."""
        ...

    def session_of(self, player: PlayerId) -> Session | None:
        """The player's session on this node, once its hello is through; None if they are
        not connected here."""
        ...

    def held_race(self, race_id: RaceId) -> RaceRuntime | None:
        """This node's copy of the race if it holds one in memory (nothing is loaded)."""
        ...

    async def load_race(self, race_id: RaceId) -> RaceRuntime | None:
        """This node's copy of the race, loaded from the store if need be; None if there is
        none."""
        ...

    async def open_seated_race(
        self, record: RaceRecord, seated: Sequence[tuple[PlayerId, str]]
    ) -> None:
        """Open `record`'s race with every (player id, name) seated (`Hub.open_seated_race`);
        an existing race id is left alone."""
        ...

    async def apply_to_race(self, runtime: RaceRuntime, change: Change) -> None:
        """Apply `change` to the race, store it and deliver its events (`RaceError` or
        `StoreError` if refused)."""
        ...

    async def mark_connected_here(
        self, runtime: RaceRuntime, here: Sequence[tuple[PlayerId, Session]]
    ) -> None:
        """Each (racer, session) connected here is caught up on the race's events and marked
        connected in it through this node, as a hello would, if `session` is still open and
        the player's connection here when the change is applied; a refusal is logged."""
        ...

    def release_deal(self, race_id: RaceId) -> None:
        """The race's deal was released in the store: this node's copy knows it too, and
        its spectators get the boards held back until now."""
        ...

    async def take_releases(self, tournament_id: str | None) -> None:
        """Several nodes: another node may have released deals of the races of tournament
        `tournament_id` (None: of any tournament) held here; their spectators get the final
        boards now."""
        ...

    def on_nodes_gone(self, hook: Callable[[], None]) -> None:
        """Several nodes: call `hook` each time this node finds other nodes gone (killed or
        cut off); on a single node, never."""
        ...


class HubRaceHost:
    """`RaceHost` from a hub: its race keeper, its players, its spectators' catching up; and
    `broker`, the one the hub was made with (None on a single node)."""

    def __init__(self, hub: Hub, broker: Broker | None) -> None:
        self.hub = hub
        self._broker = broker

    @property
    def store(self) -> Store:
        return self.hub.store

    @property
    def settings(self) -> Settings:
        return self.hub.settings

    @property
    def node_id(self) -> str:
        return self.hub.node_id

    @property
    def broker(self) -> Broker | None:
        return self._broker

    def clock(self) -> int:
        return self.hub.clock()  # read at each call: tests set the hub's clock

    def session_of(self, player: PlayerId) -> Session | None:
        return self.hub.players.get(player)

    def held_race(self, race_id: RaceId) -> RaceRuntime | None:
        return self.hub.keeper.races.get(race_id)

    async def load_race(self, race_id: RaceId) -> RaceRuntime | None:
        return await self.hub.keeper.load_race(race_id)

    async def open_seated_race(
        self, record: RaceRecord, seated: Sequence[tuple[PlayerId, str]]
    ) -> None:
        await self.hub.open_seated_race(record, seated)

    async def apply_to_race(self, runtime: RaceRuntime, change: Change) -> None:
        await self.hub.keeper.apply_to_race(runtime, change)

    async def mark_connected_here(
        self, runtime: RaceRuntime, here: Sequence[tuple[PlayerId, Session]]
    ) -> None:
        now = self.hub.clock()
        for player, session in here:
            self.hub.watching.catch_up(session, runtime)  # it may have started meanwhile
            holder = self.hub.holder_of(session)
            change = connected_through(player, session, holder, now, self.hub.players)
            await self.hub.keeper.apply_or_log(runtime, change, player, "marked here", away=False)

    def release_deal(self, race_id: RaceId) -> None:
        self.hub.keeper.release_deal(race_id)

    async def take_releases(self, tournament_id: str | None) -> None:
        await self.hub.keeper.take_releases(tournament_id)

    def on_nodes_gone(self, hook: Callable[[], None]) -> None:
        if self.hub.presence is not None:
            self.hub.presence.gone_hooks.append(hook)
