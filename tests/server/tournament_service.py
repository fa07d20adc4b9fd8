"""The tournament service in-process, for its tests (test_tournaments.py,
test_tournament_requests.py): a hub on a memory store that counts its reads of tournaments
(`CountedReads`), the service over the hub's races (`node`), sessions said hello, a clock the
test moves on, and stored tournaments in a given phase (`record_in`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from solrace.server.broker import Broker
from solrace.server.hub import Hub
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import PlayerId, TournamentId
from solrace.server.protocol.tournament_model import Format, FormatRules
from solrace.server.protocol.tournament_state import TournamentSettings
from solrace.server.ratings import RatingService
from solrace.server.store import MemoryStore, Store
from solrace.server.store.base import TournamentVersion
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournament_live import Live
from solrace.server.tournaments import TournamentService
from tests.server.sessions import RecordingSession, running_hub

TOKEN = "let-me-admin-please"
T0_MS = 1_000_000_000


class CountedReads(MemoryStore):
    """The memory store, counting its reads of tournaments: whole documents (one each, also
    those a listing returns; `read`: the ids of those), and the reads of the open
    tournaments' versions and of a page of finished ones'."""

    def __init__(self) -> None:
        super().__init__()
        self.documents = 0
        self.read: set[str] = set()
        self.open_reads = 0
        self.finished_reads = 0

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None:
        self.documents += 1
        self.read.add(tournament_id)
        return await super().get_tournament(tournament_id)

    async def list_open_tournaments(self) -> list[TournamentRecord]:
        records = await super().list_open_tournaments()
        self.documents += len(records)
        self.read.update(r.tournament_id for r in records)
        return records

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        self.open_reads += 1
        return await super().open_tournament_versions()

    async def finished_tournament_versions(
        self, skip: int, limit: int
    ) -> tuple[list[TournamentVersion], int]:
        self.finished_reads += 1
        return await super().finished_tournament_versions(skip, limit)


class Clock:
    """The hub's clock (ms), moved on by the test."""

    def __init__(self) -> None:
        self.now_ms = T0_MS

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)


@contextlib.asynccontextmanager
async def node(
    store: Store, clock: Clock, broker: Broker | None = None
) -> AsyncIterator[tuple[Hub, TournamentService]]:
    """A hub on `store` (not started: nothing ticks but the test) and its tournament service,
    plugged in as the composition root plugs it."""
    async with running_hub(store, clock=clock, broker=broker, admin_token=TOKEN) as hub:
        service = TournamentService(HubRaceHost(hub, broker), RatingService(store))
        hub.plug_in(
            handlers=service.handlers,
            race_finished=service.race_finished,
            watch_check=service.check_watch,
            session_closed=service.views.session_closed,
        )
        try:
            yield hub, service
        finally:
            await service.stop()


async def hello(hub: Hub, name: str, session_id: int) -> RecordingSession:
    session = RecordingSession(session_id)
    await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=name))
    return session


def record_in(tid: str, phase: str) -> TournamentRecord:
    """A stored single elimination of ann and bob in `phase` (registration, running, or
    finished: bob dropped by the director, its deals released), as the service saves one."""
    director = PlayerId("director")
    settings = TournamentSettings(FormatRules(Format.SINGLE_ELIMINATION), check_in_required=False)
    t = Tournament.create(
        TournamentId(tid),
        "klondike",
        settings,
        admin=director,
        now=0.0,
        deal_source=lambda round_number, race_number: "1002",
    )
    if phase != "registration":
        for player in ("ann", "bob"):
            t.register(PlayerId(player), now=1.0)
        t.start(director, now=2.0)
    if phase == "finished":
        t.drop(PlayerId("bob"), actor=director, now=3.0)
    assert t.phase.value == phase
    return Live(t, version=1, name=tid, time_limit_s=60, created_at_ms=0).to_record()
