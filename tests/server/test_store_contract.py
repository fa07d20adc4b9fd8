"""One contract for every store backend: `memory:`, `sqlite:` (a file in tmp_path) and
`redis://` (a real redis-server on loopback). Each test states behaviour the hub relies on;
a backend passes only if it behaves exactly like the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from solrace.server.protocol.competition_records import (
    RECENT_RESULTS_KEPT,
    RatingChangeRecord,
    RatingOutcome,
    RatingRecord,
    RatingUpdate,
    RecentResult,
    TournamentRecord,
)
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    MoveRecord,
    PlayerRecord,
    RaceRecord,
    RacerRecord,
    RacerState,
    RaceStatus,
)
from solrace.server.store import (
    NameTakenError,
    NotPlayingError,
    PlyConflictError,
    Store,
    StoreUnavailableError,
    UncountedMovesError,
    UnknownRaceError,
    open_store,
)
from solrace.server.store.base import TournamentVersion
from tests.redis_server import RedisServer

StoreFactory = Callable[[], Awaitable[Store]]


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'contract.sqlite3'}"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
async def open_another(store_url: str) -> AsyncIterator[StoreFactory]:
    """Opens more stores on the same data: a restarted process, or a second node.

    `memory:` has no shared data, so its "other" store is the first one again."""
    opened: list[Store] = []
    first: list[Store] = []

    async def another() -> Store:
        if store_url == "memory:" and first:
            return first[0]
        store = open_store(store_url)
        await store.open()
        opened.append(store)
        first.append(store)
        return store

    yield another
    for store in opened:
        await store.close()


@pytest.fixture
async def store(open_another: StoreFactory) -> Store:
    return await open_another()


@pytest.fixture
def two_nodes(store_url: str) -> None:
    """A test of two stores open on the same data at once (two nodes): not for `sqlite:`,
    which is one node's store and refuses a second store on its file (test_sqlite_files)."""
    if store_url.startswith("sqlite:"):
        pytest.skip("sqlite: one store a file, by design (a second is refused)")


def race(
    race_id: str = "r1", status: RaceStatus = RaceStatus.OPEN, **changes: object
) -> RaceRecord:
    record = RaceRecord(
        race_id=RaceId(race_id),
        game="klondike",
        seats=2,
        time_limit_s=300,
        rated=False,
        invite_code=None,
        game_number="12345",
        salt="00ff",
        commitment="c0ffee",
        creator=PlayerId("p1"),
        status=status,
        created_at_ms=1_000,
        countdown_ms=3_000,
        grace_ms=60_000,
        spectator_delay_ms=0,
        racers=[RacerRecord(player_id=PlayerId("p1"), name="Ann", state=RacerState.JOINED)],
    )
    return record.model_copy(update=changes)


async def seed(store: Store, *records: RaceRecord) -> None:
    """Store races that are not stored yet (the one way races are written: compare-and-set)."""
    for record in records:
        assert await store.save_race_if(record, None), record.race_id


async def seed_running(store: Store) -> RaceRecord:
    """Store race r1 running, with racers p1 and p2 playing."""
    playing = [
        RacerRecord(player_id=PlayerId(p), name=p, state=RacerState.PLAYING) for p in ("p1", "p2")
    ]
    running = race(status=RaceStatus.RUNNING, racers=playing)
    await seed(store, running)
    return running


def move(ply: int, seq: int | None = None, player: str = "p1", race_id: str = "r1") -> MoveRecord:
    return MoveRecord(
        race_id=RaceId(race_id),
        player_id=PlayerId(player),
        ply=ply,
        seq=ply + 1 if seq is None else seq,
        move=f"t{ply % 7}f",
        at_ms=10_000 + ply,
    )


# --- players -------------------------------------------------------------------------------


async def test_a_player_is_created_and_read_back(store: Store) -> None:
    created = await store.create_player(PlayerId("p1"), "Ann", 1_000)
    assert (created.player_id, created.name, created.created_at_ms) == ("p1", "Ann", 1_000)
    assert await store.get_player(PlayerId("p1")) == created
    assert await store.get_player(PlayerId("nobody")) is None


async def test_a_name_is_owned_once_whatever_its_case(store: Store) -> None:
    await store.create_player(PlayerId("p1"), "Ann", 1_000)
    for taken in ("Ann", "ann", "ANN"):
        with pytest.raises(NameTakenError):
            await store.create_player(PlayerId("p2"), taken, 2_000)
    assert await store.get_player(PlayerId("p2")) is None
    assert (await store.create_player(PlayerId("p3"), "Annie", 3_000)).name == "Annie"


