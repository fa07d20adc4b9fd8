"""Fault injection: several nodes on one real Redis, races and tournaments played by bots
while nodes and Redis are killed, stopped, frozen and restarted, then the promises checked.

Run: python bench/faults.py --seconds 90 --seed 7 --nodes 3 --lanes 6

The script starts a `redis-server` (AOF on, `appendfsync always`, no RDB snapshots, as
deploy/compose.yaml runs it) on a free port and `--nodes` `solrace serve` processes on it
(`--store redis://...`), each node's log in a file of the run's folder. Then, for
`--seconds`:

- race lanes (`--lanes`): two or three new players, each on a node drawn at random, one
  creates a Klondike race (casual, or rated three times in ten) with a short time limit,
  the others join, and all play it with the client's greedy strategy, a move at a time (the
  next once the last one's ack came).
  A player whose link drops, or whose move goes unanswered for a few seconds, connects to a
  node drawn again, says `hello` with its token and `sync`s from the last epoch and version
  it saw, sends its unacknowledged move again with the same `seq` and plays on. Now and then
  a player walks away for good mid-race (its race must end by forfeit after the grace). An
  anonymous spectator watches each race, watching again on a new link after a lost one.
- small tournaments (four-player single eliminations), one after the other, played by the
  client's own bots (`tournament_bots.play_tournament`), one on each node in turn.
- faults at random moments, one of each kind (a node, Redis) at a time: kill -9 of a node,
  started again on its port (a node that exits at start, Redis being down, is started again,
  as a supervisor does); SIGTERM of a node and a start; SIGSTOP of a node, then SIGCONT;
  SIGSTOP of redis-server for 1-3 s; redis-server restarted (SIGTERM or SIGKILL, then
  started on the same folder and port); and, between them, players' TCP connections
  aborted just after they sent a move.

After `--seconds` no new faults or races start and the races under way are played out (each
ends by its time limit at the latest). Then the checks, reading the store with the server's
own `RedisStore`:

- every move a player got a `move_ack` for is among the race's stored moves, with its ply;
- every race that started is finished with a replay that `verify_replay` accepts (the
  commitment, every move, the ranking) and the results the players were sent are the
  stored ones, or is still live with its end in the future;
- a player's board after a reconnect never had fewer moves than it had acknowledged;
- no board or ack a player or spectator got showed a card the engine has face down at that
  ply (checked once the game number is known), and no snapshot had the game number of an
  unfinished race;
- each connection got a race's versioned events in rising order, and a player who saw the
  end knew every other racer's final figures;
- a racer put out as gone while it kept coming back had heard from no node for the grace;
- every tournament finished;
- each player of a finished rated race was rated for it once, or not at all where the
  server rates no one (all tied, the player absent), unless the race waits for the sweep;
- the node logs have no ERROR line or traceback beyond those the faults explain
  (`EXPECTED_ERRORS`: none).

It prints what was done (faults of each kind, races, moves, reconnects) and every violation,
and exits 1 if there was one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from solrace.client.boards import UnusableBoardError, apply_ack, board_from_model
from solrace.client.bots import Bot
from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import Connection
from solrace.client.strategy import Strategy, make_strategy
from solrace.client.tournament_bots import play_tournament
from solrace.engine import BoardView, EngineError, Game, Move, deal, view_piles
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    CreateRace,
    Error,
    Hello,
    JoinRace,
    MakeMove,
    MoveAck,
    MoveRejected,
    PileModel,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    Resign,
    ResultEntry,
    Sync,
    Watch,
    Welcome,
)
from solrace.server.protocol.race import absent_racers, placings_of
from solrace.server.protocol.records import MoveRecord, RaceRecord, RaceStatus
from solrace.server.protocol.replay import build_replay, verify_replay
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    TournamentAdmin,
    TournamentView,
    WatchTournament,
)
from solrace.server.store.redis import RedisStore

SECRET = "faults-secret-shared-by-every-node"
ADMIN_TOKEN = "faults-admin-token-0123456789"
GRACE_S = 8.0
NODE_TTL_S = 2.0
#: A move unanswered this long: the player gives up on the link and connects again.
ACK_WAIT_S = 4.0
#: Nothing at all from the node this long: likewise.
SILENCE_S = 12.0
#: Seconds before a racer sends again a sync its node answered `unavailable` (Redis away).
RESYNC_S = 0.5
#: A race's end may reach its players this late after its time limit: the longest fault
#: (a node down or frozen 12 s), the time to find a node gone and a player's reconnect.
LATE_END_S = 20.0
MOVE_DELAY_S = (0.1, 0.3)
TIME_LIMITS_S = (20, 35)
#: The share of races that are rated.
RATED_SHARE = 0.3
#: ERROR lines (and their tracebacks) that the faults themselves explain: a pattern the line
#: must match, and why it is expected.
EXPECTED_ERRORS: tuple[tuple[str, str], ...] = ()
#: A strategy for a player who never moves (the tournament director).
STRATEGY = make_strategy("greedy")
VERSIONED = (RaceUpdate, RaceStarted, Progress, RaceFinished, RaceSnapshot)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ProcessExitedError(RuntimeError):
    """A process exited before it listened."""


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def wait_port(port: int, process: asyncio.subprocess.Process, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise ProcessExitedError(f"process on port {port} exited with {process.returncode}")
        if port_open(port):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


# --- the processes -------------------------------------------------------------------------


@dataclass
class Proc:
    """One process the run starts, stops and signals (redis-server or a node)."""

    name: str
    port: int
    command: list[str]
    log: Path
    env: dict[str, str] | None = None
    process: asyncio.subprocess.Process | None = None
    frozen: bool = False
    starts: int = 0

    async def start(self, tally: Tally | None = None) -> None:
        """Start it and wait until it listens; a node that exits meanwhile (its Redis is
        down: `cannot reach Redis`, exit status 1) is started again a second later, as a
        supervisor does (deploy/compose.yaml: `restart: unless-stopped`)."""
        while True:
            self.starts += 1
            out: IO[bytes]
            with self.log.open("ab") as out:
                out.write(f"--- faults.py: start {self.starts} of {self.name}\n".encode())
                out.flush()
                self.process = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    env=self.env,
                    start_new_session=True,
                )
            try:
                await wait_port(self.port, self.process)
                return
            except ProcessExitedError:
                if tally is None:
                    raise
                tally.events[f"{self.name[:4]} start refused, started again"] += 1
                await asyncio.sleep(1)

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def wait(self, within_s: float = 15) -> None:
        assert self.process is not None
        try:
            async with asyncio.timeout(within_s):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            if self.frozen:
                self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            await self.wait()


def redis_proc(folder: Path) -> Proc:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        binary,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(folder),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
        "--daemonize",
        "no",
    ]
    return Proc("redis", port, command, folder / "redis.log")


def node_env() -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        SOLRACE_SECRET=SECRET,
        SOLRACE_ADMIN_TOKEN=ADMIN_TOKEN,
        SOLRACE_COUNTDOWN_S="1",
        SOLRACE_GRACE_S=str(GRACE_S),
        SOLRACE_NODE_TTL_S=str(NODE_TTL_S),
        SOLRACE_RATE_CAPACITY="100000",
        SOLRACE_RATE_REFILL_PER_S="100000",
        SOLRACE_MAX_CONNECTIONS_PER_ADDRESS="0",
        SOLRACE_REGISTER_BURST="100000",
        SOLRACE_REGISTER_NODE_BURST="100000",
        SOLRACE_SPECTATOR_DELAY_RATED_S="1",
        SOLRACE_LOG_LEVEL="WARNING",
    )


def node_proc(index: int, folder: Path, store: str) -> Proc:
    port = free_port()
    data = folder / f"node{index}"
    command = [sys.executable, "-m", "solrace.cli", "serve", "--port", str(port)]
    command += ["--data-dir", str(data), "--store", store]
    return Proc(f"node{index}", port, command, folder / f"node{index}.log", env=node_env())


# --- what the run saw ----------------------------------------------------------------------


@dataclass
class Tally:
    faults: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    #: The latest a race's end reached a player after its time limit, in seconds.
    latest_end_s: float = -1e9

    def violation(self, text: str) -> None:
        self.violations.append(text)
        print(f"VIOLATION: {text}", flush=True)


@dataclass
class Seat:
    """One player racing in one race, as the player knows it."""

    name: str
    key: str
    strategy: Strategy
    token: str | None = None
    player_id: PlayerId | None = None
    race_id: RaceId | None = None
    epoch: str = ""
    version: int = 0
    board: BoardView | None = None
    #: Moves the server holds for this player, as far as the player knows.
    count: int = 0
    next_seq: int = 1
    pending: tuple[int, str] | None = None
    #: seq -> (ply, move) of every acknowledged move.
    acked: dict[int, tuple[int, str]] = field(default_factory=dict)
    #: (ply, piles) of every board and fresh ack: what the player was shown at that ply.
    views: list[tuple[int, list[PileModel]]] = field(default_factory=list)
    out: bool = False
    resign_sent: bool = False
    finished: RaceFinished | None = None
    #: When (wall clock, ms) the player got the race's `race_finished`.
    finished_seen_ms: int | None = None
    gone_for_good: bool = False
    done: bool = False
    drop_next_move: bool = False
    #: When (wall clock, s) the player last heard from a node, and each spell of more than
    #: a second in which it heard nothing (a lost link until the next welcome, a frozen
    #: node): (from, to).
    heard_at: float = field(default_factory=time.time)
    silences: list[tuple[float, float]] = field(default_factory=list)

    def heard(self) -> None:
        now = time.time()
        if now - self.heard_at > 1:
            self.silences.append((self.heard_at, now))
        self.heard_at = now

    #: Versions of the race's events the player got, and the version its latest snapshot
    #: covers (every version up to it), in the race's epoch.
    seen_versions: set[int] = field(default_factory=set)
    covered: int = 0
    #: The other racers' latest figures the player got: player id -> (version, (moves,
    #: cards on the foundations)).
    others: dict[PlayerId, tuple[int, tuple[int, int]]] = field(default_factory=dict)

    @property
    def acked_count(self) -> int:
        return 1 + max((ply for ply, _ in self.acked.values()), default=-1)


@dataclass
class World:
    args: argparse.Namespace
    rng: random.Random
    redis: Proc
    nodes: list[Proc]
    tally: Tally = field(default_factory=Tally)
    seats: list[Seat] = field(default_factory=list)
    races: set[RaceId] = field(default_factory=set)
    rated: set[RaceId] = field(default_factory=set)
    #: Players connected now, by name: their socket, for the drop fault.
    links: dict[str, tuple[Seat, ClientConnection]] = field(default_factory=dict)
    stop_new: asyncio.Event = field(default_factory=asyncio.Event)
    tournament_ids: list[str] = field(default_factory=list)
    #: Per race: the boards its spectator was shown, as (racer, ply, piles).
    spectator_views: dict[RaceId, list[tuple[PlayerId, int, list[PileModel]]]] = field(
        default_factory=dict
    )
    #: The kinds of process a fault is on now, and the faults going on.
    busy: set[str] = field(default_factory=set)
    injecting: set[asyncio.Task[None]] = field(default_factory=set)

    def url(self) -> str:
        return f"ws://127.0.0.1:{self.rng.choice(self.nodes).port}"


# --- one player ----------------------------------------------------------------------------


async def open_link(world: World) -> ClientConnection:
    """A WebSocket to a node drawn at random, trying others until one answers."""
    for _ in range(200):
        with contextlib.suppress(OSError, InvalidHandshake, TimeoutError):
            return await connect(world.url(), compression=None, max_size=2**22, open_timeout=3)
        await asyncio.sleep(0.1)
    raise RuntimeError("no node took a connection for 20 s")


async def receive(ws: ClientConnection, within_s: float) -> Any:
    async with asyncio.timeout(within_s):
        frame = await ws.recv()
    assert isinstance(frame, bytes)
    return decode_server(frame)


async def say_hello(world: World, seat: Seat, ws: ClientConnection) -> Welcome:
    if seat.token is None:
        hello = Hello(protocol=PROTOCOL_VERSION, name=seat.name, key=seat.key)
    else:
        hello = Hello(protocol=PROTOCOL_VERSION, token=seat.token)
    await ws.send(encode(hello))
    while True:
        message = await receive(ws, 5)
        if isinstance(message, Welcome):
            seat.heard()
            seat.token, seat.player_id = message.token, message.player_id
            return message
        if isinstance(message, Error):
            raise RuntimeError(f"hello refused: {message.code}: {message.message}")


def seen_version(world: World, seat: Seat, message: Any, versions: dict[str, int]) -> None:
    """Note a versioned event: on one connection, a race's versions only rise."""
    epoch, version = message.epoch, message.version
    last = versions.get(epoch)
    if last is not None and version <= last and not isinstance(message, RaceSnapshot):
        world.tally.violation(
            f"{seat.name} in {seat.race_id}: {message.type} version {version} after {last} "
            "on the same connection"
        )
    versions[epoch] = max(version, last or 0)
    if isinstance(message, RaceSnapshot):
        seat.covered = max(seat.covered, version)
    else:
        seat.seen_versions.add(version)
    if epoch != seat.epoch or version > seat.version:
        seat.epoch, seat.version = epoch, version


