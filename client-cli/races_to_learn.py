"""Which races to sync because their news came before the race itself.

The server sends a racer's new connection the news of a race it is out of but still seated in
(a race resigned, or left as gone: not in `welcome.active_races`) from then on, never the race
itself. A `sync` of that race answers with its snapshot: its game, racers and status (a held
deal's check names the game).
"""

from __future__ import annotations

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    Error,
    Progress,
    RaceFinished,
    RaceStarted,
    ServerMessage,
)

from .state import ClientState


class RacesToLearn:
    """One `sync` per race whose news the state has no description of; sent again only after
    the link came back (`reconnected`: a sync sent just before a drop may have gone unanswered)
    or after the server answered that sync `unavailable` (its store was away)."""

    def __init__(self) -> None:
        #: Races synced for their news, their snapshot not yet known to be lost.
        self._synced: set[RaceId] = set()

    def reconnected(self) -> None:
        self._synced.clear()

    def due(self, message: ServerMessage, state: ClientState) -> RaceId | None:
        """The race of `message` to sync now that `state` has folded it in, if any: news of a
        race (a start, a progress, a finish) the state has no description of, not synced
        for that since the link came up."""
        if isinstance(message, Error):
            if (
                message.request == "sync"
                and message.race_id is not None
                and message.code == ErrorCode.UNAVAILABLE.value
            ):
                self._synced.discard(message.race_id)  # the next news asks again
            return None
        if not isinstance(message, RaceStarted | Progress | RaceFinished):
            return None
        race = state.races.get(message.race_id)
        if race is None or race.info is not None or message.race_id in self._synced:
            return None
        self._synced.add(message.race_id)
        return message.race_id


__all__ = ["RacesToLearn"]