async def test_case_blind_names_beyond_ascii(store: Store) -> None:
    await store.create_player(PlayerId("p1"), "Émile", 1_000)
    with pytest.raises(NameTakenError):
        await store.create_player(PlayerId("p2"), "éMILE", 2_000)
    await store.create_player(PlayerId("p3"), "Straße", 3_000)
    with pytest.raises(NameTakenError):
        await store.create_player(PlayerId("p4"), "STRASSE", 4_000)


async def test_a_player_is_found_by_name_whatever_its_case(store: Store) -> None:
    ann = await store.create_player(PlayerId("p1"), "Ann", 1_000)
    emile = await store.create_player(PlayerId("p2"), "Émile", 2_000)
    for asked in ("Ann", "ann", "ANN"):
        assert await store.get_player_by_name(asked) == ann
    assert await store.get_player_by_name("éMILE") == emile
    assert await store.get_player_by_name("Annie") is None
    assert await store.get_player_by_name("p1") is None  # an id is no name


# --- races ---------------------------------------------------------------------------------


async def test_a_race_is_saved_replaced_and_read_back(store: Store) -> None:
    assert await store.get_race(RaceId("r1")) is None
    first = race()
    assert await store.save_race_if(first, None)
    assert await store.get_race(RaceId("r1")) == first
    running = race(status=RaceStatus.RUNNING, started_at_ms=5_000)
    assert await store.save_race_if(running, first)
    assert await store.get_race(RaceId("r1")) == running


async def test_list_races_filters_by_status_in_first_save_order(store: Store) -> None:
    await seed(store, race("ra"), race("rb", RaceStatus.RUNNING), race("rc"))
    await seed(store, race("rd", RaceStatus.FINISHED))
    # An update keeps its place.
    assert await store.save_race_if(race("ra", RaceStatus.COUNTDOWN), race("ra"))

    live = await store.list_races(LIVE_STATUSES)
    assert [r.race_id for r in live] == ["ra", "rb", "rc"]
    assert live[0].status is RaceStatus.COUNTDOWN
    assert [r.race_id for r in await store.list_races([RaceStatus.FINISHED])] == ["rd"]
    assert await store.list_races([RaceStatus.CANCELLED]) == []
    assert await store.list_races([]) == []

    assert await store.save_race_if(race("rb", RaceStatus.FINISHED), race("rb", RaceStatus.RUNNING))
    assert [r.race_id for r in await store.list_races([RaceStatus.RUNNING])] == []
    assert [r.race_id for r in await store.list_races([RaceStatus.FINISHED])] == ["rb", "rd"]


async def test_save_race_if_sets_only_over_the_expected_record(store: Store) -> None:
    opened = race()
    assert await store.save_race_if(opened, None)
    assert not await store.save_race_if(race(seats=3), None)  # it exists now
    counting = race(status=RaceStatus.COUNTDOWN, start_at_ms=4_000)
    assert not await store.save_race_if(counting, race(seats=4))  # not what is stored
    assert await store.get_race(RaceId("r1")) == opened
    assert await store.save_race_if(counting, opened)
    assert await store.get_race(RaceId("r1")) == counting
    assert not await store.save_race_if(race(status=RaceStatus.RUNNING), opened)  # stale
    assert [r.status for r in await store.list_races(LIVE_STATUSES)] == [RaceStatus.COUNTDOWN]


async def test_save_race_if_updates_the_status_index(store: Store) -> None:
    opened = race()
    await seed(store, opened)
    finished = race(status=RaceStatus.FINISHED, finished_at_ms=9_000)
    assert await store.save_race_if(finished, opened)
    assert await store.list_races(LIVE_STATUSES) == []
    assert await store.list_races([RaceStatus.FINISHED]) == [finished]


# --- moves ---------------------------------------------------------------------------------


async def test_moves_are_appended_in_ply_order_per_player(store: Store) -> None:
    await seed(store, race(), race("r2"))
    for ply in range(3):
        await store.append_move(move(ply))
    await store.append_move(move(0, player="p2"))
    await store.append_move(move(0, race_id="r2"))

    moves = await store.get_moves(RaceId("r1"))
    assert [m for m in moves if m.player_id == "p1"] == [move(0), move(1), move(2)]
    assert [m for m in moves if m.player_id == "p2"] == [move(0, player="p2")]
    assert _grouped(moves)
    assert await store.get_moves(RaceId("r2")) == [move(0, race_id="r2")]
    assert await store.get_moves(RaceId("nothing")) == []