def handle(world: World, seat: Seat, message: Any, versions: dict[str, int]) -> str | None:
    """Update the seat from one message; what to do next: 'sync', 'resync' (a sync the
    store could not answer, sent again after `RESYNC_S`), 'resend' or None."""
    race_id = getattr(message, "race_id", None)
    if race_id != seat.race_id:
        return None
    if isinstance(message, VERSIONED):
        seen_version(world, seat, message, versions)
    entries = []
    if isinstance(message, RaceSnapshot):
        entries = list(message.progress)
    elif isinstance(message, Progress):
        entries = [message.progress]
    for entry in entries:
        known = seat.others.get(entry.player_id)
        if entry.player_id != seat.player_id and (known is None or known[0] <= message.version):
            seat.others[entry.player_id] = (message.version, (entry.moves, entry.on_foundations))
    if isinstance(message, RaceSnapshot):
        if message.game_number is not None and message.race.status != "finished":
            world.tally.violation(f"{seat.name}: a snapshot of {race_id} had its game number")
        if message.race.status in ("finished", "cancelled"):
            seat.done = True
        for entry in message.progress:
            if entry.player_id == seat.player_id and entry.state != "playing":
                seat.out = True
        return None
    if isinstance(message, RaceFinished):
        seat.finished, seat.done = message, True
        seat.finished_seen_ms = int(time.time() * 1000)
        return None
    if isinstance(message, Progress):
        if message.progress.player_id == seat.player_id and message.progress.state != "playing":
            seat.out = True
        return None
    if isinstance(message, Board) and message.player_id == seat.player_id:
        world.tally.events["boards"] += 1
        if message.ply < seat.acked_count:
            world.tally.violation(
                f"{seat.name} in {race_id}: a board of {message.ply} moves after "
                f"{seat.acked_count} were acknowledged"
            )
        seat.count = message.ply
        seat.views.append((message.ply, list(message.board.piles)))
        try:
            seat.board = board_from_model(message.board)
        except UnusableBoardError as exc:
            world.tally.violation(f"{seat.name} in {race_id}: unusable board: {exc}")
            seat.board = None
        if seat.board is not None and (seat.board.won or seat.board.stuck):
            seat.out = True
        return "resend" if seat.pending is not None else None
    if isinstance(message, MoveAck):
        if seat.pending is None or message.seq != seat.pending[0]:
            return None  # an answer to a resend already answered
        seq, text = seat.pending
        seat.pending = None
        earlier = seat.acked.get(seq)
        if earlier is not None and earlier != (message.ply, text):
            world.tally.violation(f"{seat.name}: seq {seq} acked as {earlier} then {message.ply}")
        seat.acked[seq] = (message.ply, text)
        world.tally.events["acks"] += 1
        if message.duplicate:
            world.tally.events["duplicate acks"] += 1
            seat.board = None
            return "sync"  # the piles are the whole board as it is now: start from a board
        if message.ply != seat.count:
            world.tally.violation(
                f"{seat.name} in {race_id}: ack of ply {message.ply}, expected {seat.count}"
            )
        seat.count = message.ply + 1
        seat.views.append((message.ply + 1, list(message.piles)))
        if seat.board is not None:
            try:
                seat.board = apply_ack(
                    seat.board,
                    Move.parse(text),
                    message.piles,
                    on_foundations=message.on_foundations,
                    total=message.total,
                    won=message.won,
                    stuck=message.stuck,
                )
            except UnusableBoardError as exc:
                world.tally.violation(f"{seat.name} in {race_id}: unusable ack: {exc}")
                seat.board = None
                return "sync"
        if message.won or message.stuck:
            seat.out = True
        return None
    if isinstance(message, MoveRejected):
        if seat.pending is None or message.seq != seat.pending[0]:
            return None
        seat.pending = None
        world.tally.rejections[message.code] += 1
        seat.board = None
        return "sync"
    if isinstance(message, Error):
        world.tally.rejections[f"error {message.code}"] += 1
        if message.code == "unknown_race":
            seat.done = True
        if message.code == "unavailable" and message.request == "sync":
            return "resync"  # a racer's sync reads its stored moves: Redis was away
    return None


