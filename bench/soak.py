"""Soak: races and the rest of a node's life played against it for minutes, watching its memory.

The node (or several nodes) lives through races back to back and everything else it sees.

Run: python bench/soak.py --minutes 5 --lanes 6 --out bench/results/soak
     python bench/soak.py --minutes 8 --lanes 2 \
         --mix watch,lobby,drop,private,rated,tournament,refused

Each lane does one kind of thing over and over until the end of the run:

- `race` (`--lanes` of them): four bots (greedy strategy, no delay between moves) connect with
  the identity they had in the lane's previous race, one creates a 4-seat casual Klondike
  race, the others join, it starts, and all play until the race ends (a bot resigns after
  `--max-moves`).
- `--mix` adds one lane of each kind it names (a kind named twice gets two lanes):
  - `watch`: an anonymous spectator lists the races, watches a running one for a moment,
    then unwatches it and follows the lobby before saying goodbye, or (every other time)
    drops its connection without a word.
  - `lobby`: an anonymous visitor follows the lobby for 2 s, stops following, polls
    the race list, the tournament list and a leaderboard, and closes.
  - `drop`: a 2-seat race of two new players (new names each time); one closes its
    connection mid-race and comes back on a new one with its token, or (every other time)
    never comes back and forfeits when its grace (`--grace-s`) runs out.
  - `private`: a 2-seat race with an invite code; the joiner is refused without the code
    first, then joins with it.
  - `rated`: a 2-seat rated race of the same two players each time, then their profile and
    the leaderboard.
  - `tournament`: a 4-player single elimination played by bots (the same four each time)
    and watched by a spectator who leaves (or drops) before it ends.
  - `refused`: connections the server closes: a text frame (1003), bytes that are not
    msgpack (1007), a frame over the size cap (1009), a forged token (4001), a flood of pings
    (1008); a frame of the wrong shape gets an error reply on a connection that stays open.

The server is a subprocess on a fresh data folder (`--nodes 2` starts two on the same Redis
store, `--store redis://...`; lanes take the nodes in turn). Every `--every` seconds the
script prints what the lanes have done so far and each node's resident memory, open file
descriptors, asyncio tasks, races held (from `/metrics`) and CPU; at the end, the memory
growth between the first sample after the warm-up and the last. A leak (races, sessions,
spectators or tasks kept after their use) shows as memory, tasks or races held growing with
the work done; a crash, a refusal that does not come or a race that never ends stops the run
with an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from load import cpu_seconds, free_port, server_env, start_process, stop_process, wait_port
from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from solrace.client.bots import Bot, BotRefusedError, BotResult
from solrace.client.connection import Connection
from solrace.client.strategy import make_strategy
from solrace.client.tournament_bots import play_tournament
from solrace.server.protocol.codec import decode_server, encode, encode_raw
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Error,
    Hello,
    ListRaces,
    Ping,
    RaceList,
    RaceSnapshot,
    Sync,
    Unwatch,
    Watch,
    Welcome,
)
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    ListTournaments,
    Profile,
    TournamentAdmin,
    TournamentList,
    TournamentView,
    UnwatchTournament,
    WatchTournament,
)

M = TypeVar("M", bound=BaseModel)

SEATS = 4
ADMIN_TOKEN = "soak-admin-token"
#: The rate budget of each connection: far above what a bot spends (bots keep inside the
#: budget the welcome gives), low enough for the `refused` lane's flood to spend it.
RATE_CAPACITY, RATE_REFILL_PER_S = 1000, 200
MIX_KINDS = ("watch", "lobby", "drop", "private", "rated", "tournament", "refused")
WAIT_S = 30.0  # for any one answer; a race or a tournament has longer


@dataclass
class Tally:
    races: int = 0
    moves: int = 0
    states: dict[str, int] = field(default_factory=dict)
    #: Rounds done by each kind of lane (`race`: races).
    cycles: dict[str, int] = field(default_factory=dict)
    #: Close codes the server gave the `refused` lane's connections.
    closes: dict[int, int] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        self.cycles[kind] = self.cycles.get(kind, 0) + 1


@dataclass
class Lane:
    url: str
    index: int
    max_moves: int
    stop: asyncio.Event
    tally: Tally


# --- probing the server --------------------------------------------------------------------


def memory_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def metric_values(port: int) -> dict[str, float]:
    """The node's `/metrics`, each sample line as name{labels} -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def races_held(values: dict[str, float]) -> int:
    return int(sum(v for k, v in values.items() if k.startswith("solrace_races{")))