def _grouped(moves: list[MoveRecord]) -> bool:
    """Each player's moves are together and in ply order."""
    players = [m.player_id for m in moves]
    blocks = [p for i, p in enumerate(players) if i == 0 or players[i - 1] != p]
    in_order = all(
        [m.ply for m in moves if m.player_id == p] == list(range(players.count(p))) for p in blocks
    )
    return len(blocks) == len(set(blocks)) and in_order


@pytest.mark.parametrize(
    "bad",
    [
        move(2, seq=50),  # skips ply 1
        move(0, seq=51),  # ply 0 again
        move(1, seq=1),  # seq of ply 0 again
        move(0),  # the very same record again
    ],
    ids=["gap", "stale-ply", "reused-seq", "duplicate"],
)
async def test_a_conflicting_move_stores_nothing(store: Store, bad: MoveRecord) -> None:
    await seed(store, race())
    await store.append_move(move(0))
    with pytest.raises(PlyConflictError):
        await store.append_move(bad)
    assert await store.get_moves(RaceId("r1")) == [move(0)]
    await store.append_move(move(1))  # the log carries on
    assert await store.get_moves(RaceId("r1")) == [move(0), move(1)]


async def test_a_move_in_an_unknown_race_is_refused(store: Store) -> None:
    with pytest.raises(UnknownRaceError):
        await store.append_move(move(0, race_id="ghost"))
    assert await store.get_moves(RaceId("ghost")) == []


async def test_a_player_id_is_one_name_s(store: Store) -> None:
    """A registration key derives the player id: the same id with another name is refused
    and changes nothing (the memory store used to rename the player)."""
    await store.create_player(PlayerId("p1"), "Ann", 1_000)
    with pytest.raises(NameTakenError):
        await store.create_player(PlayerId("p1"), "Bob", 2_000)
    assert await store.get_player(PlayerId("p1")) == PlayerRecord(
        player_id=PlayerId("p1"), name="Ann", created_at_ms=1_000
    )
    assert (await store.create_player(PlayerId("p2"), "Bob", 3_000)).name == "Bob"  # still free


async def test_seqs_are_per_player(store: Store) -> None:
    await seed(store, race())
    await store.append_move(move(0, seq=7))
    await store.append_move(move(0, seq=7, player="p2"))
    assert len(await store.get_moves(RaceId("r1"))) == 2


# --- several nodes, restarts ---------------------------------------------------------------


@pytest.mark.usefixtures("two_nodes")
async def test_two_nodes_appending_the_same_ply_store_one_move(open_another: StoreFactory) -> None:
    node_a, node_b = await open_another(), await open_another()
    await seed(node_a, race())
    for ply in range(5):
        outcomes = await asyncio.gather(
            node_a.append_move(move(ply, seq=100 + ply)),
            node_b.append_move(move(ply, seq=200 + ply)),
            return_exceptions=True,
        )
        assert sum(outcome is None for outcome in outcomes) == 1, outcomes
        assert [type(o) for o in outcomes if o is not None] == [PlyConflictError]
    moves = await node_a.get_moves(RaceId("r1"))
    assert [m.ply for m in moves] == [0, 1, 2, 3, 4]
    assert await node_b.get_moves(RaceId("r1")) == moves


async def test_moves_arriving_together_each_get_their_own_answer(
    open_another: StoreFactory,
) -> None:
    """Many racers' moves in flight at once (SQLite commits them as one batch): every good
    move is stored in order, and a bad one among them is refused without harming the rest."""
    store = await open_another()
    await seed(store, race())
    players = [f"p{i}" for i in range(12)]
    for ply in range(3):
        good = [store.append_move(move(ply, player=p)) for p in players]
        # A refusal in the same batch: a ply stored in the previous round, or no such race.
        bad = move(ply - 1, seq=999, player="p0") if ply else move(0, race_id="nope")
        outcomes = await asyncio.gather(*good, store.append_move(bad), return_exceptions=True)
        assert outcomes[:-1] == [None] * len(players)
        assert isinstance(outcomes[-1], PlyConflictError if ply else UnknownRaceError)
    await store.close()  # a restart (memory: the same store, still there)
    again = await open_another()
    stored = await again.get_moves(RaceId("r1"))
    for p in players:
        assert [(m.ply, m.seq) for m in stored if m.player_id == p] == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.usefixtures("two_nodes")
