"""Hub CPU per move, without sockets: the server's own share of a move's cost.

Run: python bench/hub_bench.py [--store memory:|sqlite:] [--moves 2000] [--rounds 5]
    [--fold-every N] [--races N] [--profile]

Two racers in one casual Klondike race on a known deal; one of them clicks the stock again
and again (always legal, never stuck: the same kind of move `load.py` sends most). Each frame
goes through the codec, the hub, the store, the race machine and the encoder of every frame
sent, as on a live node, but into in-memory sessions, so the figure is the hub's CPU per move
with the transport (websockets, the event loop's socket work) left out. Each round is timed
twice: wall time and the process's CPU time.

By default the moves are played without a pause, so the race's progress batch (folded in
every `progress_interval_s`) is not folded while a round is timed. `--fold-every N` sets the
interval to a microsecond and lets the event loop run after every N moves until the batch's
timer has fired: its fold and the progress event to the other racer are timed
with the moves (1: a batch per move, as on a node with a thousand players, where a racer
rarely moves twice within 0.1 s). `--profile` prints cProfile's top functions (profiling
roughly doubles the times). `--races N` plays N such races side by side, one move in each in
turn (`--moves` counts the moves of all of them), and with `--fold-every` lets the loop run
after every N moves in each race: the node's timers for N races' batches, as on a node with
2N players.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_client, encode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
    StartRace,
)
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import open_store


class EncodingSession(Session):
    """Encodes what it is sent, as the WebSocket session does, and keeps the frames."""

    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.frames: list[bytes] = []

    def send(self, message: BaseModel) -> None:
        self.frames.append(encode(message))

    def send_frame(self, frame: bytes) -> None:
        self.frames.append(frame)

    def close(self, code: CloseCode, reason: str) -> None:
        return None


async def start_race(hub: Hub, number: int) -> tuple[EncodingSession, EncodingSession, RaceId]:
    """A started race of two new racers: the one who clicks the stock, the other, the race."""
    alice, bob = EncodingSession(2 * number + 1), EncodingSession(2 * number + 2)
    await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name=f"alice{number}"))
    await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name=f"bob{number}"))
    known = set(hub.races)
    await hub.handle(
        alice, CreateRace(game="klondike", seats=2, time_limit_s=3600, game_number="1002")
    )
    race_id = next(r for r in hub.races if r not in known)
    runtime = hub.races[race_id]
    await hub.handle(bob, JoinRace(race_id=race_id))
    await hub.handle(alice, StartRace(race_id=race_id))
    for _ in range(100):
        await hub.tick()
        if runtime.boards:
            break
        await asyncio.sleep(0.01)  # the countdown of 0 s still waits for the next tick
    return alice, bob, race_id


async def run(
    store_url: str, moves: int, rounds: int, fold_every: int, races: int, profile: bool
) -> None:
    if fold_every > 0:
        settings = Settings(countdown_s=0, store=store_url, progress_interval_s=1e-6)
    else:
        settings = Settings(countdown_s=0, store=store_url)
    store = open_store(store_url)
    await store.open()
    hub = Hub(store, settings, Metrics(), b"x" * 32)
    started = [await start_race(hub, n) for n in range(races)]
    runtimes = [hub.races[race_id] for _, _, race_id in started]
    sessions = [s for alice, bob, _ in started for s in (alice, bob)]
    total = (rounds + 2) * moves
    frames = [
        (alice, encode(MakeMove(race_id=race_id, seq=i // races, move="deal")))
        for i in range(total)
        for alice, _, race_id in (started[i % races],)
    ]

    async def play(batch: list[tuple[EncodingSession, bytes]]) -> tuple[float, float]:
        """Play `batch`: wall and CPU time per move (us)."""
        started, started_cpu = time.perf_counter(), time.process_time()
        for i, (session, frame) in enumerate(batch, 1):
            await hub.handle(session, decode_client(frame))
            if fold_every > 0 and i % (fold_every * races) == 0:
                for _ in range(100):  # the loop runs until the batches' timers fired
                    if all(runtime.fold_due is None for runtime in runtimes):
                        break
                    await asyncio.sleep(0)
        wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        return wall / len(batch) * 1e6, cpu / len(batch) * 1e6

    await play(frames[:moves])  # warm-up: caches, the event history filled
    sent = sum(len(s.frames) for s in sessions)
    # The best of several rounds: the machine is shared, and noise only ever adds time.
    timed = [await play(frames[moves * r : moves * (r + 1)]) for r in range(1, rounds + 1)]
    walls, cpus = sorted(t[0] for t in timed), sorted(t[1] for t in timed)
    frames_per_move = (sum(len(s.frames) for s in sessions) - sent) / (moves * rounds)
    middle = len(timed) // 2
    print(
        f"{store_url}, {races} race(s): {walls[0]:.1f} us/move best of {rounds} rounds of {moves} "
        f"(median {walls[middle]:.1f}; CPU best {cpus[0]:.1f}, median {cpus[middle]:.1f}; "
        f"{frames_per_move:.1f} frames sent per move)"
    )
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        await play(frames[moves * (rounds + 1) :])
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store", default="memory:", help="memory: or sqlite:PATH (default a temp)"
    )
    parser.add_argument("--moves", type=int, default=2000, help="moves per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--fold-every",
        type=int,
        default=0,
        help="fold the progress batch after every N moves (0: never while timed)",
    )
    parser.add_argument(
        "--races", type=int, default=1, help="races played side by side (default 1)"
    )
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.store
        if url == "sqlite:":
            url = f"sqlite:{Path(tmp) / 'bench.sqlite3'}"
        asyncio.run(run(url, args.moves, args.rounds, args.fold_every, args.races, args.profile))


if __name__ == "__main__":
    main()
