"""The notice nodes exchange after a tournament change (server/tournament_relay.py): it
reads back as written, ignores fields a newer node adds, and one that does not read is None
(a gap for the reader) instead of an error; the relay hands on other nodes' notices and
gaps."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

import pytest

from solrace.server.broker import MemoryBroker
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.tournament_messages import TournamentRace
from solrace.server.tournament_relay import CHANNEL, ChangeNotice, TournamentRelay
from tests.server.refusing_redis import refusing_broker


def race_notice() -> TournamentRace:
    return TournamentRace(
        tournament_id="t1",
        match_id="r1-m1",
        round=1,
        race_number=0,
        race_id=RaceId("t1-1"),
        players=[PlayerId("p1"), PlayerId("p2")],
    )


def test_a_notice_reads_back_as_written() -> None:
    notice = ChangeNotice(tournament_id="t1", version=7, node="n1", races=[race_notice()])
    assert ChangeNotice.decode(notice.encode()) == notice


def test_a_field_a_newer_node_adds_is_ignored() -> None:
    raw = json.loads(ChangeNotice(tournament_id="t1", version=2, node="n2").encode())
    raw["added_later"] = {"x": 1}
    decoded = ChangeNotice.decode(json.dumps(raw).encode())
    assert decoded == ChangeNotice(tournament_id="t1", version=2, node="n2")


def test_a_notice_that_does_not_read_is_none() -> None:
    for data in (b"not json", b"[]", b'{"tournament_id": "t1", "version": "seven", "node": 1}'):
        assert ChangeNotice.decode(data) is None


async def test_another_node_s_notice_is_handed_on_and_a_bad_one_is_a_gap() -> None:
    """Two nodes' relays on one broker: each hands on the other's notices, not its own; a
    notice that does not read (a node of another version, a stray publisher) is a gap, so
    the reader reloads what it shows instead of missing a change."""
    broker = MemoryBroker()
    heard: dict[str, asyncio.Queue[ChangeNotice | None]] = {}
    relays = {}
    for node in ("n1", "n2"):
        queue: asyncio.Queue[ChangeNotice | None] = asyncio.Queue()
        heard[node] = queue
        relays[node] = TournamentRelay(broker, node, _put_into(queue))
        await relays[node].start()
    try:
        await relays["n1"].publish("t1", 3, [race_notice()])
        got = await asyncio.wait_for(heard["n2"].get(), 5.0)
        assert got == ChangeNotice(tournament_id="t1", version=3, node="n1", races=[race_notice()])
        await broker.publish(CHANNEL, b"not a notice")
        for node in ("n1", "n2"):  # the gap reaches both; n1's own notice never reached n1
            assert await asyncio.wait_for(heard[node].get(), 5.0) is None
            assert heard[node].empty()
    finally:
        for relay in relays.values():
            await relay.stop()


@pytest.mark.redis
async def test_a_notice_redis_refuses_is_logged_not_raised(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The change is saved before its notice: Redis refusing the notice (NOPERM here, a
    replica's READONLY after a failover) is a warning, as when it is away, not an error for
    whoever made the change."""
    async with refusing_broker(redis_url) as broker:
        relay = TournamentRelay(broker, "n1", _put_into(asyncio.Queue()))
        with caplog.at_level(logging.WARNING, logger="solrace.server.tournament_relay"):
            await relay.publish("t1", 3, [race_notice()])
    [said] = caplog.records
    assert said.name == "solrace.server.tournament_relay"
    assert said.getMessage().startswith(
        "tournament t1: change not announced: message on tournaments not published"
    )


def _put_into(
    queue: asyncio.Queue[ChangeNotice | None],
) -> Callable[[ChangeNotice | None], Awaitable[None]]:
    async def put(notice: ChangeNotice | None) -> None:
        queue.put_nowait(notice)

    return put