async def test_two_nodes_making_one_transition_get_one_true(open_another: StoreFactory) -> None:
    node_a, node_b = await open_another(), await open_another()
    opened = race()
    await seed(node_a, opened)
    finished_a = race(status=RaceStatus.FINISHED, finished_at_ms=9_000)
    finished_b = race(status=RaceStatus.FINISHED, finished_at_ms=9_001)
    won = await asyncio.gather(
        node_a.save_race_if(finished_a, opened), node_b.save_race_if(finished_b, opened)
    )
    assert sorted(won) == [False, True]
    assert await node_b.get_race(RaceId("r1")) == (finished_a if won[0] else finished_b)


async def test_everything_survives_a_restart(store_url: str, open_another: StoreFactory) -> None:
    if store_url == "memory:":
        pytest.skip("memory: keeps nothing across a restart, by design")
    first = await open_another()
    player = await first.create_player(PlayerId("p1"), "Ann", 1_000)
    await seed(first, race(status=RaceStatus.RUNNING))
    await first.append_move(move(0))
    await first.append_move(move(1))
    await first.close()

    again = await open_another()
    assert await again.get_player(PlayerId("p1")) == player
    assert await again.get_race(RaceId("r1")) == race(status=RaceStatus.RUNNING)
    assert await again.list_races(LIVE_STATUSES) == [race(status=RaceStatus.RUNNING)]
    assert await again.get_moves(RaceId("r1")) == [move(0), move(1)]
    with pytest.raises(PlyConflictError):
        await again.append_move(move(1, seq=9))
    with pytest.raises(NameTakenError):
        await again.create_player(PlayerId("p2"), "ANN", 2_000)


def test_unknown_store_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported store URL"):
        open_store("postgres://localhost/solrace")


# --- Redis itself going away (AOF on) --------------------------------------------------------


@pytest.mark.redis
async def test_redis_restart_keeps_every_stored_move(own_redis_server: RedisServer) -> None:
    store = open_store(own_redis_server.url)
    await store.open()
    try:
        await seed(store, race(status=RaceStatus.RUNNING))
        await store.append_move(move(0))
        own_redis_server.kill()  # a crash: only the AOF (fsync always) survives
        own_redis_server.start()
        # The same store object carries on: stale pooled connections are replaced.
        await store.append_move(move(1))
        assert await store.get_moves(RaceId("r1")) == [move(0), move(1)]
        assert await store.get_race(RaceId("r1")) == race(status=RaceStatus.RUNNING)
    finally:
        await store.close()


@pytest.mark.redis
async def test_a_move_during_a_redis_outage_is_never_acknowledged(
    own_redis_server: RedisServer,
) -> None:
    store = open_store(own_redis_server.url)
    await store.open()
    try:
        await seed(store, race(status=RaceStatus.RUNNING))
        own_redis_server.stop()
        with pytest.raises(StoreUnavailableError):
            await store.append_move(move(0))
        with pytest.raises(StoreUnavailableError):
            await store.get_race(RaceId("r1"))
        own_redis_server.start()
        assert await store.get_moves(RaceId("r1")) == []  # nothing was half-stored
        await store.append_move(move(0))  # the retry succeeds
        assert await store.get_moves(RaceId("r1")) == [move(0)]
    finally:
        await store.close()


@pytest.mark.redis
async def test_redis_refuses_a_move_the_stored_race_no_longer_takes(redis_url: str) -> None:
    """Several nodes share Redis, and a node's copy of a race may be behind: the store itself
    refuses a move of a racer who is out, or of a race that has finished."""
    store = open_store(redis_url)
    await store.open()
    try:
        running = await seed_running(store)
        playing = running.racers
        await store.append_move(move(0, player="p2"))
        p2_resigned = playing[1].model_copy(update={"state": RacerState.RESIGNED, "moves": 1})
        p2_out = running.model_copy(update={"racers": [playing[0], p2_resigned]})
        assert await store.save_race_if(p2_out, running)
        with pytest.raises(NotPlayingError):
            await store.append_move(move(1, player="p2"))
        await store.append_move(move(0, player="p1"))  # the others play on
        over = p2_out.model_copy(update={"status": RaceStatus.FINISHED})
        assert await store.save_race_if(over, p2_out)
        with pytest.raises(NotPlayingError):
            await store.append_move(move(1, player="p1"))
        assert [(m.player_id, m.ply) for m in await store.get_moves(RaceId("r1"))] == [
            ("p1", 0),
            ("p2", 0),
        ]
    finally:
        await store.close()