async def next_move(world: World, seat: Seat, ws: ClientConnection) -> None:
    """Send the strategy's next move (or resign)."""
    assert seat.board is not None and seat.race_id is not None
    choice = seat.strategy.choose(seat.board)
    if choice.move is None:
        if not seat.resign_sent:
            seat.resign_sent = True
            await ws.send(encode(Resign(race_id=seat.race_id)))
        seat.out = True
        return
    seat.pending = (seat.next_seq, str(choice.move))
    seat.next_seq += 1
    await send_pending(world, seat, ws)


async def send_pending(world: World, seat: Seat, ws: ClientConnection) -> None:
    assert seat.pending is not None and seat.race_id is not None
    seq, text = seat.pending
    await ws.send(encode(MakeMove(race_id=seat.race_id, seq=seq, move=text)))
    world.tally.events["moves sent"] += 1
    if seat.drop_next_move:
        seat.drop_next_move = False
        world.tally.faults["client link dropped mid-move"] += 1
        ws.transport.abort()


async def play_on(world: World, seat: Seat, ws: ClientConnection | None, until: float) -> None:
    """Play the seat's race to its end, reconnecting whenever the link fails."""
    loop = asyncio.get_running_loop()
    while not seat.done and loop.time() < until:
        try:
            if ws is None:
                ws = await open_link(world)
                await say_hello(world, seat, ws)
                world.tally.events["reconnects"] += 1
                assert seat.race_id is not None
                await ws.send(
                    encode(Sync(race_id=seat.race_id, epoch=seat.epoch, since_version=seat.version))
                )
            await play_link(world, seat, ws, until)
        except (ConnectionClosed, OSError, TimeoutError, RuntimeError) as exc:
            world.tally.events[f"link lost: {type(exc).__name__}"] += 1
        finally:
            world.links.pop(seat.name, None)
            if ws is not None:
                ws.transport.abort()
            ws = None
        if seat.gone_for_good:
            return
        await asyncio.sleep(world.rng.uniform(0.05, 0.5))


