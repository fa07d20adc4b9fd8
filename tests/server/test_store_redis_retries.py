"""The `redis://` store's writes whose reply is lost after Redis ran them (server/store/
redis.py, redis_competition.py): the store tries again, and the retry recognises its own
earlier write as its success, not as someone else's (a name taken, a seq already stored, a
compare-and-set lost, a race rated already), and another node's write, which made Redis
refuse the earlier attempt, as not its own. A real redis-server behind `ReplyLosingProxy`,
which lets the write run, reads Redis's answer and closes the connection instead of passing
it on.

Each test checks the proxy did lose an answer: a test whose write never lost its reply would
prove nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from solrace.server.protocol.competition_records import RatingOutcome
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import RaceStatus
from solrace.server.store import NameTakenError, PlyConflictError
from solrace.server.store.redis import RedisStore
from tests.server.reply_losing_proxy import ReplyLosingProxy, reply_losing_proxy
from tests.server.test_store_contract import move, race, rated_race, rating, tournament

pytestmark = pytest.mark.redis


@pytest.fixture
async def proxy(redis_url: str) -> AsyncIterator[ReplyLosingProxy]:
    async with reply_losing_proxy(redis_url) as started:
        yield started


@pytest.fixture
async def store(proxy: ReplyLosingProxy) -> AsyncIterator[RedisStore]:
    opened = RedisStore(proxy.url)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


def assert_one_reply_lost(proxy: ReplyLosingProxy) -> None:
    assert proxy.lost == 1 and not proxy.is_armed, "no reply was lost: the test proves nothing"


async def test_a_player_whose_creation_reply_was_lost_is_created(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    proxy.lose_next_reply("EVALSHA")
    created = await store.create_player(PlayerId("p1"), "Ann", 1_000)
    assert_one_reply_lost(proxy)
    assert await store.get_player(PlayerId("p1")) == created
    # The name is the player's: another id still cannot have it, nor this one a second time.
    with pytest.raises(NameTakenError):
        await store.create_player(PlayerId("p2"), "ann", 2_000)
    with pytest.raises(NameTakenError):
        await store.create_player(PlayerId("p1"), "Ann", 1_000)


async def test_a_move_whose_reply_was_lost_is_stored_once(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    assert await store.save_race_if(race(status=RaceStatus.RUNNING), None)
    proxy.lose_next_reply("EVALSHA")
    await store.append_move(move(0))
    assert_one_reply_lost(proxy)
    assert await store.get_moves(RaceId("r1")) == [move(0)]
    with pytest.raises(PlyConflictError):  # sent again later, the seq is taken after all
        await store.append_move(move(0))


async def test_a_compare_and_set_by_digest_whose_reply_was_lost_is_won(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    """`expected` is the very record this store wrote last: compared by digest (a script)."""
    opened = race()
    assert await store.save_race_if(opened, None)
    running = race(status=RaceStatus.RUNNING)
    proxy.lose_next_reply("EVALSHA")
    assert await store.save_race_if(running, opened)
    assert_one_reply_lost(proxy)
    assert await store.get_race(RaceId("r1")) == running
    assert await store.list_races([RaceStatus.RUNNING]) == [running]


async def test_a_first_save_whose_exec_reply_was_lost_is_won(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    """No record expected: compared on parsed records, under WATCH/MULTI/EXEC."""
    opened = race()
    proxy.lose_next_reply("EXEC")
    assert await store.save_race_if(opened, None)
    assert_one_reply_lost(proxy)
    assert await store.get_race(RaceId("r1")) == opened
    assert await store.list_races([RaceStatus.OPEN]) == [opened]


async def test_a_compare_and_set_on_parsed_records_whose_exec_reply_was_lost_is_won(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    """`expected` equals the stored record but is another object (as a record another node
    wrote would be): compared on parsed records."""
    assert await store.save_race_if(race(), None)
    running = race(status=RaceStatus.RUNNING)
    proxy.lose_next_reply("EXEC")
    assert await store.save_race_if(running, race())
    assert_one_reply_lost(proxy)
    assert await store.get_race(RaceId("r1")) == running
    assert not await store.save_race_if(race(status=RaceStatus.CANCELLED), race())  # stale


async def test_a_tournament_save_whose_exec_reply_was_lost_is_won(
    store: RedisStore, proxy: ReplyLosingProxy
) -> None:
    proxy.lose_next_reply("EXEC")
    assert await store.save_tournament(tournament(), None)
    assert_one_reply_lost(proxy)
    proxy.lose_next_reply("EXEC")
    assert await store.save_tournament(tournament(version=2, phase="running"), 1)
    assert proxy.lost == 2
    assert await store.get_tournament("t1") == tournament(version=2, phase="running")
    assert [t.tournament_id for t in await store.list_open_tournaments()] == ["t1"]


@pytest.mark.parametrize("expected_version", [None, 1], ids=["creation", "change"])
async def test_a_tournament_save_refused_for_another_nodes_save_of_its_version_is_lost(
    store: RedisStore, proxy: ReplyLosingProxy, redis_url: str, expected_version: int | None
) -> None:
    """Another node saves the same version just before this store's EXEC (so Redis refuses
    it), and the refusal's reply is lost: the retry finds that version stored, but not by
    this call, so the save is a conflict (False) and the other node's record stands."""
    if expected_version is not None:
        assert await store.save_tournament(tournament(), None)
    version = 1 if expected_version is None else expected_version + 1
    other = RedisStore(redis_url)
    await other.open()
    try:
        theirs = tournament(version=version, phase="theirs")

        async def other_node_saves_first() -> None:
            assert await other.save_tournament(theirs, expected_version)

        proxy.before_next("EXEC", other_node_saves_first)
        proxy.lose_next_reply("EXEC")
        assert not await store.save_tournament(
            tournament(version=version, phase="ours"), expected_version
        )
        assert not proxy.is_hooked, "the other node never saved: the test proves nothing"
        assert_one_reply_lost(proxy)
        assert await store.get_tournament("t1") == theirs
        assert [t.tournament_id for t in await store.list_open_tournaments()] == ["t1"]
        # Loaded again, the change is saved over the other node's version.
        assert await store.save_tournament(tournament(version=version + 1), version)
        assert await other.get_tournament("t1") == tournament(version=version + 1)
    finally:
        await other.close()


async def test_a_rating_update_whose_exec_reply_was_lost_is_applied_by_this_call(
    store: RedisStore, proxy: ReplyLosingProxy, redis_url: str
) -> None:
    """APPLIED, not ALREADY_APPLIED: the node counts the races it rated (its leaderboard is
    read again at once) and says it rated this one. Another store applying it again, or this
    one, still gets ALREADY_APPLIED."""
    update = rated_race(
        "r1", [("p1", None, rating("p1", 27, 1)), ("p2", None, rating("p2", 23, 1))]
    )
    proxy.lose_next_reply("EXEC")
    assert await store.apply_rating_update(update) is RatingOutcome.APPLIED
    assert_one_reply_lost(proxy)
    assert await store.get_ratings(PlayerId("p1")) == [rating("p1", 27, 1)]
    assert [r.race_id for r in await store.get_recent_results(PlayerId("p2"), 10)] == ["r1"]
    assert await store.apply_rating_update(update) is RatingOutcome.ALREADY_APPLIED
    other = RedisStore(redis_url)
    await other.open()
    try:
        assert await other.apply_rating_update(update) is RatingOutcome.ALREADY_APPLIED
    finally:
        await other.close()