@pytest.mark.redis
@pytest.mark.parametrize("compared", ["by digest", "parsed"])
async def test_redis_refuses_to_put_a_racer_out_without_counting_its_stored_moves(
    redis_url: str, compared: str
) -> None:
    """Several nodes share Redis, and a racer's node may hold the progress of its stored
    moves in a batch: a record that puts the racer out with fewer moves than are stored (its
    results would leave them out) is refused, and nothing is stored; with the count of its
    stored moves it is taken, and no move is taken after it. `compared`: the save compares
    the record it read by its digest (one script) or parsed (WATCH/MULTI)."""
    store = open_store(redis_url)
    await store.open()
    try:
        running = await seed_running(store)
        playing = running.racers
        for ply in range(3):
            await store.append_move(move(ply, player="p2"))

        def timed_out(moves: int) -> RaceRecord:
            racers = [
                r.model_copy(update={"state": RacerState.TIMED_OUT, "moves": moves * (i == 1)})
                for i, r in enumerate(playing)
            ]
            return running.model_copy(update={"status": RaceStatus.FINISHED, "racers": racers})

        last: RaceRecord | None = running  # the record the store last wrote or read

        def expected() -> RaceRecord:  # that very record, or an equal one
            assert last is not None
            return last if compared == "by digest" else last.model_copy(deep=True)

        for behind in (0, 2):
            with pytest.raises(UncountedMovesError):
                await store.save_race_if(timed_out(behind), expected())
            last = await store.get_race(RaceId("r1"))
            assert last == running
        await store.append_move(move(3, player="p2"))  # a move stored meanwhile counts too
        with pytest.raises(UncountedMovesError):
            await store.save_race_if(timed_out(3), expected())
        assert await store.save_race_if(timed_out(4), expected())
        assert await store.get_race(RaceId("r1")) == timed_out(4)
        with pytest.raises(NotPlayingError):
            await store.append_move(move(4, player="p2"))
    finally:
        await store.close()


@pytest.mark.redis
@pytest.mark.parametrize("compared", ["by digest", "parsed"])
async def test_redis_puts_a_racer_out_with_more_moves_than_are_stored_as_it_is(
    redis_url: str, compared: str
) -> None:
    """A racer's list of moves that lost its tail (a key evicted, an older backup restored)
    holds fewer moves than the race counts: a record that puts the racer out with that count
    is taken as it is (refusing it would keep the race from ever ending). `compared`: as in
    the test above."""
    store = open_store(redis_url)
    await store.open()
    try:
        playing = [
            RacerRecord(player_id=PlayerId(p), name=p, state=RacerState.PLAYING, moves=2 * n)
            for n, p in enumerate(("p1", "p2"))
        ]
        running = race(status=RaceStatus.RUNNING, racers=playing)
        await seed(store, running)
        await store.append_move(move(0, player="p2"))  # the race counts two
        expected = running if compared == "by digest" else running.model_copy(deep=True)
        racers = [r.model_copy(update={"state": RacerState.TIMED_OUT}) for r in playing]
        timed_out = running.model_copy(update={"status": RaceStatus.FINISHED, "racers": racers})
        assert await store.save_race_if(timed_out, expected)
        assert await store.get_race(RaceId("r1")) == timed_out
    finally:
        await store.close()


@pytest.mark.redis
async def test_redis_takes_moves_in_a_race_stored_before_the_out_field(redis_url: str) -> None:
    """A race saved by an older node has no `out` field: its moves are taken as before."""
    store = open_store(redis_url)
    await store.open()
    try:
        await seed(store, race(status=RaceStatus.RUNNING))
        client: Any = aioredis.Redis.from_url(redis_url)
        try:
            assert await client.hdel("solrace:race:r1", "out") == 1
        finally:
            await client.aclose()
        await store.append_move(move(0))
        assert await store.get_moves(RaceId("r1")) == [move(0)]
    finally:
        await store.close()


# --- ratings (issue 6) -----------------------------------------------------------------------


def rating(player: str, mu: float = 25.0, races: int = 0, game: str = "klondike") -> RatingRecord:
    return RatingRecord(player_id=PlayerId(player), game=game, mu=mu, sigma=8.0, races=races)


