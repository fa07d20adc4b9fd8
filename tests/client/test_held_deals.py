"""A tournament race's held deal: which races are due for a check once their round ends, and
the released deal checked against the commitment received at the start (the reducer folds the
fetched replay in). The plain and Textual clients share this (`held_deals.py`); the end-to-end
runs are in `test_tournament_play.py`."""

from __future__ import annotations

from solrace.client.held_deals import deal_line, due_races, race_label
from solrace.client.state import ClientState
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import RaceFinished, Replay, ReplayModel
from solrace.server.protocol.tournament_messages import (
    LiveMatchModel,
    RoundModel,
    TournamentModel,
    TournamentRace,
    TournamentView,
)

from .test_state import GAME, NUMBER, RACE, SALT, finished, started, welcome

TID = "t1"


def held(state: ClientState) -> None:
    """Alice's tournament race r1 (round 1) started, then finished with its deal held."""
    state.apply(welcome())
    state.apply(
        TournamentRace(
            tournament_id=TID,
            match_id="W1-1",
            round=1,
            race_number=1,
            race_id=RACE,
            players=[PlayerId("pa"), PlayerId("pb")],
        )
    )
    started(state)
    state.apply(held_finish(version=9))


def held_finish(version: int) -> RaceFinished:
    """`race_finished` of a tournament race: no game number or salt (the deal is held)."""
    ending = finished(commit(GAME, NUMBER, SALT))
    return ending.model_copy(update={"version": version, "game_number": None, "salt": None})


def view(version: int, *, ended: bool, live: list[LiveMatchModel] | None = None) -> TournamentView:
    rounds = [
        RoundModel(
            number=1,
            byes=[],
            matches=[],
            is_ended=ended,
            game_numbers={"1": NUMBER} if ended else {},
        )
    ]
    return TournamentView(
        tournament=TournamentModel(
            tournament_id=TID,
            version=version,
            name="cup",
            game=GAME,
            format="single_elimination",
            best_of=1,
            rated=False,
            time_limit_s=60,
            check_in_required=False,
            phase="running",
            paused=False,
            admin=PlayerId("director"),
            players=[],
            checked_in=[],
            seeds=[],
            dropped=[],
            rounds=rounds,
            standings=[],
            bracket=[],
            live=live or [],
            champion=None,
            audit=[],
        )
    )


def replay(*, salt: str = SALT, commitment: str | None = None) -> Replay:
    return Replay(
        replay=ReplayModel(
            race_id=RACE,
            game=GAME,
            game_number=NUMBER,
            salt=salt,
            commitment=commitment or commit(GAME, NUMBER, salt),
            rated=False,
            time_limit_s=60,
            started_at_ms=10_000,
            ends_at_ms=70_000,
            finished_at_ms=20_000,
            racers=[],
            results=[],
        )
    )


def test_a_held_deal_is_due_once_the_view_shows_its_round_ended() -> None:
    state = ClientState()
    held(state)
    race = state.races[RACE]
    assert race.deal_held and race.commitment_ok is None and race.game_number is None
    assert due_races(state) == []  # no view yet
    state.apply(view(1, ended=False))
    assert due_races(state) == []  # another match of the round races on
    state.apply(view(2, ended=True))
    assert due_races(state) == due_races(state, TID) == [RACE]
    assert due_races(state, "t2") == []

    state.apply(replay())
    assert not race.deal_held and race.commitment_ok is True
    assert (race.game_number, race.salt) == (NUMBER, SALT)
    assert deal_line(race) == f"deal {GAME} {NUMBER}: commitment verified"
    assert due_races(state) == []
    # A later message that still says the deal is held does not undo the check.
    state.apply(held_finish(version=10))
    assert not race.deal_held and race.commitment_ok is True and race.game_number == NUMBER


def test_a_released_deal_that_does_not_match_the_start_commitment_is_flagged() -> None:
    # The replay is self-consistent (its own commitment matches its number and salt), but the
    # commitment received at the race's start was another one.
    state = ClientState()
    held(state)
    state.apply(view(2, ended=True))
    state.apply(replay(salt="other"))
    race = state.races[RACE]
    assert not race.deal_held and race.commitment_ok is False
    assert "MISMATCH" in deal_line(race)


def test_a_race_someone_else_was_seated_in_is_not_checked() -> None:
    state = ClientState()
    held(state)
    notice = state.tournament_races[RACE]
    state.tournament_races[RACE] = notice.model_copy(update={"players": ["pb", "pc"]})
    state.apply(view(2, ended=True))
    assert due_races(state) == []


def test_a_race_resumed_from_the_welcome_is_due_from_the_view_that_listed_it_live() -> None:
    """No `tournament_race` notice (the client connected after the race had started): the
    view's live match, while the race runs, says its round; the view that ends the round no
    longer lists it."""
    state = ClientState()
    state.apply(welcome())
    live = LiveMatchModel(
        match_id="W1-1", round=1, race_number=1, race_id=RACE, players=[PlayerId("pa")]
    )
    others = live.model_copy(update={"race_id": RaceId("r9"), "players": [PlayerId("pb")]})
    state.apply(view(1, ended=False, live=[live, others]))
    started(state)
    state.apply(held_finish(version=9))
    assert state.races[RACE].deal_held and state.tournament_races == {}
    assert due_races(state) == []
    state.apply(view(2, ended=True))
    assert due_races(state, TID) == [RACE]
    assert race_label(state, RACE) == f"round 1, match W1-1, race 1 ({RACE})"
    assert race_label(state, RaceId("r9")) == "race r9"  # someone else's race: not this player's