async def play_link(world: World, seat: Seat, ws: ClientConnection, until: float) -> None:
    """Play on one connection until it fails (an exception) or the race ends."""
    loop = asyncio.get_running_loop()
    world.links[seat.name] = (seat, ws)
    versions: dict[str, int] = {}
    move_at = loop.time()
    pending_since = loop.time() if seat.pending is not None else None
    heard_at = loop.time()
    while not seat.done and loop.time() < until:
        now = loop.time()
        if seat.gone_for_good:
            raise ConnectionAbortedError("walked away")
        if pending_since is not None and now - pending_since > ACK_WAIT_S:
            raise TimeoutError("move unanswered")
        if now - heard_at > SILENCE_S:
            raise TimeoutError("node silent")
        can_move = seat.board is not None and seat.pending is None and not seat.out
        wait = 0.5
        if can_move:
            wait = max(0.0, move_at - now)
        if can_move and wait == 0:
            await next_move(world, seat, ws)
            pending_since = loop.time() if seat.pending is not None else None
            continue
        try:
            message = await receive(ws, wait)
        except TimeoutError:
            continue
        heard_at = loop.time()
        seat.heard()
        had_pending = seat.pending is not None
        todo = handle(world, seat, message, versions)
        if had_pending and seat.pending is None:
            pending_since = None
            move_at = loop.time() + world.rng.uniform(*MOVE_DELAY_S)
        if todo == "resync":
            await asyncio.sleep(RESYNC_S)
        if todo in ("sync", "resync"):
            assert seat.race_id is not None
            await ws.send(encode(Sync(race_id=seat.race_id)))
        elif todo == "resend" and seat.pending is not None:
            await send_pending(world, seat, ws)
            pending_since = loop.time()


# --- race lanes ----------------------------------------------------------------------------


async def set_up_race(world: World, seats: list[Seat]) -> list[ClientConnection]:
    """Connect the seats, create a race with the first, join the others; their links."""
    links: list[ClientConnection] = []
    try:
        for seat in seats:
            ws = await open_link(world)
            links.append(ws)
            await say_hello(world, seat, ws)
        limit = world.rng.randint(*TIME_LIMITS_S)
        creator = links[0]
        rated = world.rng.random() < RATED_SHARE
        create = CreateRace(game="klondike", seats=len(seats), time_limit_s=limit, rated=rated)
        await creator.send(encode(create))
        race_id = None
        while race_id is None:
            message = await receive(creator, 5)
            if isinstance(message, RaceUpdate):
                race_id = message.race_id
            elif isinstance(message, Error):
                raise RuntimeError(f"create refused: {message.code}")
        world.races.add(race_id)
        if rated:
            world.rated.add(race_id)
        for seat in seats:
            seat.race_id = race_id
        for ws in links[1:]:
            await ws.send(encode(JoinRace(race_id=race_id)))
            while True:
                message = await receive(ws, 5)
                if isinstance(message, RaceUpdate) and message.race_id == race_id:
                    break
                if isinstance(message, Error):
                    raise RuntimeError(f"join refused: {message.code}")
        return links
    except BaseException:
        for ws in links:
            ws.transport.abort()
        raise


