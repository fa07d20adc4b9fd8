"""Held deals of tournament races, checked once their round ends (plain and Textual clients).

Every race of a tournament round uses the same secret deal, so a finished tournament race's
`race_finished` carries no game number or salt while other matches of the round still race
(`RaceState.deal_held`). Once the tournament view the server pushes shows the round ended, the
deal is released: the race's replay has the number and salt, and the state folds it in
(`RaceState.release_deal`), checking it against the commitment received at the race's start.

`due_races` says which races are ready (pure); `HeldDeals` fetches and checks them for one
session, each race once at a time (a failed fetch is tried again on the next call to `claim`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.tournament_messages import TournamentModel

from .session import RequestError, Session
from .state import ClientState, RaceState


def round_has_ended(view: TournamentModel, round_number: int) -> bool:
    return any(r.number == round_number and r.is_ended for r in view.rounds)


def due_races(state: ClientState, tournament_id: str | None = None) -> list[RaceId]:
    """The player's tournament races (from their `tournament_race` notices, or for a race
    resumed from `welcome.active_races`, the view's live matches: `ClientState.tournament_race`)
    whose deal is still held although the latest view of their tournament shows their round
    ended."""
    due: list[RaceId] = []
    for race_id, notice in state.my_tournament_races().items():
        if tournament_id is not None and notice.tournament_id != tournament_id:
            continue
        if state.player_id not in notice.players:
            continue
        race = state.races.get(race_id)
        view = state.tournaments.get(notice.tournament_id)
        if race is None or not race.deal_held or view is None:
            continue
        if round_has_ended(view, notice.round):
            due.append(race_id)
    return due


def deal_line(race: RaceState) -> str:
    """The check of a revealed (or released) deal, as one line of the plain modes."""
    verdict = "verified" if race.commitment_ok else "MISMATCH: the deal was not the one"
    return f"deal {race.game} {race.game_number}: commitment {verdict}"


def race_label(state: ClientState, race_id: RaceId) -> str:
    """`round 1, match W1-1, race 2 (RACE)`: which race of the tournament a check is of (from
    its `tournament_race` notice or the view's live match), or the race id alone."""
    notice = state.tournament_race(race_id)
    if notice is None:
        return f"race {race_id}"
    return f"round {notice.round}, match {notice.match_id}, race {notice.race_number} ({race_id})"


@dataclass(frozen=True, slots=True)
class DealCheck:
    """A held deal's check: `ok` is None when the replay could not be fetched."""

    race_id: RaceId
    ok: bool | None
    text: str


@dataclass(slots=True)
class HeldDeals:
    """Checks one session's held deals once their rounds end."""

    session: Session
    #: Races whose replay is being fetched.
    checking: set[RaceId] = field(default_factory=set)
    #: Why the latest fetch of a race's replay failed (cleared by a check that succeeds).
    failures: dict[RaceId, str] = field(default_factory=dict)

    def claim(self, tournament_id: str | None = None) -> list[RaceId]:
        """The races due for a check that no check is fetching yet; they now are: the caller
        runs `check` on each (call this on every tournament view and race finish)."""
        fresh = [r for r in due_races(self.session.state, tournament_id) if r not in self.checking]
        self.checking.update(fresh)
        return fresh

    async def check(self, race_id: RaceId) -> DealCheck:
        """Fetch the race's replay (the state releases and checks its deal) and say the result."""
        try:
            await self.session.get_replay(race_id)
        except (RequestError, TimeoutError, ConnectionError) as exc:
            reason = str(exc) or "no answer from the server"
            self.failures[race_id] = reason
            return DealCheck(race_id, None, f"deal of {race_id} not checked: {reason}")
        finally:
            self.checking.discard(race_id)
        self.failures.pop(race_id, None)
        race = self.session.state.races[race_id]
        return DealCheck(race_id, race.commitment_ok is True, deal_line(race))


__all__ = [
    "DealCheck",
    "HeldDeals",
    "deal_line",
    "due_races",
    "race_label",
    "round_has_ended",
]
