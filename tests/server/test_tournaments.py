"""The tournament service in-process (server/tournaments.py): a hub on a memory store, the
service over its races (`HubRaceHost`), sessions said hello, and a clock the test moves on;
the test ticks the service itself. End-to-end tournaments are in tests/integration."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection
from typing import Any

import pytest

from solrace.server.broker import Broker, MemoryBroker
from solrace.server.hub import Hub
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    JoinTournament,
    TournamentAdmin,
    TournamentView,
)
from solrace.server.protocol.tournament_state import Phase
from solrace.server.ratings import RatingService
from solrace.server.store import MemoryStore, Store
from solrace.server.store.redis import RedisStore
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournament_live import Live
from solrace.server.tournaments import TournamentService
from tests.server.sessions import RecordingSession, opened, running_hub

TOKEN = "let-me-admin-please"
T0_MS = 1_000_000_000


class CountedReads(MemoryStore):
    """The memory store, counting its reads of tournaments: whole documents, the list of
    every tournament's version, and the reads of named tournaments' versions (the ids asked
    for, sorted)."""

    def __init__(self) -> None:
        super().__init__()
        self.documents = 0
        self.version_lists = 0
        self.versions_asked: list[list[str]] = []

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None:
        self.documents += 1
        return await super().get_tournament(tournament_id)

    async def tournament_versions(self) -> list[tuple[str, int]]:
        self.version_lists += 1
        return await super().tournament_versions()

    async def get_tournament_versions(self, tournament_ids: Collection[str]) -> dict[str, int]:
        self.versions_asked.append(sorted(tournament_ids))
        return await super().get_tournament_versions(tournament_ids)


class RedisVersionReads(RedisStore):
    """The Redis store, noting each read of tournaments' versions: the ids asked for, sorted
    (None: every tournament's)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.asked: list[list[str] | None] = []

    async def tournament_versions(self) -> list[tuple[str, int]]:
        self.asked.append(None)
        return await super().tournament_versions()

    async def get_tournament_versions(self, tournament_ids: Collection[str]) -> dict[str, int]:
        self.asked.append(sorted(tournament_ids))
        return await super().get_tournament_versions(tournament_ids)


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


async def started_final(
    hub: Hub, *, gone: tuple[str, ...] = (), **options: Any
) -> tuple[str, dict[str, RecordingSession]]:
    """The director creates a single elimination of ann and bob (two minutes of no-show
    grace, no check-in); both join, those named `gone` leave the node, the director starts
    it: its id and the sessions by name."""
    sessions = {
        name: await hello(hub, name, n) for n, name in enumerate(("director", "ann", "bob"), 1)
    }
    values: dict[str, Any] = {
        "admin_token": TOKEN,
        "name": "final",
        "game": "klondike",
        "format": "single_elimination",
        "check_in_required": False,
        "no_show_grace_s": 120,
    }
    await hub.handle(sessions["director"], CreateTournament(**{**values, **options}))
    view = sessions["director"].sent[-1]
    assert isinstance(view, TournamentView), view
    tid = view.tournament.tournament_id
    for name in ("ann", "bob"):
        await hub.handle(sessions[name], JoinTournament(tournament_id=tid))
    for name in gone:
        await hub.disconnected(sessions[name])
    await hub.handle(
        sessions["director"], TournamentAdmin(tournament_id=tid, admin_token=TOKEN, act="start")
    )
    return tid, sessions


async def stored(store: Store, tid: str) -> Live:
    record = await store.get_tournament(tid)
    assert record is not None
    return Live.from_record(record, lambda round_number, race_number: "1002")


async def test_a_tick_with_nothing_due_reads_no_tournament_from_the_store() -> None:
    """Once ann is marked present, bob (gone) is the only one the tick could act on, and not
    before his grace has passed: until then a tick reads nothing (a big tournament's document
    is costly to read and compare); then it forfeits him."""
    clock = Clock()
    async with opened(CountedReads()) as store, node(store, clock) as (hub, service):
        tid, _ = await started_final(hub, gone=("bob",))
        await service.tick()  # ann is connected: marked present, a change
        marked = await stored(store, tid)
        (match,) = marked.tournament.live_matches()
        assert match.present == {ann_id(marked)}

        store.documents = 0
        for _ in range(3):
            clock.advance(30)
            await service.tick()
        assert store.documents == 0 and store.version_lists == 0
        assert (await stored(store, tid)).version == marked.version

        clock.advance(30)  # bob's two minutes have passed
        store.documents = 0
        await service.tick()
        assert store.documents > 0
        final = await stored(store, tid)
        assert final.tournament.phase is Phase.FINISHED
        assert final.tournament.champion() == ann_id(final)


def ann_id(live: Live) -> str:
    (ann,) = [p for p, name in live.names.items() if name == "ann"]
    return ann


async def test_on_several_nodes_a_tick_loads_a_version_saved_elsewhere_it_did_not_hear_of() -> None:
    """Another node saved a version whose notice never came (the broker delivers at most
    once): what this node holds says nothing is due, but the stored version is newer, so the
    tick loads it and acts on it (here: ann and bob, connected here, are marked present again
    in it). A tick with nothing due reads the versions only, never a document."""
    clock = Clock()
    async with (
        opened(CountedReads()) as store,
        node(store, clock, broker=MemoryBroker()) as (hub, service),
    ):
        tid, _ = await started_final(hub)
        await service.tick()
        held = await stored(store, tid)
        (match,) = held.tournament.live_matches()
        assert len(match.present) == 2

        elsewhere = await stored(store, tid)
        elsewhere.tournament.live_matches()[0].present.clear()
        elsewhere.version += 1
        assert await store.save_tournament(elsewhere.to_record(), held.version)
        assert service.live[tid].version == held.version  # not heard of here

        await service.tick()
        again = await stored(store, tid)
        assert again.version == held.version + 2
        assert again.tournament.live_matches()[0].present == match.present

        store.documents = store.version_lists = 0
        store.versions_asked.clear()
        await service.tick()
        assert store.documents == 0 and store.version_lists == 0
        assert store.versions_asked == [[tid]]  # the tournament held here, and no other


@pytest.mark.redis
async def test_on_several_nodes_a_tick_reads_no_version_of_a_finished_tournament(
    redis_url: str,
) -> None:
    """A Redis that has held many tournaments (here 300 finished ones): each tick reads the
    stored versions of the tournaments held here, the unfinished ones, not of every one ever
    stored; once the one held finishes, a tick reads none."""
    clock = Clock()
    async with (
        opened(RedisVersionReads(redis_url)) as store,
        node(store, clock, broker=MemoryBroker()) as (hub, service),
    ):
        for n in range(300):
            done = TournamentRecord(
                tournament_id=f"tdone{n}",
                version=7,
                phase=Phase.FINISHED.value,
                created_at_ms=T0_MS,
                document="{}",
            )
            assert await store.save_tournament(done, None)
        tid, sessions = await started_final(hub)
        store.asked.clear()
        await service.tick()
        assert store.asked == [[tid]]

        held = service.live[tid]
        bob = next(p for p, name in held.names.items() if name == "bob")
        drop = TournamentAdmin(tournament_id=tid, admin_token=TOKEN, act="drop", player_id=bob)
        await hub.handle(sessions["director"], drop)
        assert (await stored(store, tid)).tournament.phase is Phase.FINISHED
        store.asked.clear()
        await service.tick()
        assert store.asked == [] and service.live == {}