async def race_lane(world: World, lane: int, until: float) -> None:
    number = 0
    while not world.stop_new.is_set():
        number += 1
        size = world.rng.choice((2, 2, 3))
        seats = [
            Seat(
                f"f{lane}r{number}s{i}x{secrets.token_hex(2)}",
                secrets.token_urlsafe(18),
                make_strategy("greedy", seed=world.rng.randrange(2**32), max_moves=400),
            )
            for i in range(size)
        ]
        try:
            links = await set_up_race(world, seats)
        except (ConnectionClosed, OSError, TimeoutError, RuntimeError) as exc:
            world.tally.events[f"race set-up failed: {type(exc).__name__}"] += 1
            await asyncio.sleep(1)
            continue
        world.tally.events["races"] += 1
        world.seats.extend(seats)
        if world.rng.random() < 0.15:
            quitter = world.rng.choice(seats)
            loop = asyncio.get_running_loop()
            loop.call_later(world.rng.uniform(3, 10), walk_away, world, quitter)
        race_id = seats[0].race_id
        assert race_id is not None
        await asyncio.gather(
            spectate(world, race_id, until),
            *(play_on(world, seat, ws, until) for seat, ws in zip(seats, links, strict=True)),
        )


async def spectate(world: World, race_id: RaceId, until: float) -> None:
    """An anonymous spectator watches the race to its end (and its final boards), watching
    again on a new link, at a node drawn again, whenever the link fails."""
    loop = asyncio.get_running_loop()
    views = world.spectator_views.setdefault(race_id, [])
    ended_at: float | None = None
    while loop.time() < until:
        ws: ClientConnection | None = None
        try:
            ws = await open_link(world)
            await ws.send(encode(Hello(protocol=PROTOCOL_VERSION)))
            await receive(ws, 5)
            await ws.send(encode(Watch(race_id=race_id)))
            while ended_at is None or loop.time() < ended_at + 1:
                message = await receive(ws, 1 if ended_at is not None else SILENCE_S)
                if isinstance(message, Board) and message.race_id == race_id:
                    views.append((message.player_id, message.ply, list(message.board.piles)))
                elif isinstance(message, RaceSnapshot) and message.race_id == race_id:
                    if message.game_number is not None and message.race.status != "finished":
                        world.tally.violation(f"a spectator's snapshot of {race_id} had its number")
                    if message.race.status in ("finished", "cancelled") and ended_at is None:
                        ended_at = loop.time()
                elif isinstance(message, RaceFinished) and ended_at is None:
                    ended_at = loop.time()
                elif isinstance(message, Error) and message.code == "unknown_race":
                    return
            return
        except TimeoutError:
            if ended_at is not None:
                return  # the final boards came, or none were due
        except (ConnectionClosed, OSError, RuntimeError):
            pass
        finally:
            if ws is not None:
                ws.transport.abort()
        await asyncio.sleep(0.3)


def walk_away(world: World, seat: Seat) -> None:
    """The player leaves for good: its link closes and it never comes back."""
    if seat.done:
        return
    seat.gone_for_good = True
    world.tally.events["players walked away"] += 1
    link = world.links.get(seat.name)
    if link is not None:
        link[1].transport.abort()


# --- the tournament ------------------------------------------------------------------------


async def tournaments(world: World, until: float) -> None:
    """Four-player single eliminations one after the other until no new ones start."""
    number = 0
    while not world.stop_new.is_set():
        number += 1
        await tournament(world, number, until)


async def create_tournament(world: World, number: int) -> str | None:
    for attempt in range(20):
        admin: ClientConnection | None = None
        try:
            admin = await open_link(world)
            director = Seat(f"director{number}x{attempt}", secrets.token_urlsafe(18), STRATEGY)
            await say_hello(world, director, admin)
            create = CreateTournament(
                admin_token=ADMIN_TOKEN,
                name=f"faults cup {number}.{attempt}",
                game="klondike",
                format="single_elimination",
                time_limit_s=30,
                check_in_required=False,
                no_show_grace_s=30,
                rated=False,
            )
            await admin.send(encode(create))
            while True:
                message = await receive(admin, 5)
                if isinstance(message, TournamentView):
                    return message.tournament.tournament_id
                if isinstance(message, Error):
                    raise RuntimeError(f"create refused: {message.code}")
        except (ConnectionClosed, OSError, TimeoutError, RuntimeError) as exc:
            world.tally.events[f"tournament create failed: {type(exc).__name__}"] += 1
            await asyncio.sleep(1)
        finally:
            if admin is not None:
                admin.transport.abort()
    return None


async def start_tournament(world: World, tid: str) -> bool:
    """Start it once its four players are in; True once it is under way."""
    for _ in range(40):
        admin: ClientConnection | None = None
        try:
            admin = await open_link(world)
            await admin.send(encode(Hello(protocol=PROTOCOL_VERSION)))
            await receive(admin, 5)
            await admin.send(encode(WatchTournament(tournament_id=tid)))
            sent = False
            async with asyncio.timeout(10):
                while True:
                    message = await receive(admin, 5)
                    if isinstance(message, TournamentView):
                        if message.tournament.phase not in ("registration", "check_in"):
                            return True
                        if len(message.tournament.players) == 4 and not sent:
                            sent = True
                            act = TournamentAdmin(
                                tournament_id=tid, admin_token=ADMIN_TOKEN, act="start"
                            )
                            await admin.send(encode(act))
                    elif isinstance(message, Error):
                        raise RuntimeError(f"start refused: {message.code}")
        except (ConnectionClosed, OSError, TimeoutError, RuntimeError) as exc:
            world.tally.events[f"tournament start failed: {type(exc).__name__}"] += 1
            await asyncio.sleep(0.5)
        finally:
            if admin is not None:
                admin.transport.abort()
    return False


async def connect_bot(bot: Bot) -> None:
    """Connect a bot, trying again while its node is down or answers `unavailable`."""
    for attempt in range(60):
        try:
            await bot.connect()
            return
        except ConnectionFailedError:
            if attempt == 59:
                raise
            await asyncio.sleep(0.5)


