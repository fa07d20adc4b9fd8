"""Tournaments stored before the stores kept the open and finished ones apart: a SQLite file
of schema version 1 (no `finished` and `settled` columns) and a Redis written without the
`tournaments-open` and `tournaments-finished` sets. Each is upgraded in place when opened,
from the stored records: a finished tournament is settled when its document notes no deal
held, and the others are open. Real files on disk, a real redis-server."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.store import SqliteStore, Store
from solrace.server.store.redis import RedisStore
from solrace.server.store.sqlite_competition import COMPETITION_SCHEMA
from solrace.server.store.sqlite_schema import SCHEMA, SCHEMA_VERSION
from tests.server.reply_losing_proxy import reply_losing_proxy

#: `tournaments` as schema version 1 made it.
VERSION_1_TOURNAMENTS = """
CREATE TABLE tournaments (
    tournament_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    record TEXT NOT NULL
)
"""

#: Id, phase and the document's `held_deals` note (None: a document from before it existed),
#: in creation order.
STORED: list[tuple[str, str, dict[str, int] | None]] = [
    ("t-running", "running", {}),
    ("t-done", "finished", {}),
    ("t-held", "finished", {"3": 7}),
    ("t-unnoted", "finished", None),
    ("t-new", "registration", {}),
]


def old_record_json(tid: str, phase: str, held: dict[str, int] | None) -> str:
    """A record's JSON as an older solrace wrote it: no `settled`."""
    document: dict[str, object] = {"name": tid}
    if held is not None:
        document["held_deals"] = held
    return json.dumps(
        {
            "tournament_id": tid,
            "version": 4,
            "phase": phase,
            "created_at_ms": 1_000,
            "document": json.dumps(document),
        }
    )


async def check_upgraded(store: Store) -> None:
    """The open ones are the unfinished ones and those that may hold deals; the finished ones
    are paged in creation order; a save that settles one takes it out of the open ones."""
    opened = [t.tournament_id for t in await store.list_open_tournaments()]
    assert opened == ["t-running", "t-held", "t-unnoted", "t-new"]
    versions = await store.open_tournament_versions()
    assert [(v.tournament_id, v.finished) for v in versions] == [
        ("t-running", False),
        ("t-held", True),
        ("t-unnoted", True),
        ("t-new", False),
    ]
    page, finished = await store.finished_tournament_versions(0, 10)
    assert [v.tournament_id for v in page] == ["t-done", "t-held", "t-unnoted"]
    assert finished == 3
    page, _ = await store.finished_tournament_versions(1, 1)
    assert [v.tournament_id for v in page] == ["t-held"]

    held = await store.get_tournament("t-held")
    assert held is not None and not held.settled
    released = held.model_copy(
        update={"version": 5, "document": json.dumps({"held_deals": {}}), "settled": True}
    )
    assert await store.save_tournament(released, 4)
    opened = [t.tournament_id for t in await store.list_open_tournaments()]
    assert opened == ["t-running", "t-unnoted", "t-new"]
    assert await store.get_tournament("t-held") == released


