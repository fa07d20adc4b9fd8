"""The tournament service's tick when nothing is due: what it costs each running tournament.

Run: python bench/tournament_tick.py [--players 256 64] [--ticks 50] [--away 8] [--profile]
     [--finished 0 1000 10000] [--open 100 1000]

For each player count, a Swiss (rounds as the server sets them: ceil(log2 N)) on the SQLite
store in a temporary folder, built in-process through the service as a node builds it: the
admin creates it, every player says hello and joins, the admin starts it, and every round but
the last is fed its results (one save per round, through the service's one way to change a
tournament), so the last round runs with its races opened on the hub. Two cases:

- `present`: every player is connected and has been marked present (the steady state);
- `away`: `--away` players left before the last round started, so they are absent and not
  connected, and their no-show grace (120 s) has not passed: the tick looks for them and
  finds nothing to do.

Then `TournamentService.tick()` is timed `--ticks` times (the node's timer calls it once a
second): wall time per tick, and the event loop thread's CPU time per tick (the stall every
move on the node waits out; the SQLite store reads in a worker thread). The tick's own first
call (which marks the players present) is left out. Figures are best and median.

With `--finished N ...`, the `present` case is also timed on several nodes' terms: the store
is a `redis-server` the bench starts (in the temporary folder; AOF as `topologies.py` runs
it), the hub has a broker (so the tick reads the stored versions first: another node may
have saved a version not announced here), and the store holds N finished, settled
tournaments besides the running Swiss (small documents: the tick never loads a finished one,
the question is whether their versions are read).

With `--open N ...`, the same on Redis with N more tournaments open beside the Swiss (created
through the service after it, in registration: the node holds them all, and the tick reads
every open tournament's version).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import statistics
import tempfile
import time
from pathlib import Path

from load import stop_process
from pydantic import BaseModel
from topologies import start_redis

from solrace.server.broker import MemoryBroker
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello
from solrace.server.protocol.swiss import swiss_round_count
from solrace.server.protocol.tournament_events import TournamentEvent
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    JoinTournament,
    TournamentAdmin,
)
from solrace.server.protocol.tournament_model import RaceResult
from solrace.server.protocol.tournament_state import Phase
from solrace.server.ratings import RatingService
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import open_store
from solrace.server.tournament_host import HubRaceHost
from solrace.server.tournament_live import Command, Live
from solrace.server.tournaments import TournamentService

TOKEN = "bench-admin-token"


class QuietSession(Session):
    """A connected client that drops what it is sent (the bench times the server only)."""

    def send(self, message: BaseModel) -> None:
        return None

    def send_frame(self, frame: bytes) -> None:
        return None

    def close(self, code: CloseCode, reason: str) -> None:
        return None


def play_round(rng: random.Random, now: float) -> Command:
    """The command that records a result for every pending race of the current round."""

    def command(live: Live) -> list[TournamentEvent]:
        t = live.tournament
        events: list[TournamentEvent] = []
        for match in list(t.live_matches()):
            if match.pending_race is None:
                continue
            order = list(match.racing)
            rng.shuffle(order)
            cards = {p: 52 - 4 * i for i, p in enumerate(order)}  # no ties
            result = RaceResult.from_order(order, cards)
            events += t.record_race(match.match_id, match.pending_race, result, now=now)
        return events

    return command


async def build(
    tmp: Path,
    players: int,
    away: int,
    seed: int,
    redis: str | None = None,
    finished: int = 0,
    opened: int = 0,
) -> tuple[TournamentService, Hub, str, int]:
    """A running Swiss of `players` in its last round (`away` of them gone before it
    started): the service, its hub, the tournament id and its document's size. With `redis`
    (a URL), on that Redis with a broker (several nodes), `finished` finished tournaments
    stored first and `opened` tournaments in registration created after the Swiss."""
    url = redis or f"sqlite:{tmp / f'bench-{players}-{away}.sqlite3'}"
    settings = Settings(store=url, countdown_s=0, admin_token=TOKEN)
    store = open_store(url)
    await store.open()
    for n in range(finished):
        done = TournamentRecord(
            tournament_id=f"tdone{n}",
            version=9,
            phase=Phase.FINISHED.value,
            created_at_ms=0,
            document="{}",
            settled=True,  # its deals released: nothing left to do at a start
        )
        await store.save_tournament(done, None)
    broker = MemoryBroker() if redis else None
    hub = Hub(store, settings, Metrics(), b"x" * 32, broker=broker)
    # Not started (no timer: the bench ticks it), so no restart's grace holds the tick back.
    service = TournamentService(HubRaceHost(hub, broker), RatingService(store), random.Random(seed))
    hub.plug_in(handlers=service.handlers, race_finished=service.race_finished)
    admin = QuietSession(0)
    await hub.handle(admin, Hello(protocol=PROTOCOL_VERSION, name="director"))
    await hub.handle(
        admin,
        CreateTournament(
            admin_token=TOKEN,
            name=f"swiss-{players}",
            game="klondike",
            format="swiss",
            check_in_required=False,
            no_show_grace_s=120,
        ),
    )
    (tid,) = service.live
    sessions = [QuietSession(i) for i in range(1, players + 1)]
    for session in sessions:
        await hub.handle(session, Hello(protocol=PROTOCOL_VERSION, name=f"p{session.session_id}"))
        await hub.handle(session, JoinTournament(tournament_id=tid))
    await hub.handle(admin, TournamentAdmin(tournament_id=tid, admin_token=TOKEN, act="start"))
    rng = random.Random(seed)
    live = service.live[tid]
    last = swiss_round_count(live.tournament.settings.rules, players)
    while len(live.tournament.rounds) < last:
        await service.tick()  # marks the connected players present, as the timer would
        if len(live.tournament.rounds) == last - 1:
            for session in sessions[:away]:  # gone before the last round starts
                await hub.disconnected(session)
        live = await service._mutate(tid, play_round(rng, service._now()))
    for n in range(opened):
        await hub.handle(
            admin,
            CreateTournament(admin_token=TOKEN, name=f"open-{n}", game="klondike", format="swiss"),
        )
    live = service.live[tid]
    assert live.tournament.phase is Phase.RUNNING
    return service, hub, tid, len(live.document())


async def run(
    players: int,
    away: int,
    ticks: int,
    profile: bool,
    seed: int,
    finished: int | None = None,
    opened: int = 0,
) -> None:
    """Time the ticks of one case: on SQLite, or (`finished` not None) on a Redis the bench
    starts, with a broker, that many finished tournaments stored and `opened` open ones."""
    with tempfile.TemporaryDirectory() as folder:
        if finished is None:
            await time_ticks(Path(folder), players, away, ticks, profile, seed)
            return
        redis, url = start_redis(Path(folder) / "redis")
        try:
            await time_ticks(
                Path(folder), players, away, ticks, profile, seed, url, finished, opened
            )
        finally:
            stop_process(redis)


async def time_ticks(
    folder: Path,
    players: int,
    away: int,
    ticks: int,
    profile: bool,
    seed: int,
    redis: str | None = None,
    finished: int = 0,
    opened: int = 0,
) -> None:
    service, hub, tid, size = await build(folder, players, away, seed, redis, finished, opened)
    await service.tick()  # marks the last round's connected players present
    live = service.live[tid]
    walls, cpus = [], []
    for _ in range(ticks):
        wall, cpu = time.perf_counter(), time.thread_time()
        await service.tick()
        cpus.append((time.thread_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    assert service.live[tid].version == live.version, "a tick changed the tournament"
    absent = sum(1 for m in live.tournament.live_matches() for p in m.racing if p not in m.present)
    case = f"away {away}" if away else "present"
    if redis:
        case += f", Redis, {finished} finished, {opened} more open"
    print(
        f"swiss {players:>3} players, round {len(live.tournament.rounds)}, {case:<8}"
        f" ({absent} absent), document {size / 1024:,.0f} KiB:"
        f" tick wall {min(walls):.2f} ms best, {statistics.median(walls):.2f} median;"
        f" loop CPU {min(cpus):.2f} ms best, {statistics.median(cpus):.2f} median"
    )
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(ticks):
            await service.tick()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    await hub.stop()
    await service.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--players", type=int, nargs="+", default=[256, 64], help="tournament sizes to time"
    )
    parser.add_argument("--ticks", type=int, default=50, help="ticks timed per case")
    parser.add_argument("--away", type=int, default=8, help="players gone (the away case)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the results fed in")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the ticks")
    parser.add_argument(
        "--finished",
        type=int,
        nargs="*",
        default=[],
        help="also time the present case on Redis with a broker, with each number of finished"
        " tournaments stored",
    )
    parser.add_argument(
        "--open",
        type=int,
        nargs="*",
        default=[],
        help="also time the present case on Redis with a broker, with each number of more"
        " tournaments open (in registration)",
    )
    args = parser.parse_args()
    for players in args.players:
        for away in (0, args.away):
            asyncio.run(run(players, away, args.ticks, args.profile, args.seed))
        for finished in args.finished:
            asyncio.run(run(players, 0, args.ticks, args.profile, args.seed, finished))
        for opened in args.open:
            asyncio.run(run(players, 0, args.ticks, args.profile, args.seed, 0, opened))


if __name__ == "__main__":
    main()