async def tournament(world: World, number: int, until: float) -> None:
    """A four-player single elimination played by the client's bots, one per node in turn
    (each bot's connection comes back to its node after a drop, as the client does)."""
    tid = await create_tournament(world, number)
    if tid is None:
        world.tally.violation("a tournament could not be created in 20 tries")
        return
    world.tournament_ids.append(tid)
    bots = []
    for i in range(4):
        url = f"ws://127.0.0.1:{world.nodes[(number + i) % len(world.nodes)].port}"
        name = f"t{number}p{i}x{secrets.token_hex(2)}"
        strategy = make_strategy("greedy", seed=world.rng.randrange(2**32), max_moves=400)
        bots.append(Bot(url, name, strategy, delay_s=0.2, connection=Connection(url, name=name)))
    try:
        await asyncio.gather(*(connect_bot(bot) for bot in bots))
        runs = [asyncio.create_task(play_tournament(bot, tid)) for bot in bots]
        if not await start_tournament(world, tid):
            world.tally.violation(f"tournament {tid} could not be started in 40 tries")
            return
        world.tally.events["tournaments started"] += 1
        async with asyncio.timeout(max(1.0, until - asyncio.get_running_loop().time())):
            views = await asyncio.gather(*runs)
        world.tally.events[f"tournaments ended {views[0].phase}"] += 1
    except TimeoutError:
        world.tally.events["tournaments not over by the end"] += 1
    except Exception as exc:  # a bot's failure: said, and the run goes on
        world.tally.violation(f"tournament {tid}: a bot failed: {type(exc).__name__}: {exc}")
    finally:
        await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)


# --- faults --------------------------------------------------------------------------------

FAULTS = (
    "kill node",
    "freeze node",
    "freeze redis",
    "restart redis",
    "stop node",
    "drop client",
)
#: What each fault of a process holds while it goes on: the nodes, or Redis.
TARGETS = {
    "kill node": {"node"},
    "stop node": {"node"},
    "freeze node": {"node"},
    "freeze redis": {"redis"},
    "restart redis": {"redis"},
}


async def inject(world: World, kind: str) -> None:
    targets = TARGETS.get(kind, set())
    world.busy |= targets
    try:
        await inject_now(world, kind)
    finally:
        world.busy -= targets


async def inject_now(world: World, kind: str) -> None:
    rng = world.rng
    if kind == "kill node":
        node = rng.choice(world.nodes)
        node.signal(signal.SIGKILL)
        await node.wait()
        down_s = rng.uniform(0.5, 3) if rng.random() < 0.7 else rng.uniform(6, 12)
        await asyncio.sleep(down_s)
        await node.start(world.tally)
    elif kind == "stop node":
        node = rng.choice(world.nodes)
        node.signal(signal.SIGTERM)  # a deploy's restart: its clients get 1012
        await node.wait(30)
        await asyncio.sleep(rng.uniform(0.2, 1))
        await node.start(world.tally)
    elif kind == "freeze node":
        node = rng.choice(world.nodes)
        node.signal(signal.SIGSTOP)
        node.frozen = True
        await asyncio.sleep(rng.uniform(2, 5) if rng.random() < 0.7 else rng.uniform(9, 12))
        node.signal(signal.SIGCONT)
        node.frozen = False
    elif kind == "freeze redis":
        world.redis.signal(signal.SIGSTOP)
        world.redis.frozen = True
        await asyncio.sleep(rng.uniform(1, 3))
        world.redis.signal(signal.SIGCONT)
        world.redis.frozen = False
    elif kind == "restart redis":
        sig = rng.choice((signal.SIGTERM, signal.SIGKILL))
        kind = f"restart redis ({sig.name})"
        world.redis.signal(sig)
        await world.redis.wait()
        await asyncio.sleep(rng.uniform(0.2, 1.5))
        await world.redis.start()
    elif kind == "drop client":
        if not world.links:
            return
        seat, _ = world.links[rng.choice(sorted(world.links))]
        seat.drop_next_move = True  # counted when the move goes
        return
    world.tally.faults[kind] += 1
    print(f"{time.strftime('%H:%M:%S')} fault: {kind}", flush=True)


async def faults(world: World) -> None:
    rng = world.rng
    while not world.stop_new.is_set():
        await asyncio.sleep(rng.uniform(1, 4))
        if world.stop_new.is_set():
            return
        for _ in range(rng.randint(1, 3)):
            await inject(world, "drop client")
        # Faults of processes overlap now and then: each goes on while the next is drawn,
        # on another process (a process takes one fault at a time).
        free = [kind for kind in FAULTS[:-1] if world.busy.isdisjoint(TARGETS[kind])]
        if free:
            task = asyncio.create_task(inject(world, rng.choice(free)))
            world.injecting.add(task)
            task.add_done_callback(world.injecting.discard)
    await asyncio.gather(*world.injecting)


# --- the checks ----------------------------------------------------------------------------


def results_key(results: list[ResultEntry]) -> list[tuple[int, str, str]]:
    return [(r.rank, r.player_id, r.state) for r in results]