def rated_race(
    race_id: str, changes: list[tuple[str, RatingRecord | None, RatingRecord]]
) -> RatingUpdate:
    return RatingUpdate(
        race_id=RaceId(race_id),
        game=changes[0][2].game,
        changes=[
            RatingChangeRecord(
                player_id=PlayerId(player),
                before=before,
                after=after,
                result=RecentResult(
                    race_id=RaceId(race_id),
                    game=after.game,
                    rank=rank,
                    racers=len(changes),
                    rating_before=1000,
                    rating_after=1000 + after.races,
                    at_ms=after.races,
                ),
            )
            for rank, (player, before, after) in enumerate(changes, start=1)
        ],
    )


async def test_a_rated_race_is_applied_once(store: Store) -> None:
    first = rated_race("r1", [("p1", None, rating("p1", 27, 1)), ("p2", None, rating("p2", 23, 1))])
    assert await store.apply_rating_update(first) is RatingOutcome.APPLIED
    assert await store.apply_rating_update(first) is RatingOutcome.ALREADY_APPLIED
    assert await store.get_ratings(PlayerId("p1")) == [rating("p1", 27, 1)]
    assert sorted(r.player_id for r in await store.list_ratings("klondike")) == ["p1", "p2"]
    assert await store.list_ratings("spider") == []
    assert [r.race_id for r in await store.get_recent_results(PlayerId("p2"), 10)] == ["r1"]


async def test_a_stale_rating_update_stores_nothing(store: Store) -> None:
    await store.apply_rating_update(rated_race("r1", [("p1", None, rating("p1", 27, 1))]))
    stale = rated_race("r2", [("p1", None, rating("p1", 30, 1)), ("p2", None, rating("p2"))])
    assert await store.apply_rating_update(stale) is RatingOutcome.STALE
    assert await store.get_ratings(PlayerId("p1")) == [rating("p1", 27, 1)]
    assert await store.get_ratings(PlayerId("p2")) == []
    fresh = rated_race(
        "r2", [("p1", rating("p1", 27, 1), rating("p1", 30, 2)), ("p2", None, rating("p2"))]
    )
    assert await store.apply_rating_update(fresh) is RatingOutcome.APPLIED
    assert [r.race_id for r in await store.get_recent_results(PlayerId("p1"), 10)] == ["r2", "r1"]
    assert [r.race_id for r in await store.get_recent_results(PlayerId("p1"), 1)] == ["r2"]


async def test_ratings_are_per_game(store: Store) -> None:
    await store.apply_rating_update(rated_race("r1", [("p1", None, rating("p1", 27, 1))]))
    spider = rating("p1", 20, 1, game="spider")
    await store.apply_rating_update(rated_race("r2", [("p1", None, spider)]))
    assert sorted(r.game for r in await store.get_ratings(PlayerId("p1"))) == ["klondike", "spider"]
    assert await store.list_ratings("spider") == [spider]


async def test_recent_results_are_trimmed(store: Store) -> None:
    before: RatingRecord | None = None
    for n in range(RECENT_RESULTS_KEPT + 3):
        after = rating("p1", 25, n + 1)
        await store.apply_rating_update(rated_race(f"r{n}", [("p1", before, after)]))
        before = after
    recent = await store.get_recent_results(PlayerId("p1"), 1000)
    assert len(recent) == RECENT_RESULTS_KEPT
    assert recent[0].race_id == f"r{RECENT_RESULTS_KEPT + 2}"


@pytest.mark.usefixtures("two_nodes")
async def test_two_nodes_rating_one_race_apply_it_once(open_another: StoreFactory) -> None:
    node_a, node_b = await open_another(), await open_another()
    update = rated_race("r1", [("p1", None, rating("p1", 27, 1)), ("p2", None, rating("p2"))])
    outcomes = await asyncio.gather(
        node_a.apply_rating_update(update), node_b.apply_rating_update(update)
    )
    assert sorted(outcomes) == sorted([RatingOutcome.APPLIED, RatingOutcome.ALREADY_APPLIED])
    assert len(await node_b.get_recent_results(PlayerId("p1"), 10)) == 1


