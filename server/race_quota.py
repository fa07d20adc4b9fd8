"""How many races a player, and the server, may have: the quotas a new race and a new seat are
checked against (settings `max_live_races`, `max_open_races`, `max_open_races_per_player`,
`max_live_races_per_player`).

Every count is of the races this node holds (`RaceKeeper.races`) plus the races being created
and the seats being taken through it, counted in memory: a flood of refused creates reads
nothing from the store. A slot is checked and taken in one step (no await between them) and
held until the change is stored (`reserve`, `reserve_seat`), so that requests of one player
that overlap on this node (two connections, or a replaced connection's last request) cannot
pass a quota by one; on several nodes, each node counts its own (see docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import RaceStatus
from solrace.server.race_sync import RaceKeeper
from solrace.server.settings import Settings


class RaceQuota:
    """The race quotas of one node, over the races its `keeper` holds."""

    def __init__(self, keeper: RaceKeeper, settings: Settings) -> None:
        self.keeper = keeper
        self.settings = settings
        #: Races being created (stored, not yet held), per player: counted as open and live.
        self._creating: dict[PlayerId, int] = {}
        #: The races a player is taking a seat in (a join past its check, not yet through),
        #: one entry per join: each race counted as a live race of the player's, once.
        self._joining: dict[PlayerId, list[RaceId]] = {}

    @contextmanager
    def reserve(self, player_id: PlayerId) -> Iterator[None]:
        """A slot for one race `player_id` creates, held while the block stores it: refused
        (`RaceError(NOT_ALLOWED)`) past the quotas, and counted meanwhile as an open and a
        live race of the player's, so that creates stored at the same time cannot all pass."""
        self._check_room_for(player_id)
        with _counted(self._creating, player_id):
            yield

    @contextmanager
    def reserve_seat(self, player_id: PlayerId, race_id: RaceId) -> Iterator[None]:
        """A slot for the seat `player_id` takes in `race_id`, held while the block stores the
        join: refused (`RaceError(NOT_ALLOWED)`) past the live races the player may race in
        (`check_races_of`), and counted meanwhile as one of them, so that joins (or a join and
        a create) of one player stored at the same time cannot all pass."""
        self.check_races_of(player_id)
        joining = self._joining.setdefault(player_id, [])
        joining.append(race_id)
        try:
            yield
        finally:
            joining.remove(race_id)
            if not joining:
                del self._joining[player_id]

    def _check_room_for(self, player_id: PlayerId) -> None:
        """Refuse a new race past the live races the server may hold (`max_live_races`), the
        live races the player may race in (`check_races_of`), and the open races one player,
        or the server, may have: the open races this node holds (several nodes: a limit per
        node; a race is held by the node that created it), with the creates still being
        stored. The server's count leaves out open races nobody is connected to (their
        creator went away: they are dropped after the grace), so creating and leaving does
        not fill the lobby for others; a player's counts the races they created, whoever sits
        in them now."""
        races = self.keeper.races
        creating = sum(self._creating.values())
        # Several nodes: the races created through this node (a node that started again holds
        # every live race it recovered, the other nodes' too); one node: every live race.
        cluster = self.keeper.is_cluster
        live = creating + sum(
            1
            for rt in races.values()
            if rt.race.is_live and (rt.created_by is not None or not cluster)
        )
        if live >= self.settings.max_live_races:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                f"the server is full ({live} live races): try again later",
            )
        self.check_races_of(player_id)
        open_races = [rt for rt in races.values() if rt.race.status is RaceStatus.OPEN]
        held = sum(1 for rt in open_races if any(r.connected for r in rt.race.racers.values()))
        held += creating
        if held >= self.settings.max_open_races:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                f"the lobby is full ({held} open races): join one or try again later",
            )
        mine = self._creating.get(player_id, 0) + sum(
            1 for rt in open_races if (rt.created_by or rt.race.creator) == player_id
        )
        if mine >= self.settings.max_open_races_per_player:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                f"you have {mine} open races already: start or leave one first",
            )

    def check_races_of(self, player_id: PlayerId) -> None:
        """Refuse a player one more race (a new one, or a seat) past the live races they may
        race in at once (a casual race may be started by its creator alone: without this, one
        player could keep thousands running)."""
        mine = self._creating.get(player_id, 0)
        seated: set[RaceId] = set()
        for race_id, runtime in self.keeper.races.items():
            racer = runtime.race.racers.get(player_id)
            if racer is not None and runtime.race.is_live and not racer.is_done:
                seated.add(race_id)
        # A seat being taken counts once, and not again once the join has seated the player.
        mine += len(seated | set(self._joining.get(player_id, ())))
        if mine >= self.settings.max_live_races_per_player:
            raise RaceError(
                ErrorCode.NOT_ALLOWED,
                f"you are in {mine} live races already: finish or leave one first",
            )


@contextmanager
def _counted(counts: dict[PlayerId, int], player_id: PlayerId) -> Iterator[None]:
    """One more for `player_id` in `counts` while the block runs (a key at 0 is dropped)."""
    counts[player_id] = counts.get(player_id, 0) + 1
    try:
        yield
    finally:
        counts[player_id] -= 1
        if not counts[player_id]:
            del counts[player_id]


__all__ = ["RaceQuota"]