async def check_store(world: World) -> None:
    store = RedisStore(f"redis://127.0.0.1:{world.redis.port}/0")
    await store.open()
    now_ms = int(time.time() * 1000)
    by_race: dict[RaceId, list[Seat]] = {}
    for seat in world.seats:
        if seat.race_id is not None:
            by_race.setdefault(seat.race_id, []).append(seat)
    statuses: Counter[str] = Counter()
    try:
        for race_id in sorted(world.races):
            record = await store.get_race(race_id)
            if record is None:
                world.tally.violation(f"race {race_id} is not in the store")
                continue
            moves = await store.get_moves(race_id)
            world.tally.events["moves stored"] += len(moves)
            statuses[record.status.value] += 1
            stored = {(str(m.player_id), m.seq): (m.ply, m.move) for m in moves}
            for seat in by_race.get(race_id, []):
                for seq, (ply, text) in sorted(seat.acked.items()):
                    found = stored.get((str(seat.player_id), seq))
                    if found != (ply, text):
                        world.tally.violation(
                            f"{seat.name} in {race_id}: acked move seq {seq} ply {ply} {text!r} "
                            f"is stored as {found}"
                        )
            check_race(world, record, moves, by_race.get(race_id, []), now_ms)
            if record.status is RaceStatus.FINISHED:
                check_events(world, record, by_race.get(race_id, []))
            if record.status is RaceStatus.FINISHED and not record.deal_held:
                check_views(world, record, moves, by_race.get(race_id, []))
        await check_ratings(world, store, by_race)
        for tid in world.tournament_ids:
            tour = await store.get_tournament(tid)
            phase = None if tour is None else tour.phase
            world.tally.events[f"tournaments stored as {phase}"] += 1
            if phase != "finished":
                world.tally.violation(f"tournament {tid} is {phase}")
    finally:
        await store.close()
    print("races by status:", dict(statuses))


async def check_ratings(world: World, store: RedisStore, by_race: dict[RaceId, list[Seat]]) -> None:
    """Each player of a rated race that finished (its only race) is rated for it once if it
    took part and the race had two placings or more (`RatingService.race_finished`), else
    not at all; or the race waits for the node's sweep of the races left unrated."""
    due = set(await store.races_to_rate())
    for race_id in sorted(world.rated):
        record = await store.get_race(race_id)
        if record is None or record.status is not RaceStatus.FINISHED:
            continue
        if race_id in due:
            world.tally.events["rated races left for the sweep"] += 1
            continue
        absent = absent_racers(record)
        placings = [[p for p in group if p not in absent] for group in placings_of(record)]
        placings = [group for group in placings if group]
        rated = {p for group in placings for p in group} if len(placings) > 1 else set()
        world.tally.events["rated races checked" if rated else "rated races not rated"] += 1
        for seat in by_race.get(race_id, []):
            if seat.player_id is None:
                continue
            ratings = [r for r in await store.get_ratings(seat.player_id) if r.game == "klondike"]
            counted = ratings[0].races if ratings else 0
            if counted != (1 if seat.player_id in rated else 0):
                world.tally.violation(
                    f"{seat.name}: rated for {counted} races after {race_id} "
                    f"({'taking part' if seat.player_id in rated else 'not rated there'})"
                )


def check_race(
    world: World, record: RaceRecord, moves: list[Any], seats: list[Seat], now_ms: int
) -> None:
    race_id = record.race_id
    if record.status is RaceStatus.FINISHED:
        told = [seat.finished_seen_ms for seat in seats if seat.finished_seen_ms is not None]
        if told and record.ends_at_ms is not None:
            late_s = (min(told) - record.ends_at_ms) / 1000
            world.tally.latest_end_s = max(world.tally.latest_end_s, late_s)
            if late_s > LATE_END_S:
                world.tally.violation(
                    f"race {race_id}: its first player told of its end {late_s:.1f} s after "
                    "its time limit"
                )
        report = verify_replay(build_replay(record, moves))
        for problem in report.problems:
            world.tally.violation(f"race {race_id}: replay: {problem}")
        for racer in record.racers:
            world.tally.events[f"racers {racer.state.value}"] += 1
        for seat in seats:
            racer = next(r for r in record.racers if r.player_id == seat.player_id)
            if racer.state.value == "gone" and not seat.gone_for_good:
                gone_against_grace(world, seat, racer.state_at_ms, record)
        stored = results_key(record.results or [])
        for seat in seats:
            sent = None if seat.finished is None else results_key(seat.finished.results)
            if sent is not None and sent != stored:
                world.tally.violation(
                    f"race {race_id}: {seat.name} was sent results {sent}, stored {stored}"
                )
    elif record.status in (RaceStatus.RUNNING, RaceStatus.COUNTDOWN):
        if record.ends_at_ms is not None and record.ends_at_ms + 2 * GRACE_S * 1000 < now_ms:
            world.tally.violation(
                f"race {race_id} is {record.status.value}, its end "
                f"{(now_ms - record.ends_at_ms) / 1000:.1f} s past"
            )
    elif record.status is RaceStatus.OPEN and record.created_at_ms + 4 * GRACE_S * 1000 < now_ms:
        world.tally.violation(f"race {race_id} is still open, its seats long left")


def gone_against_grace(
    world: World, seat: Seat, gone_at_ms: int | None, record: RaceRecord
) -> None:
    """A player who kept coming back was put out as gone: a violation unless it heard
    nothing from any node (a lost link, a node frozen) for the grace before that."""
    gone_at = (gone_at_ms or 0) / 1000
    spells = [(start, end) for start, end in seat.silences if start < gone_at]
    if seat.heard_at < gone_at:
        spells.append((seat.heard_at, gone_at))
    longest = max((min(end, gone_at) - start for start, end in spells), default=0.0)
    world.tally.events["racers gone while coming back"] += 1
    text = (
        f"{seat.name} in {record.race_id} was put out as gone; its longest silence before "
        f"that was {longest:.1f} s (grace {GRACE_S:g} s); silences: "
        + ", ".join(f"{start - gone_at:+.1f}..{end - gone_at:+.1f}" for start, end in spells)
    )
    if longest < GRACE_S - 1:
        world.tally.violation(text)
    else:
        print(f"note: {text}")


