"""The tick's read of the open tournaments' versions on a real Redis: every open tournament,
in creation order, read as one reply however many there are (the client parsed four
replies a tournament on the event loop: 28-46 ms for 1,000 open)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.store import open_store
from solrace.server.store.redis import RedisStore

pytestmark = pytest.mark.redis


def tournament(
    tid: str, version: int = 1, phase: str = "registration", *, settled: bool = False
) -> TournamentRecord:
    return TournamentRecord(
        tournament_id=tid,
        version=version,
        phase=phase,
        created_at_ms=1_000,
        document=f'{{"v": {version}}}',
        settled=settled,
    )


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    opened = open_store(redis_url)
    assert isinstance(opened, RedisStore)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


async def test_the_open_versions_come_in_one_reply_whatever_their_number(
    store: RedisStore,
) -> None:
    assert await store.open_tournament_versions() == []
    ids = [f"t{n:03d}" for n in range(300)]
    for tid in ids:
        assert await store.save_tournament(tournament(tid), None)
    for tid in ids[:100]:  # running
        assert await store.save_tournament(tournament(tid, 2, "running"), 1)
    for tid in ids[100:110]:  # finished, deals still held: open
        assert await store.save_tournament(tournament(tid, 2, "finished"), 1)
    for tid in ids[110:200]:  # settled: not open
        assert await store.save_tournament(tournament(tid, 2, "finished", settled=True), 1)

    versions = await store.open_tournament_versions()
    assert [(v.tournament_id, v.version, v.finished) for v in versions] == [
        *((tid, 2, False) for tid in ids[:100]),
        *((tid, 2, True) for tid in ids[100:110]),
        *((tid, 1, False) for tid in ids[200:]),
    ]
    orders = [v.order for v in versions]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)

    keys = [store._key("tournaments-open"), store._key("tournaments-finished")]
    reply = await store._scripts["open_versions"](keys, [store._key("tournament", "")])
    assert isinstance(reply, str)  # one bulk text, not four replies per tournament