async def test_a_finished_rated_race_waits_to_be_rated(store: Store) -> None:
    """The save that finishes a rated race also puts it among the races to rate, so that a
    crash before its rating loses nothing; the rating (or its settling, when it rates nobody)
    takes it out. Casual and cancelled races never wait."""
    running = {
        rid: race(rid, RaceStatus.RUNNING, rated=rid != "casual")
        for rid in ("r1", "casual", "r3", "r4")
    }
    await seed(store, *running.values())
    finished = {
        rid: r.model_copy(update={"status": RaceStatus.FINISHED}) for rid, r in running.items()
    }
    for rid in ("r1", "casual", "r3"):
        assert await store.save_race_if(finished[rid], running[rid])
    cancelled = running["r4"].model_copy(update={"status": RaceStatus.CANCELLED})
    assert await store.save_race_if(cancelled, running["r4"])
    # Saved again once finished (a later change of the record): still waiting once.
    later = finished["r1"].model_copy(update={"finished_at_ms": 9_000})
    assert await store.save_race_if(later, finished["r1"])
    assert await store.races_to_rate() == ["r1", "r3"]

    stale = rated_race("r1", [("p1", rating("p1", 20, 1), rating("p1", 27, 2))])
    assert await store.apply_rating_update(stale) is RatingOutcome.STALE
    assert await store.races_to_rate() == ["r1", "r3"]  # not rated: still waiting
    update = rated_race("r1", [("p1", None, rating("p1", 27, 1))])
    assert await store.apply_rating_update(update) is RatingOutcome.APPLIED
    assert await store.races_to_rate() == ["r3"]
    await store.rating_settled(RaceId("r3"))
    await store.rating_settled(RaceId("r3"))  # settling twice changes nothing
    assert await store.races_to_rate() == []

    # One found rated already (another node rated it after this one read the list) leaves too.
    await seed(store, race("r5", RaceStatus.FINISHED, rated=True))
    assert await store.races_to_rate() == ["r5"]
    done = rated_race("r5", [("p2", None, rating("p2", 27, 1))])
    assert await store.apply_rating_update(done) is RatingOutcome.APPLIED
    assert await store.apply_rating_update(done) is RatingOutcome.ALREADY_APPLIED
    assert await store.races_to_rate() == []


# --- tournaments (issue 6) -------------------------------------------------------------------


def tournament(
    tid: str = "t1", version: int = 1, phase: str = "registration", *, settled: bool = False
) -> TournamentRecord:
    return TournamentRecord(
        tournament_id=tid,
        version=version,
        phase=phase,
        created_at_ms=1_000,
        document=f'{{"v": {version}}}',
        settled=settled,
    )


async def test_a_tournament_is_saved_by_version(store: Store) -> None:
    assert await store.get_tournament("t1") is None
    assert await store.save_tournament(tournament(), None)
    assert not await store.save_tournament(tournament(), None)  # exists now
    assert not await store.save_tournament(tournament(version=3), 2)  # wrong version
    assert await store.get_tournament("t1") == tournament()
    assert await store.save_tournament(tournament(version=2, phase="running"), 1)
    assert await store.get_tournament("t1") == tournament(version=2, phase="running")
    assert not await store.save_tournament(tournament(version=2), 1)  # stale


async def test_the_open_tournaments_are_the_unsettled_ones_in_creation_order(
    store: Store,
) -> None:
    """What a node's start loads: every tournament not settled (finished ones that may still
    hold deals too), whatever the settled ones are; a save that settles one takes it out."""
    for tid in ("tb", "ta", "tc", "td"):
        await store.save_tournament(tournament(tid), None)
    await store.save_tournament(tournament("tb", 2, phase="running"), 1)
    await store.save_tournament(tournament("tc", 2, phase="finished"), 1)  # deals held
    await store.save_tournament(tournament("td", 2, phase="finished", settled=True), 1)
    assert [(t.tournament_id, t.version) for t in await store.list_open_tournaments()] == [
        ("tb", 2),
        ("ta", 1),
        ("tc", 2),
    ]
    versions = await store.open_tournament_versions()
    assert [(v.tournament_id, v.version, v.finished) for v in versions] == [
        ("tb", 2, False),
        ("ta", 1, False),
        ("tc", 2, True),
    ]
    orders = [v.order for v in versions]
    assert orders == sorted(orders) and len(set(orders)) == 3

    await store.save_tournament(tournament("tc", 3, phase="finished", settled=True), 2)
    assert [t.tournament_id for t in await store.list_open_tournaments()] == ["tb", "ta"]
    assert await store.get_tournament("tc") == tournament("tc", 3, "finished", settled=True)