async def test_a_version_1_sqlite_file_gets_its_tournaments_indexed_in_place(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Upgraded in place when opened, which says so before it begins (a big file's upgrade
    takes a while: seconds per hundred thousand tournaments) and once it is done."""
    caplog.set_level(logging.INFO, logger="solrace.server.store")
    database = tmp_path / "v1.sqlite3"
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA + COMPETITION_SCHEMA)
        db.execute("DROP TABLE tournaments")
        db.execute(VERSION_1_TOURNAMENTS)
        for tid, phase, held in STORED:
            db.execute(
                "INSERT INTO tournaments (tournament_id, version, record) VALUES (?, 4, ?)",
                (tid, old_record_json(tid, phase, held)),
            )
        db.execute("PRAGMA user_version=1")

    store = SqliteStore(database)
    await store.open()
    try:
        said = [r.getMessage() for r in caplog.records if r.name == "solrace.server.store"]
        assert said[0].startswith(
            f"upgrading {database} from schema version 1 to {SCHEMA_VERSION} (once;"
        )
        assert said[1].startswith(f"upgraded {database} in ")
        await check_upgraded(store)
    finally:
        await store.close()
    caplog.clear()
    fresh = SqliteStore(tmp_path / "new.sqlite3")
    await fresh.open()
    await fresh.close()
    assert not [r for r in caplog.records if "upgrad" in r.getMessage()]  # nothing to upgrade
    with contextlib.closing(sqlite3.connect(database)) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT record FROM tournaments WHERE settled = 0 ORDER BY rowid"
        ).fetchall()
    assert version == SCHEMA_VERSION == 3
    assert "tournaments_open" in str(plan)  # the settled ones are not scanned


async def store_old_keys(client: aioredis.Redis) -> None:
    """`STORED` as an older solrace wrote it to Redis: each hash and the `tournaments` order,
    no open or finished set."""
    for order, (tid, phase, held) in enumerate(STORED, start=1):
        await client.hset(
            f"solrace:tournament:{tid}",
            mapping={"version": 4, "record": old_record_json(tid, phase, held), "writer": "older"},
        )
        await client.zadd("solrace:tournaments", {tid: order})
    await client.set("solrace:tournament-order", len(STORED))


@pytest.mark.redis
async def test_a_redis_written_before_the_tournament_sets_gets_them_filled(
    redis_url: str,
) -> None:
    """The keys an older solrace wrote (each tournament's hash, the `tournaments` order):
    the first node to read the open or finished ones fills the sets, once."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await store_old_keys(client)
        store = RedisStore(redis_url)
        await store.open()
        try:
            await check_upgraded(store)
        finally:
            await store.close()
        assert await client.get("solrace:tournament-indexes") == "1"

        # Filled once: a later node reads the sets as they are (here, t-new settled by hand
        # in them only, to tell a refill from none).
        await client.zrem("solrace:tournaments-open", "t-new")
        again = RedisStore(redis_url)
        await again.open()
        try:
            opened = [t.tournament_id for t in await again.list_open_tournaments()]
            assert opened == ["t-running", "t-unnoted"]
            created = TournamentRecord(
                tournament_id="t-later",
                version=1,
                phase="registration",
                created_at_ms=2_000,
                document="{}",
            )
            assert await again.save_tournament(created, None)
            versions = await again.open_tournament_versions()
            assert [v.tournament_id for v in versions] == ["t-running", "t-unnoted", "t-later"]
        finally:
            await again.close()
    finally:
        await client.aclose()


@pytest.mark.redis
@pytest.mark.parametrize("saved", ["changed", "created"])
async def test_a_save_by_another_node_during_the_redis_fill_stands(
    redis_url: str, saved: str
) -> None:
    """Another node saves while the first reader fills the sets: after the fill has read the
    records and queued its writes, before Redis runs them (its EXEC held back by a proxy).
    `changed`: t-running finishes, its deals released (settled): the fill, which read it
    running, must not put it back among the open ones. `created`: a new tournament, which
    the fill never read, stays open. Two clients on one real redis-server."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    other = RedisStore(redis_url)
    try:
        await store_old_keys(client)
        await other.open()
        if saved == "changed":
            record = TournamentRecord.model_validate_json(
                old_record_json("t-running", "finished", {})
            )
            change = record.model_copy(update={"version": 5, "settled": True})
            expected: int | None = 4
            opened = ["t-held", "t-unnoted", "t-new"]
            finished = ["t-running", "t-done", "t-held", "t-unnoted"]
        else:
            change = TournamentRecord(
                tournament_id="t-later",
                version=1,
                phase="registration",
                created_at_ms=2_000,
                document="{}",
            )
            expected = None
            opened = ["t-running", "t-held", "t-unnoted", "t-new", "t-later"]
            finished = ["t-done", "t-held", "t-unnoted"]

        async def other_node_saves() -> None:
            assert await other.save_tournament(change, expected)

        async with reply_losing_proxy(redis_url) as proxy:
            filling = RedisStore(proxy.url)
            await filling.open()
            try:
                proxy.before_next("EXEC", other_node_saves)
                listed = [t.tournament_id for t in await filling.list_open_tournaments()]
                assert not proxy.is_hooked, "the other node never saved: the test proves nothing"
            finally:
                await filling.close()
        assert listed == opened
        assert await client.zrange("solrace:tournaments-open", 0, -1) == opened
        assert await client.zrange("solrace:tournaments-finished", 0, -1) == finished
        assert await client.get("solrace:tournament-indexes") == "1"
        assert await other.get_tournament(change.tournament_id) == change
    finally:
        await other.close()
        await client.aclose()
