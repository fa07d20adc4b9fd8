"""The tournament service in-process (server/tournaments.py): a hub on a memory store, the
service over its races (`HubRaceHost`), sessions said hello, and a clock the test moves on
(tests/server/tournament_service.py); the test ticks the service itself. End-to-end
tournaments are in tests/integration."""

from __future__ import annotations

from typing import Any

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.hub import Hub
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import ResultEntry
from solrace.server.protocol.records import RaceRecord, RacerRecord, RacerState, RaceStatus
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import TournamentId
from solrace.server.protocol.tournament_events import RaceRequested
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    JoinTournament,
    TournamentAdmin,
    TournamentView,
    WatchTournament,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import Phase, TournamentSettings
from solrace.server.store import MemoryStore, Store
from solrace.server.store.base import StoreUnavailableError, TournamentVersion
from solrace.server.store.redis import RedisStore
from solrace.server.tournament_live import Live, RaceLink, admin_command
from tests.server.sessions import RecordingSession, opened
from tests.server.tournament_service import (
    T0_MS,
    TOKEN,
    Clock,
    CountedReads,
    hello,
    node,
    record_in,
)
from tests.waiting import eventually


class RedisVersionReads(RedisStore):
    """The Redis store, noting the versions each read of the open tournaments' versions
    returned: the ids, sorted."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.asked: list[list[str]] = []

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        versions = await super().open_tournament_versions()
        self.asked.append(sorted(v.tournament_id for v in versions))
        return versions


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
        assert store.documents == 0 and store.open_reads == 0
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

        store.documents = store.open_reads = 0
        await service.tick()
        assert store.documents == 0 and store.open_reads == 1


@pytest.mark.redis
async def test_on_several_nodes_a_tick_reads_no_version_of_a_finished_tournament(
    redis_url: str,
) -> None:
    """A Redis that has held many tournaments (here 300 settled ones): each tick reads the
    stored versions of the open tournaments, not of every one ever stored; once the one
    held finishes (its deals released: settled), a tick reads none."""
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
                settled=True,
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
        assert store.asked == [[]] and service.live == {}


async def test_a_start_reads_the_open_tournaments_only() -> None:
    """A store that has held many tournaments (here 200 settled ones): a node's start loads
    the unfinished one and the finished one whose deals may still be held, and reads no
    settled one."""
    clock = Clock()
    async with opened(CountedReads()) as store:
        async with node(store, clock) as (hub, _):
            tid, _ = await started_final(hub)
        for n in range(200):
            assert await store.save_tournament(record_in(f"tdone{n}", "finished"), None)
        held = Live.from_record(record_in("theld", "finished"), lambda r, n: "1002")
        held.held_deals = {1: 1}  # its round's deals not released yet (a crash)
        assert await store.save_tournament(held.to_record(), None)
        store.read.clear()
        async with node(store, clock) as (_, service):
            await service.start()
            assert store.read == {tid, "theld"}
            assert list(service.live) == [tid]
            released = await store.get_tournament("theld")
            assert released is not None and released.settled  # its deals released at start


async def test_on_several_nodes_a_tick_loads_an_unfinished_tournament_it_never_heard_of() -> None:
    """Another node created a tournament and its notice never came: the next tick finds it
    among the open tournaments and holds it from then on (so marks presence and forfeits
    no-shows in it), without waiting for a restart. A finished one still holding deals is
    not loaded (the node that finished it releases them, or a start)."""
    clock = Clock()
    async with (
        opened(CountedReads()) as store,
        node(store, clock, broker=MemoryBroker()) as (_, service),
    ):
        assert await store.save_tournament(record_in("telse", "registration"), None)
        finishing = Live.from_record(record_in("tfinishing", "finished"), lambda r, n: "1002")
        finishing.held_deals = {1: 1}
        assert await store.save_tournament(finishing.to_record(), None)
        store.documents = 0
        await service.tick()
        assert list(service.live) == ["telse"]
        assert store.documents == 1
        await service.tick()
        assert store.documents == 1  # nothing new: versions only


async def test_on_several_nodes_a_tournament_loaded_by_the_tick_gets_the_race_its_node_never_opened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node that started a tournament saved its final's race request and died before
    opening the race (here: its store refused the race), and its notice never reached this
    node. This node's tick loads the tournament and resumes it as a start would: it opens
    the race, so its players are not forfeited later as no-shows of a race that never was."""
    clock = Clock()
    async with opened(MemoryStore()) as store:
        async with node(store, clock, broker=MemoryBroker()) as (hub, service):

            async def store_away(*args: object) -> None:
                raise StoreUnavailableError("the store is away")

            monkeypatch.setattr(service.host, "open_seated_race", store_away)
            tid, _ = await started_final(hub)
        (match,) = (await stored(store, tid)).tournament.live_matches()
        race_id = (await stored(store, tid)).pending_race_id(match)
        assert race_id is not None and await store.get_race(race_id) is None

        async with node(store, clock, broker=MemoryBroker()) as (_, other):
            await other.tick()
            assert tid in other.live
            race = await store.get_race(race_id)
            assert race is not None
            assert {r.player_id for r in race.racers} == set(match.racing)