# --- lanes ---------------------------------------------------------------------------------


def bot(lane: Lane, name: str, seed: int, token: str | None = None) -> Bot:
    strategy = make_strategy("greedy", seed=seed, max_moves=lane.max_moves)
    connection = Connection(lane.url, name=name, token=token)
    return Bot(lane.url, name, strategy, delay_s=0.0, connection=connection)


def tally_results(lane: Lane, race_id: RaceId, results: list[BotResult]) -> None:
    for result in results:
        if result.state in ("playing", "unknown"):
            raise RuntimeError(f"race {race_id} ended with {result.name} {result.state}")
        lane.tally.states[result.state] = lane.tally.states.get(result.state, 0) + 1
        lane.tally.moves += result.moves


async def race_between(lane: Lane, bots: list[Bot], **options: object) -> RaceId:
    """The first bot creates a race for all of them (casual unless `options` say), the others
    join, it starts, and all play it to its end."""
    race_id = await bots[0].create("klondike", len(bots), 300, **options)
    for each in bots[1:]:
        await each.join(race_id, invite_code=options.get("invite_code"))  # type: ignore[arg-type]
    await bots[0].start()
    async with asyncio.timeout(300):
        results = await asyncio.gather(*(each.play() for each in bots))
    tally_results(lane, race_id, list(results))
    return race_id


async def with_bots(bots: list[Bot], tokens: list[str | None] | None = None) -> None:
    """Connect the bots; note each one's token (and name) in `tokens` for its next round."""
    await asyncio.gather(*(each.connect() for each in bots))
    if tokens is not None:
        for seat, each in enumerate(bots):
            welcome = each.conn.welcome
            assert welcome is not None
            tokens[seat] = welcome.token


async def close_all(bots: list[Bot]) -> None:
    await asyncio.gather(*(each.close() for each in bots), return_exceptions=True)


async def rounds_of(
    lane: Lane, prefix: str, seats: int, one_round: Callable[[list[Bot]], Awaitable[None]]
) -> None:
    """Round after round of the same `seats` identities (named after `prefix`): each round
    connects them again with their tokens, runs `one_round` and closes them."""
    tokens: list[str | None] = [None] * seats
    names = [f"{prefix}{lane.index}x{seat}" for seat in range(seats)]
    number = 0
    while not lane.stop.is_set():
        bots = [bot(lane, names[s], lane.index * 1000 + number, tokens[s]) for s in range(seats)]
        try:
            await with_bots(bots, tokens)
            names = [each.name for each in bots]
            await one_round(bots)
        finally:
            await close_all(bots)
        number += 1


async def race_lane(lane: Lane) -> None:
    """Race after race with the same four identities."""

    async def one_round(bots: list[Bot]) -> None:
        await race_between(lane, bots)
        lane.tally.races += 1
        lane.tally.count("race")

    await rounds_of(lane, "soak", SEATS, one_round)


async def rated_lane(lane: Lane) -> None:
    """Rated races of the same two players, then their profile and the leaderboard."""

    async def one_round(bots: list[Bot]) -> None:
        await race_between(lane, bots, rated=True)
        await bots[0].request(GetProfile(), lambda m: isinstance(m, Profile), WAIT_S)
        await bots[1].request(
            GetLeaderboard(game="klondike"), lambda m: isinstance(m, Leaderboard), WAIT_S
        )
        lane.tally.count("rated")

    await rounds_of(lane, "rated", 2, one_round)