def check_events(world: World, record: RaceRecord, seats: list[Seat]) -> None:
    """A player who saw the race end knew, before its `race_finished`, every other racer's
    final figures (a player is not sent its own batched progress, so versions alone do not
    tell a missed event)."""
    final = {r.player_id: (r.moves, r.on_foundations) for r in record.racers}
    for seat in seats:
        if seat.finished is None:
            continue
        world.tally.events["event streams checked"] += 1
        for player_id, (version, figures) in sorted(seat.others.items()):
            if figures != final.get(player_id):
                world.tally.violation(
                    f"{seat.name} in {record.race_id}: last knew {player_id} at "
                    f"(moves, on foundations) {figures} (version {version}), stored "
                    f"{final.get(player_id)}; race_finished at version {seat.finished.version}"
                )


def boards_by_ply(world: World, record: RaceRecord, moves: list[MoveRecord]) -> list[Game]:
    """A racer's boards after each of its stored moves (`moves`, in ply order), from the deal."""
    game = deal(record.game, record.game_number)
    boards = [game.copy()]
    for move in moves:
        if move.ply != len(boards) - 1:
            world.tally.violation(
                f"{record.race_id}: {move.player_id}'s ply {move.ply} out of order"
            )
            break
        try:
            game.play(Move.parse(move.move))
        except EngineError as exc:
            world.tally.violation(f"{record.race_id}: {move.player_id}'s {move.move}: {exc}")
            break
        boards.append(game.copy())
    return boards


def check_views(
    world: World, record: RaceRecord, moves: list[MoveRecord], seats: list[Seat]
) -> None:
    """Every pile a racer or the race's spectator was shown equals the engine's player view
    of that racer's board at that ply, replayed from the stored moves."""
    boards: dict[PlayerId, list[Game]] = {}
    for racer in record.racers:
        own = sorted((m for m in moves if m.player_id == racer.player_id), key=lambda m: m.ply)
        boards[racer.player_id] = boards_by_ply(world, record, own)
    shown: list[tuple[str, PlayerId, int, list[PileModel]]] = [
        ("its spectator", player_id, ply, piles)
        for player_id, ply, piles in world.spectator_views.get(record.race_id, [])
    ]
    for seat in seats:
        if seat.player_id is not None:
            shown += [(seat.name, seat.player_id, ply, piles) for ply, piles in seat.views]
    for who, player_id, ply, piles in shown:
        racer_boards = boards.get(player_id, [])
        if ply >= len(racer_boards):
            world.tally.violation(f"{who} in {record.race_id}: a board of ply {ply} never stored")
            continue
        truth = view_piles(racer_boards[ply], [p.name for p in piles])
        for pile in piles:
            real = truth[pile.name]
            if pile.down != real.down or tuple(pile.cards) != real.cards:
                world.tally.violation(
                    f"{who} in {record.race_id}, {player_id} at ply {ply}: {pile.name} shown as "
                    f"{pile.down} down {pile.cards}, the engine has {real.down} down "
                    f"{list(real.cards)}"
                )
        world.tally.events[
            "views checked" if who != "its spectator" else "spectator views checked"
        ] += 1


ERROR_LINE = re.compile(r" (ERROR|CRITICAL) |^Traceback")


def check_logs(world: World) -> None:
    for proc in world.nodes:
        text = proc.log.read_text(errors="replace")
        for line in text.splitlines():
            if not ERROR_LINE.search(line):
                continue
            if any(re.search(pattern, line) for pattern, _ in EXPECTED_ERRORS):
                world.tally.events["expected ERROR lines"] += 1
                continue
            world.tally.violation(f"{proc.name} log: {line.strip()[:300]}")


# --- the run -------------------------------------------------------------------------------


async def run(args: argparse.Namespace, folder: Path) -> Tally:
    redis = redis_proc(folder / "redis")
    await redis.start()
    store = f"redis://127.0.0.1:{redis.port}/0"
    nodes = [node_proc(i, folder, store) for i in range(args.nodes)]
    world = World(args, random.Random(args.seed), redis, nodes)
    try:
        for node in nodes:
            await node.start()
        loop = asyncio.get_running_loop()
        began = loop.time()
        until = began + args.seconds + max(TIME_LIMITS_S) + 2 * GRACE_S + 30
        lanes = [asyncio.create_task(race_lane(world, i, until)) for i in range(args.lanes)]
        cup = asyncio.create_task(tournaments(world, until + 60))
        chaos = asyncio.create_task(faults(world))
        await asyncio.sleep(args.seconds)
        world.stop_new.set()
        print(f"{time.strftime('%H:%M:%S')} faults over; playing the races out", flush=True)
        await chaos
        for each in [*world.nodes, world.redis]:
            if each.frozen:
                each.signal(signal.SIGCONT)
        await asyncio.gather(*lanes)
        await cup
        print(f"{time.strftime('%H:%M:%S')} checking", flush=True)
        await asyncio.sleep(GRACE_S)  # the ends the last ticks apply
        await check_store(world)
    finally:
        for node in nodes:
            await node.stop()
        await redis.stop()
    check_logs(world)
    return world.tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long faults go on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=3, choices=(2, 3))
    parser.add_argument("--lanes", type=int, default=4, help="races played at once")
    parser.add_argument("--keep", type=Path, help="keep the logs and Redis's files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        tally = asyncio.run(run(args, folder))
    print("faults:", json.dumps(dict(sorted(tally.faults.items()))))
    print("events:", json.dumps(dict(sorted(tally.events.items()))))
    print("refusals:", json.dumps(dict(sorted(tally.rejections.items()))))
    print(f"latest end told after a time limit: {tally.latest_end_s:.1f} s")
    print(f"violations: {len(tally.violations)}")
    sys.exit(1 if tally.violations else 0)


if __name__ == "__main__":
    main()