async def test_on_several_nodes_a_version_the_tick_loads_goes_to_the_watchers_here() -> None:
    """Another node saved a version whose notice never came (here: it renamed nothing but the
    tournament, so nothing is due): the tick that loads it also sends its view to the
    tournament's watchers on this node, who would otherwise see the old one until the next
    change made here."""
    clock = Clock()
    async with (
        opened(MemoryStore()) as store,
        node(store, clock, broker=MemoryBroker()) as (hub, service),
    ):
        tid, sessions = await started_final(hub)
        await service.tick()
        watcher = sessions["director"]
        await hub.handle(watcher, WatchTournament(tournament_id=tid))
        held = service.live[tid]

        elsewhere = await stored(store, tid)
        elsewhere.name = "grand final"
        elsewhere.version += 1
        assert await store.save_tournament(elsewhere.to_record(), held.version)

        await service.tick()

        def latest_view() -> TournamentView | None:
            views = [m for m in watcher.sent if isinstance(m, TournamentView)]
            return views[-1] if views else None

        await eventually(
            lambda: (
                (view := latest_view()) is not None and view.tournament.version == elsewhere.version
            ),
            what="the view of the version saved elsewhere",
        )
        view = latest_view()
        assert view is not None and view.tournament.name == "grand final"


async def test_on_several_nodes_a_held_tournament_s_unreadable_new_version_stops_no_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another node saved a version of a tournament held here that this node cannot read
    (a newer solrace's document, or a damaged one): the tick says so once and goes on (with
    the others), instead of failing at every tick, for all of them."""
    clock = Clock()
    async with (
        opened(MemoryStore()) as store,
        node(store, clock, broker=MemoryBroker()) as (hub, service),
    ):
        tid, _ = await started_final(hub)
        await service.tick()
        held = service.live[tid]
        newer = held.to_record().model_copy(
            update={"version": held.version + 1, "document": '{"state": {"schema": 99}}'}
        )
        assert await store.save_tournament(newer, held.version)

        await service.tick()
        await service.tick()
        said = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
        assert len(said) == 1 and tid in said[0]
        assert service.live[tid] is held  # left as it was


def _finished_race(race_id: str, order: list[str]) -> RaceRecord:
    """A tournament race finished in `order`, each racer having played."""
    return RaceRecord(
        race_id=RaceId(race_id),
        game="klondike",
        seats=len(order),
        time_limit_s=60,
        rated=False,
        invite_code=None,
        game_number="1002",
        salt="salt",
        commitment="commitment",
        creator=PlayerId(order[0]),
        status=RaceStatus.FINISHED,
        created_at_ms=T0_MS,
        countdown_ms=0,
        grace_ms=60_000,
        spectator_delay_ms=0,
        started_at_ms=T0_MS,
        ends_at_ms=T0_MS + 60_000,
        finished_at_ms=T0_MS + 30_000,
        racers=[
            RacerRecord(player_id=PlayerId(p), name=p, state=RacerState.STUCK, moves=5)
            for p in order
        ],
        results=[
            ResultEntry(
                rank=rank,
                player_id=PlayerId(p),
                name=p,
                state="stuck",
                on_foundations=10 - rank,
                total=10 - rank,
                elapsed_ms=30_000,
            )
            for rank, p in enumerate(order, start=1)
        ],
    )


async def test_a_late_result_of_a_voided_race_does_not_count_for_the_race_requested_again() -> None:
    """Two corrections void a best-of-3 final's race 3 (the ninth race, "t1-9") and reopen
    the match, which requests race 3 again ("t1-10"). The voided race finishing late was
    recorded as race 3 of the match (Ann's, deciding the final), though the match waits for
    "t1-10": a result counts only from the race the match's race number was last requested
    as."""
    ann, bob = PlayerId("ann"), PlayerId("bob")
    settings = TournamentSettings(
        FormatRules(Format.SINGLE_ELIMINATION, best_of=3), check_in_required=False
    )
    t = Tournament.create(
        TournamentId("t1"),
        "klondike",
        settings,
        admin=PlayerId("admin"),
        now=0.0,
        deal_source=lambda round_number, race_number: "1002",
    )
    for player in (ann, bob):
        t.register(player, now=1.0)
    (request,) = [e for e in t.start(PlayerId("admin"), now=2.0) if isinstance(e, RaceRequested)]
    match_id = request.match_id
    t.record_race(match_id, 1, RaceResult.from_order([ann, bob]), now=3.0)
    t.record_race(match_id, 2, RaceResult.from_order([bob, ann]), now=3.0)
    t.record_race(match_id, 3, RaceResult.from_order([ann, bob]), now=3.0)  # Ann's, 2-1
    live = Live(t, version=1, name="cup", time_limit_s=60, created_at_ms=0)
    for placings in ([["ann"], ["bob"]], [["bob"], ["ann"]]):  # 2-0: race 3 voided; 1-1
        correction = TournamentAdmin.model_validate(
            {
                "tournament_id": "t1",
                "admin_token": TOKEN,
                "act": "correct_result",
                "match_id": match_id,
                "race_number": 2,
                "placings": placings,
            }
        )
        admin_command(correction, {}, now=4.0)(live)
    for number, race_number in ((1, 1), (2, 2), (9, 3), (10, 3)):
        live.links[RaceId(f"t1-{number}")] = RaceLink(match_id, 1, race_number)
    live.next_race = 11
    assert live.pending_race_id(t.find_match(match_id)[1]) == "t1-10"

    clock = Clock()
    async with opened(MemoryStore()) as store:
        assert await store.save_tournament(live.to_record(), None)
        async with node(store, clock) as (_, service):
            await service.race_finished(_finished_race("t1-9", ["ann", "bob"]))
        stored = await store.get_tournament("t1")
        assert stored is not None and stored.version == 1, "nothing saved"
        (match,) = Live.from_record(stored, lambda r, n: "1002").tournament.live_matches()
        assert match.pending_race == 3 and len(match.races) == 2