async def private_lane(lane: Lane) -> None:
    """Private races: the joiner is refused without the code, then joins with it."""

    async def one_round(bots: list[Bot]) -> None:
        code = secrets.token_hex(4)
        race_id = await bots[0].create("klondike", 2, 300, invite_code=code)
        try:
            await bots[1].join(race_id)
            raise RuntimeError(f"private race {race_id} let a player in without its code")
        except BotRefusedError:
            pass
        await bots[1].join(race_id, invite_code=code)
        await bots[0].start()
        async with asyncio.timeout(300):
            results = await asyncio.gather(*(each.play() for each in bots))
        tally_results(lane, race_id, list(results))
        lane.tally.count("private")

    await rounds_of(lane, "private", 2, one_round)


async def drop_lane(lane: Lane) -> None:
    """Races of two new players each time, one of whom drops mid-race: back on a new
    connection with its token, or (every other race) gone for good, forfeited at its grace's
    end (the other plays on, and the race ends then)."""
    number = 0
    while not lane.stop.is_set():
        names = [f"drop{lane.index}n{number}x{seat}" for seat in range(2)]
        bots = [bot(lane, names[s], lane.index * 1000 + number, None) for s in range(2)]
        comes_back = number % 2 == 0
        try:
            await with_bots(bots)
            race_id = await bots[0].create("klondike", 2, 300)
            await bots[1].join(race_id)
            await bots[0].start()
            async with asyncio.timeout(300):
                staying = asyncio.create_task(bots[1].play())
                first = asyncio.create_task(bots[0].play())
                await asyncio.sleep(0.2)  # some moves in: a drop mid-race
                first.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await first
                token = bots[0].conn.token
                await bots[0].close()
                if comes_back:
                    back = bot(lane, names[0], lane.index * 1000 + number, token)
                    bots[0] = back
                    await back.connect()
                    back.follow(race_id)
                    await back.conn.send(Sync(race_id=race_id))
                    results = [await back.play(), await staying]
                else:
                    results = [await staying]
            tally_results(lane, race_id, results)
        finally:
            await close_all(bots)
        lane.tally.count("drop back" if comes_back else "drop gone")
        number += 1


async def raw(url: str) -> ClientConnection:
    return await connect(url, compression=None, max_size=2**20, max_queue=None, open_timeout=WAIT_S)


async def hello(ws: ClientConnection, name: str | None = None, token: str | None = None) -> Welcome:
    """An anonymous hello (or a player's, by name or token), answered by the welcome."""
    await ws.send(encode(Hello(protocol=PROTOCOL_VERSION, name=name, token=token)))
    return await answer(ws, Welcome)


async def answer(ws: ClientConnection, kind: type[M]) -> M:
    """The next message of `kind`, the others read past."""
    async with asyncio.timeout(WAIT_S):
        while True:
            frame = await ws.recv()
            assert isinstance(frame, bytes)
            message = decode_server(frame)
            if isinstance(message, kind):
                return message
            if isinstance(message, Error):
                raise RuntimeError(f"refused: {message.code}: {message.message}")


async def read_for(ws: ClientConnection, seconds: float) -> int:
    """Read whatever comes for `seconds`; how many messages came."""
    count = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while True:
                await ws.recv()
                count += 1
    return count


def drop(ws: ClientConnection) -> None:
    """Lose the connection without a close frame (a lost network, a killed client)."""
    ws.transport.abort()