async def test_a_settled_tournament_reopened_is_open_again_and_a_refused_save_moves_nothing(
    store: Store,
) -> None:
    """A correction can reopen a finished tournament: its save puts it back among the open
    ones and out of the finished ones. A save refused for its version (stale) changes
    neither the record nor where the store keeps it."""
    await store.save_tournament(tournament("ta"), None)
    await store.save_tournament(tournament("tb"), None)
    await store.save_tournament(tournament("ta", 2, "finished", settled=True), 1)
    assert not await store.save_tournament(tournament("ta", 2, "running"), 1)  # stale
    assert not await store.save_tournament(tournament("tb", 3, "finished", settled=True), 5)

    async def where() -> tuple[list[str], list[str]]:
        opened = [v.tournament_id for v in await store.open_tournament_versions()]
        finished, _ = await store.finished_tournament_versions(0, 10)
        return opened, [v.tournament_id for v in finished]

    assert await where() == (["tb"], ["ta"])
    assert [t.tournament_id for t in await store.list_open_tournaments()] == ["tb"]
    assert await store.get_tournament("ta") == tournament("ta", 2, "finished", settled=True)
    assert await store.get_tournament("tb") == tournament("tb")
    assert await store.save_tournament(tournament("ta", 3, "running"), 2)  # reopened
    assert await where() == (["ta", "tb"], [])
    assert [t.tournament_id for t in await store.list_open_tournaments()] == ["ta", "tb"]


async def test_finished_tournaments_are_read_page_by_page_newest_last(store: Store) -> None:
    """What a list reads: one page of the finished ones (settled or not), counted in all,
    never the documents; the unfinished ones are not among them."""
    for n in range(7):
        await store.save_tournament(tournament(f"t{n}"), None)
    for n in (0, 2, 3, 5, 6):  # t1 and t4 still run
        await store.save_tournament(tournament(f"t{n}", 2, "finished", settled=n != 6), 1)

    def ids(page: tuple[list[TournamentVersion], int]) -> tuple[list[str], int]:
        assert all(v.finished and v.version == 2 for v in page[0])
        orders = [v.order for v in page[0]]
        assert orders == sorted(orders)
        return [v.tournament_id for v in page[0]], page[1]

    assert ids(await store.finished_tournament_versions(0, 3)) == (["t3", "t5", "t6"], 5)
    assert ids(await store.finished_tournament_versions(3, 3)) == (["t0", "t2"], 5)
    assert ids(await store.finished_tournament_versions(1, 2)) == (["t3", "t5"], 5)
    assert ids(await store.finished_tournament_versions(0, 0)) == ([], 5)
    assert ids(await store.finished_tournament_versions(5, 3)) == ([], 5)
    assert ids(await store.finished_tournament_versions(9, 3)) == ([], 5)
    assert ids(await store.finished_tournament_versions(0, 99)) == (
        ["t0", "t2", "t3", "t5", "t6"],
        5,
    )


@pytest.mark.usefixtures("two_nodes")
async def test_two_nodes_advancing_one_tournament_get_one_true(
    open_another: StoreFactory,
) -> None:
    node_a, node_b = await open_another(), await open_another()
    await node_a.save_tournament(tournament(), None)
    won = await asyncio.gather(
        node_a.save_tournament(tournament(version=2, phase="a"), 1),
        node_b.save_tournament(tournament(version=2, phase="b"), 1),
    )
    assert sorted(won) == [False, True]
    stored = await node_b.get_tournament("t1")
    assert stored is not None and stored.phase == ("a" if won[0] else "b")


async def test_ratings_and_tournaments_survive_a_restart(
    store_url: str, open_another: StoreFactory
) -> None:
    if store_url == "memory:":
        pytest.skip("memory: keeps nothing across a restart, by design")
    first = await open_another()
    await first.apply_rating_update(rated_race("r1", [("p1", None, rating("p1", 27, 1))]))
    await first.save_tournament(tournament(), None)
    await seed(first, race("r9", RaceStatus.FINISHED, rated=True))  # a crash before its rating
    await first.close()
    again = await open_another()
    assert await again.races_to_rate() == ["r9"]
    assert await again.get_ratings(PlayerId("p1")) == [rating("p1", 27, 1)]
    assert len(await again.get_recent_results(PlayerId("p1"), 5)) == 1
    assert await again.list_open_tournaments() == [tournament()]
    update = rated_race("r1", [("p1", None, rating("p1", 27, 1))])
    assert await again.apply_rating_update(update) is RatingOutcome.ALREADY_APPLIED
