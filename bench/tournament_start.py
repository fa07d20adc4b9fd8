"""A node's start, and its tournament list, with many finished tournaments stored.

Run: python bench/tournament_start.py [--finished 0 1000 10000] [--store sqlite redis]
     [--players 16]

For each store and each number N, a store (SQLite in a temporary folder, or a `redis-server`
the bench starts, AOF as `topologies.py` runs it) is filled with N finished tournaments and
one in registration. Each finished one is a real document, as the service saves it: a single
elimination of `--players` players whose director dropped every player but one, so its first
round is played out by forfeits (its deals released: nothing left to do at a start). Then, as
a restarted node: the store is opened again, a hub (not started) and its tournament service
are built, and timed:

- `start`: `TournamentService.start()` (what a node's start does for tournaments), wall time,
  and the most Python memory it had allocated at once (tracemalloc's peak, in a second start
  of its own);
- `list`: a `list_tournaments` request, the first (summaries made) and the second (kept),
  and how many summaries the service then keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from load import stop_process
from pydantic import BaseModel
from topologies import start_redis

from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import PlayerId, TournamentId
from solrace.server.protocol.tournament_messages import ListTournaments, TournamentList
from solrace.server.protocol.tournament_model import Format, FormatRules
from solrace.server.protocol.tournament_state import Phase, TournamentSettings
from solrace.server.ratings import RatingService
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import Store, open_store
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournament_live import Live
from solrace.server.tournaments import TournamentService

DIRECTOR = PlayerId("director")


class KeptSession(Session):
    """A client whose last message is kept (the list's answer)."""

    last: BaseModel | None = None

    def send(self, message: BaseModel) -> None:
        self.last = message

    def send_frame(self, frame: bytes) -> None:
        return None

    def close(self, code: CloseCode, reason: str) -> None:
        return None


def deal(round_number: int, race_number: int) -> str:
    return "1002"


def tournament_record(tid: str, players: int, finished: bool) -> TournamentRecord:
    """A single elimination of `players` as the service stores it: in registration, or
    finished (every player but the first dropped by the director)."""
    settings = TournamentSettings(FormatRules(Format.SINGLE_ELIMINATION), check_in_required=False)
    t = Tournament.create(
        TournamentId(tid), "klondike", settings, admin=DIRECTOR, now=0.0, deal_source=deal
    )
    field = [PlayerId(f"p{n}") for n in range(players)]
    names = {str(p): f"player {p}" for p in field}
    if finished:
        for player in field:
            t.register(player, now=1.0)
        t.start(DIRECTOR, now=2.0)
        for player in field[1:]:
            t.drop(player, actor=DIRECTOR, now=3.0)
        assert t.phase is Phase.FINISHED
    live = Live(t, version=3, name=tid, time_limit_s=60, created_at_ms=0, names=names)
    return live.to_record()


async def fill(url: str, finished: int, players: int) -> int:
    """Store `finished` finished tournaments and one in registration: a finished document's
    size."""
    store = open_store(url)
    await store.open()
    try:
        opening: Any = getattr(store, "list_open_tournaments", None)
        if opening is not None:  # as a first node's start on the empty store
            await opening()
        size = 0
        for n in range(finished):
            record = tournament_record(f"tdone{n}", players, finished=True)
            size = len(record.document)
            assert await store.save_tournament(record, None)
        assert await store.save_tournament(tournament_record("tnew", players, False), None)
        return size
    finally:
        await store.close()


async def node(url: str) -> tuple[Store, Hub, TournamentService]:
    store = open_store(url)
    await store.open()
    settings = Settings(store=url, countdown_s=0)
    hub = Hub(store, settings, Metrics(), b"x" * 32)
    service = TournamentService(HubRaceHost(hub, None), RatingService(store), random.Random(1))
    hub.plug_in(handlers=service.handlers, race_finished=service.race_finished)
    return store, hub, service


async def close(store: Store, hub: Hub, service: TournamentService) -> None:
    await service.stop()
    await hub.stop()
    await store.close()


async def measure(url: str, finished: int, players: int, label: str) -> None:
    size = await fill(url, finished, players)

    store, hub, service = await node(url)
    began = time.perf_counter()
    await service.start()
    start_s = time.perf_counter() - began
    assert list(service.live) == ["tnew"], list(service.live)
    lister = KeptSession(1)
    await hub.handle(lister, Hello(protocol=PROTOCOL_VERSION, name="lister"))
    lists = []
    for _ in range(2):
        began = time.perf_counter()
        await hub.handle(lister, ListTournaments())
        lists.append(time.perf_counter() - began)
    answer = lister.last
    assert isinstance(answer, TournamentList), answer
    listed, more = len(answer.tournaments), answer.more
    kept = len(service._summaries)
    await close(store, hub, service)

    store, hub, service = await node(url)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    await service.start()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    await close(store, hub, service)

    print(
        f"{label:<6} {finished:>6,} finished ({size / 1024:.1f} KiB each):"
        f" start {start_s * 1000:,.1f} ms, peak {peak / 2**20:,.2f} MiB;"
        f" list (of {listed}, {more:,} more) {lists[0] * 1000:,.1f} ms first,"
        f" {lists[1] * 1000:,.1f} ms again; {kept:,} summaries kept"
    )


async def run(store: str, finished: int, players: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        if store == "sqlite":
            await measure(f"sqlite:{Path(folder) / 'bench.sqlite3'}", finished, players, store)
            return
        redis, url = start_redis(Path(folder) / "redis")
        try:
            await measure(url, finished, players, store)
        finally:
            stop_process(redis)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--finished", type=int, nargs="+", default=[0, 1000, 10000], help="finished tournaments"
    )
    parser.add_argument(
        "--store", nargs="+", choices=["sqlite", "redis"], default=["sqlite", "redis"]
    )
    parser.add_argument(
        "--players", type=int, default=16, help="players of each finished tournament"
    )
    args = parser.parse_args()
    for store in args.store:
        for finished in args.finished:
            asyncio.run(run(store, finished, args.players))


if __name__ == "__main__":
    main()