async def pause(lane: Lane, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(lane.stop.wait(), seconds)


async def watch_lane(lane: Lane) -> None:
    """A spectator watches a running race for a moment, then unwatches it and follows the
    lobby before a goodbye, or (every other time) drops without a word."""
    number = 0
    while not lane.stop.is_set():
        ws = await raw(lane.url)
        try:
            await hello(ws)
            await ws.send(encode(ListRaces()))
            running = [r for r in (await answer(ws, RaceList)).races if r.status == "running"]
            if not running:
                await pause(lane, 0.5)
                continue
            race_id = running[number % len(running)].race_id
            await ws.send(encode(Watch(race_id=race_id)))
            await answer(ws, RaceSnapshot)
            await read_for(ws, 1.0)
            if number % 2 == 0:
                drop(ws)
            else:
                await ws.send(encode(Unwatch(race_id=race_id)))
                await ws.send(encode(ListRaces(follow=True)))
                await answer(ws, RaceList)
        finally:
            await ws.close()
        lane.tally.count("watch")
        number += 1


async def lobby_lane(lane: Lane) -> None:
    """A visitor follows the lobby for 2 s, then polls the lists and a leaderboard, and
    closes."""
    while not lane.stop.is_set():
        async with await raw(lane.url) as ws:
            await hello(ws)
            await ws.send(encode(ListRaces(follow=True)))
            await answer(ws, RaceList)
            await read_for(ws, 2.0)  # the pushes of the races' changes meanwhile
            await ws.send(encode(ListRaces(follow=False)))
            for _ in range(5):
                await ws.send(encode(ListRaces()))
                await answer(ws, RaceList)
                await pause(lane, 0.2)
            await ws.send(encode(ListTournaments()))
            await answer(ws, TournamentList)
            await ws.send(encode(GetLeaderboard(game="klondike")))
            await answer(ws, Leaderboard)
        lane.tally.count("lobby")


async def refused_by_server(url: str, send: Callable[[ClientConnection], Awaitable[None]]) -> int:
    """Open a connection, do `send`, and wait for the server to close it; its close code."""
    ws = await raw(url)
    try:
        async with asyncio.timeout(WAIT_S):
            with contextlib.suppress(ConnectionClosed):
                await send(ws)
            await ws.wait_closed()
    finally:
        drop(ws)
    code = ws.close_code
    if code is None or code == 1000:
        raise RuntimeError(f"the server did not refuse the connection (close code {code})")
    return code


async def refused_lane(lane: Lane) -> None:
    """Bad frames, a forged token and a flood: each connection closed by the server."""

    async def text(ws: ClientConnection) -> None:
        await hello(ws)
        await ws.send("hello?")

    async def not_msgpack(ws: ClientConnection) -> None:
        await hello(ws)
        await ws.send(b"\xc1\xc1\xc1")

    async def too_big(ws: ClientConnection) -> None:
        await hello(ws)
        await ws.send(encode(ListRaces()) + b"\x00" * 20_000)

    async def forged_token(ws: ClientConnection) -> None:
        await ws.send(encode(Hello(protocol=PROTOCOL_VERSION, token="p1.forged.token")))
        await ws.recv()

    async def flood(ws: ClientConnection) -> None:
        await hello(ws)
        ping = encode(Ping())
        while ws.state is State.OPEN:  # until the server closes it
            for _ in range(100):
                await ws.send(ping)
            await asyncio.sleep(0)  # a send that does not block lets nothing else run

    while not lane.stop.is_set():
        for send in (text, not_msgpack, too_big, forged_token, flood):
            code = await refused_by_server(lane.url, send)
            lane.tally.closes[code] = lane.tally.closes.get(code, 0) + 1
        async with await raw(lane.url) as ws:  # a wrong shape: an error, the link kept
            await hello(ws)
            await ws.send(encode_raw({"type": "move", "race_id": 7}))
            await answer(ws, Error)
            await ws.send(encode(Ping()))
        lane.tally.count("refused")
        await pause(lane, 2.0)


async def tournament_lane(lane: Lane) -> None:
    """Small single eliminations played by four bots and watched by a spectator who leaves
    (or drops, every other time) once the first round is under way."""
    tokens: list[str | None] = [None] * 4
    names = [f"tour{lane.index}x{seat}" for seat in range(4)]
    admin_token: str | None = None
    number = 0
    while not lane.stop.is_set():
        bots = [bot(lane, names[s], lane.index * 1000 + number, tokens[s]) for s in range(4)]
        admin = await raw(lane.url)
        try:
            welcome = await hello(
                admin, None if admin_token else f"director{lane.index}", admin_token
            )
            admin_token = welcome.token
            await admin.send(
                encode(
                    CreateTournament(
                        admin_token=ADMIN_TOKEN,
                        name=f"soak cup {lane.index}-{number}",
                        game="klondike",
                        format="single_elimination",
                        time_limit_s=300,
                        check_in_required=False,
                        no_show_grace_s=60,
                        rated=number % 2 == 0,
                    )
                )
            )
            tid = (await answer(admin, TournamentView)).tournament.tournament_id
            await with_bots(bots, tokens)
            names = [each.name for each in bots]
            runs = [asyncio.create_task(play_tournament(each, tid)) for each in bots]
            await admin.send(encode(WatchTournament(tournament_id=tid)))
            async with asyncio.timeout(WAIT_S):
                while len((await answer(admin, TournamentView)).tournament.players) < 4:
                    pass
            await admin.send(
                encode(TournamentAdmin(tournament_id=tid, admin_token=ADMIN_TOKEN, act="start"))
            )
            await read_for(admin, 0.5)
            if number % 2 == 0:
                drop(admin)
            else:
                await admin.send(encode(UnwatchTournament(tournament_id=tid)))
            async with asyncio.timeout(600):
                views = await asyncio.gather(*runs)
            if views[0].phase != "finished":
                raise RuntimeError(f"tournament {tid} ended {views[0].phase}")
        finally:
            await admin.close()
            await close_all(bots)
        lane.tally.count("tournament")
        number += 1


LANES: dict[str, Callable[[Lane], Coroutine[Any, Any, None]]] = {
    "race": race_lane,
    "watch": watch_lane,
    "lobby": lobby_lane,
    "drop": drop_lane,
    "private": private_lane,
    "rated": rated_lane,
    "tournament": tournament_lane,
    "refused": refused_lane,
}


# --- the run -------------------------------------------------------------------------------


def soak_env(grace_s: float) -> dict[str, str]:
    return dict(
        server_env(),
        SOLRACE_RATE_CAPACITY=str(RATE_CAPACITY),
        SOLRACE_RATE_REFILL_PER_S=str(RATE_REFILL_PER_S),
        SOLRACE_GRACE_S=str(grace_s),
        SOLRACE_ADMIN_TOKEN=ADMIN_TOKEN,
        SOLRACE_SPECTATOR_DELAY_RATED_S="1",
        SOLRACE_SECRET="soak-secret-shared-by-every-node",
    )


def sample_node(port: int, pid: int) -> dict[str, float]:
    values = metric_values(port)
    return {
        "rss_mib": round(memory_kib(pid) / 1024, 1),
        "fds": open_fds(pid),
        "tasks": values.get("solrace_tasks", -1),
        "races_held": races_held(values),
        "connections": values.get("solrace_connections", -1),
        "cpu_s": round(cpu_seconds(pid), 1),
    }


def joined(nodes: list[dict[str, float]], key: str, form: str) -> str:
    return "/".join(format(node[key], form) for node in nodes)


async def soak(
    minutes: float,
    kinds: list[str],
    every: float,
    max_moves: int,
    store: str | None,
    node_count: int,
    grace_s: float,
) -> dict[str, object]:
    ports = [free_port() for _ in range(node_count)]
    with tempfile.TemporaryDirectory() as tmp:
        env = soak_env(grace_s)
        servers = []
        try:
            for n, port in enumerate(ports):
                command = [sys.executable, "-m", "solrace.cli", "serve", "--port", str(port)]
                command += ["--data-dir", str(Path(tmp) / f"data{n}")]
                if store is not None:
                    command += ["--store", store]
                servers.append(start_process(command, env))
            for port, server in zip(ports, servers, strict=True):
                wait_port(port, server)
            stop, tally = asyncio.Event(), Tally()
            lanes = [
                Lane(f"ws://127.0.0.1:{ports[i % node_count]}", i, max_moves, stop, tally)
                for i in range(len(kinds))
            ]
            tasks = [
                asyncio.create_task(LANES[kind](lane), name=f"{kind}-{lane.index}")
                for kind, lane in zip(kinds, lanes, strict=True)
            ]
            samples: list[dict[str, object]] = []
            began = time.monotonic()
            print(
                f"{'s':>5} {'races':>6} {'moves':>8} {'rss MiB':>11} {'fds':>7} "
                f"{'tasks':>9} {'held':>7} {'cpu s':>11}  other lanes' rounds"
            )
            while time.monotonic() - began < minutes * 60:
                done, _ = await asyncio.wait(tasks, timeout=every)
                for task in done:
                    task.result()  # a lane that failed stops the run with its error
                    raise RuntimeError(f"lane {task.get_name()} stopped")
                nodes = [
                    sample_node(port, server.pid)
                    for port, server in zip(ports, servers, strict=True)
                ]
                sample: dict[str, object] = {
                    "s": round(time.monotonic() - began, 1),
                    "races": tally.races,
                    "moves": tally.moves,
                    "cycles": dict(tally.cycles),
                    "nodes": nodes,
                }
                samples.append(sample)
                others = ", ".join(f"{k} {v}" for k, v in sorted(tally.cycles.items()))
                print(
                    f"{sample['s']:>5.0f} {tally.races:>6} {tally.moves:>8} "
                    f"{joined(nodes, 'rss_mib', '.1f'):>11} {joined(nodes, 'fds', 'd'):>7} "
                    f"{joined(nodes, 'tasks', '.0f'):>9} {joined(nodes, 'races_held', 'd'):>7} "
                    f"{joined(nodes, 'cpu_s', '.1f'):>11}  {others}",
                    flush=True,
                )
            stop.set()
            async with asyncio.timeout(600):
                await asyncio.gather(*tasks)
        finally:
            for server in servers:
                stop_process(server)
        for server in servers:
            if server.returncode != 0:
                raise RuntimeError(f"server exited with {server.returncode}")
    first = samples[min(1, len(samples) - 1)]  # after the warm-up sample
    last = samples[-1]
    first_nodes, last_nodes = first["nodes"], last["nodes"]
    assert isinstance(first_nodes, list) and isinstance(last_nodes, list)
    return {
        "minutes": minutes,
        "lanes": dict(sorted((k, kinds.count(k)) for k in set(kinds))),
        "nodes": node_count,
        "store": store or "sqlite",
        "grace_s": grace_s,
        "finished_kept_s": env.get("SOLRACE_FINISHED_KEPT_S", "default"),
        "races": tally.races,
        "moves": tally.moves,
        "states": tally.states,
        "cycles": tally.cycles,
        "closes": {str(k): v for k, v in sorted(tally.closes.items())},
        "rss_first_mib": [node["rss_mib"] for node in first_nodes],
        "rss_last_mib": [node["rss_mib"] for node in last_nodes],
        "tasks_first": [node["tasks"] for node in first_nodes],
        "tasks_last": [node["tasks"] for node in last_nodes],
        "races_between": int(str(last["races"])) - int(str(first["races"])),
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--lanes", type=int, default=6, help="4-seat races played at once")
    parser.add_argument(
        "--mix",
        default="",
        help=f"other lanes, comma-separated, one lane each: {', '.join(MIX_KINDS)}",
    )
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--max-moves", type=int, default=400, help="a bot resigns after these")
    parser.add_argument("--store", help="the nodes' store (e.g. redis://127.0.0.1:6379/0)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes on the store (Redis: >1)")
    parser.add_argument("--grace-s", type=float, default=3.0, help="a dropped player's grace")
    parser.add_argument("--out", type=Path, help="write OUT.json")
    args = parser.parse_args()
    kinds = ["race"] * args.lanes + [k for k in args.mix.split(",") if k]
    unknown = sorted(set(kinds) - set(LANES))
    if unknown:
        parser.error(f"unknown lanes: {', '.join(unknown)} (known: {', '.join(MIX_KINDS)})")
    if args.nodes > 1 and not (args.store or "").startswith("redis"):
        parser.error("several nodes need a Redis store (--store redis://...)")
    result = asyncio.run(
        soak(args.minutes, kinds, args.every, args.max_moves, args.store, args.nodes, args.grace_s)
    )
    print(
        f"{result['races']} races, {result['moves']} moves, states {result['states']}; "
        f"other lanes' rounds {result['cycles']}; refusals by close code {result['closes']}; "
        f"memory {result['rss_first_mib']} MiB after the warm-up, {result['rss_last_mib']} MiB "
        f"at the end ({result['races_between']} races between); tasks {result['tasks_first']} "
        f"then {result['tasks_last']}"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
