"""The tournament requests in-process (server/tournament_requests.py): a hub on a memory
store and the tournament service over its races (tests/server/tournament_service.py), sessions
said hello; end-to-end tournaments are in tests/integration."""

from __future__ import annotations

import pytest

import solrace.server.tournament_requests
from solrace.server.protocol.messages import Error
from solrace.server.protocol.tournament_errors import TournamentId
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    ListTournaments,
    TournamentList,
    TournamentView,
)
from tests.server.sessions import opened
from tests.server.tournament_service import TOKEN, Clock, CountedReads, hello, node, record_in


async def test_the_list_pages_its_tournaments_and_keeps_few_summaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The unfinished tournaments first, then the latest finished (each part oldest first),
    `more` counting the rest, and later pages of older finished ones, as the store pages
    them; each summary is made once per stored version, and only the latest used are kept
    (`SUMMARIES_KEPT`)."""
    monkeypatch.setattr(solrace.server.tournament_requests, "SUMMARIES_KEPT", 3)
    phases = ["finished", "finished", "running", "finished", "registration", "finished"]
    clock = Clock()
    async with opened(CountedReads()) as store, node(store, clock) as (hub, service):
        for n, phase in enumerate(phases):
            assert await store.save_tournament(record_in(f"t{n}", phase), None)
        lister = await hello(hub, "lister", 9)

        async def listed(limit: int, skip: int = 0) -> tuple[list[str], int]:
            monkeypatch.setattr(solrace.server.tournament_requests, "TOURNAMENT_LIST_LIMIT", limit)
            await hub.handle(lister, ListTournaments(skip_finished=skip))
            answer = lister.sent[-1]
            assert isinstance(answer, TournamentList)
            assert len(service._summaries) <= 3
            return [s.tournament_id for s in answer.tournaments], answer.more

        # Each part oldest first: the unfinished t2 and t4 before every finished one.
        assert await listed(6) == (["t2", "t4", "t0", "t1", "t3", "t5"], 0)
        assert await listed(4) == (["t2", "t4", "t3", "t5"], 2)
        assert await listed(1) == (["t2"], 5)
        assert await listed(2, skip=2) == (["t0", "t1"], 0)  # t3 and t5 were seen
        assert await listed(1, skip=1) == (["t3"], 2)
        assert await listed(4, skip=9) == ([], 0)

        store.documents = 0  # kept: t0, t1, t3 (the latest used)
        assert await listed(2) == (["t2", "t4"], 4)
        assert store.documents == 2  # made again: t0's and t1's summaries make room
        store.documents = 0
        assert await listed(1, skip=1) == (["t3"], 2)
        assert store.documents == 0  # kept


async def test_a_new_tournament_meeting_a_taken_id_is_created_under_another() -> None:
    """Ids are 6 hex digits: on a busy server a new tournament meets a taken one now and then,
    and its director was told "tournament id taken; retry". The server tries other ids
    first, and refuses only after `TOURNAMENT_ID_ATTEMPTS` taken ones."""
    clock = Clock()
    async with opened(CountedReads()) as store, node(store, clock) as (hub, service):
        taken = record_in("t0000aa", "running")
        assert await store.save_tournament(taken, None)
        director = await hello(hub, "director", 1)
        ids = iter(["t0000aa", "t0000aa", "t0000bb"])
        service.new_tournament_id = lambda: TournamentId(next(ids))
        create = CreateTournament(
            admin_token=TOKEN, name="cup", game="klondike", format="single_elimination"
        )
        await hub.handle(director, create)
        view = director.sent[-1]
        assert isinstance(view, TournamentView), view
        assert view.tournament.tournament_id == "t0000bb"
        assert await store.get_tournament("t0000aa") == taken  # left as it was
        created = await store.get_tournament("t0000bb")
        assert created is not None and created.version == 1

        # Only taken ids: refused after the last attempt.
        service.new_tournament_id = lambda: TournamentId("t0000aa")
        await hub.handle(director, create)
        refused = director.sent[-1]
        assert isinstance(refused, Error), refused
        assert (refused.code, refused.message) == ("unavailable", "tournament id taken; retry")
