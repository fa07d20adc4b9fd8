"""When the client syncs a race whose news came before the race itself: once, again after a
reconnect or an `unavailable` answer, never for a race it knows."""

from __future__ import annotations

from solrace.client.races_to_learn import RacesToLearn
from solrace.client.state import ClientState
from solrace.server.protocol.messages import Error, RaceUpdate

from .test_state import RACE, info, progress, welcome


def news_of_an_unknown_race(state: ClientState) -> None:
    state.apply(welcome())
    state.apply(progress(5, "pb", 3))  # a race this connection was never told of


def test_news_of_an_unknown_race_is_synced_once() -> None:
    state = ClientState()
    learn = RacesToLearn()
    news_of_an_unknown_race(state)
    assert learn.due(progress(5, "pb", 3), state) == RACE
    assert learn.due(progress(6, "pb", 4), state) is None  # its sync is on its way


def test_a_sync_lost_with_the_link_is_sent_again_after_the_reconnect() -> None:
    """A sync sent just before the link dropped may never be answered: without asking again
    the race stayed without its game (a held deal's check said `deal None N`)."""
    state = ClientState()
    learn = RacesToLearn()
    news_of_an_unknown_race(state)
    assert learn.due(progress(5, "pb", 3), state) == RACE
    learn.reconnected()
    assert learn.due(progress(6, "pb", 4), state) == RACE


def test_a_sync_answered_unavailable_is_asked_again_and_another_refusal_is_not() -> None:
    state = ClientState()
    learn = RacesToLearn()
    news_of_an_unknown_race(state)
    assert learn.due(progress(5, "pb", 3), state) == RACE
    refused = Error(code="not_allowed", message="no", request="sync", race_id=RACE)
    assert learn.due(refused, state) is None
    assert learn.due(progress(6, "pb", 4), state) is None  # not asked at every progress
    away = Error(code="unavailable", message="store away", request="sync", race_id=RACE)
    assert learn.due(away, state) is None
    assert learn.due(progress(7, "pb", 5), state) == RACE


def test_a_race_the_state_describes_is_never_synced_for_its_news() -> None:
    state = ClientState()
    learn = RacesToLearn()
    state.apply(welcome())
    state.apply(RaceUpdate(race_id=RACE, epoch="e", version=1, race=info()))
    assert learn.due(progress(2, "pb", 3), state) is None
