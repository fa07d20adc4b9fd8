"""Stateful protocol fuzzer: many clients send random messages, in random orders, to one live
node (or several on one Redis), beside an honest race, and every invariant of bad input is
checked.

Run: python bench/fuzz.py --seconds 60 --clients 20 --seed 1 [--nodes 2]

The node is a real `solrace serve` subprocess on a free port and a fresh data folder. It runs
once per phase: `open` (the environment of `load.py`'s `server_env`: no rate or connection
limits, so that floods do not close every connection) and `default` (the default rate budget
and connection limits), on the same data folder, then once more (a restart) to read back what
the phases left. With `--nodes N` (2 and up) a `redis-server` starts on a free port (as
`faults.py` starts it) and N nodes on it (`--redis`, each its own folder and log), started
afresh for each phase and the restart; every fuzz connection goes to a node drawn at random, a
player's second connection mostly to another node than its first, and the two honest racers are
on two different nodes. In each phase every fuzz client draws its messages from the client
message union (`server/protocol/messages.py`): `hello` with a new name (with or without a key),
its own token, another fuzz player's token, a forged one, none, or a wrong protocol; races
created with random games, seats, time limits, invite codes and game numbers; join, leave,
start, resign, watch, unwatch, sync and get_replay on races seen and races made up; moves that
are legal on the client's board, replayed (same `seq`), reused (`seq` for another move), or
random text; the lobby, leaderboards, profiles; tournaments created with the right admin token
or a wrong one, joined, checked into, left, watched, and administered. A share of its frames is
schema-invalid (a field dropped, added or of the wrong type) and a smaller share garbage
(random bytes, msgpack that is not a map, a text frame, a frame over the size cap, a ping flood
in the `default` phase), now and then it drops its connection without a word, and now and then
a second connection of its player says hello while the first still sends requests (the first is
replaced, 4003). Beside them two honest racers play legal moves (the engine's own, on a deal
they named) in one private race after another.

Violations (each printed, and the exit status is 1 if any):
- a close code 1011 or one the close-code table lacks, an `error` with code `internal` or one
  `ErrorCode` lacks, a frame from the server that is not a valid server message;
- an ERROR or CRITICAL line or a traceback in a node's log;
- an honest move with no ack within `HONEST_WAIT_S`, an honest race that does not finish;
- an acknowledged move the store lacks, or holds with another `seq` or move (read with the
  project's own `SqliteStore` or `RedisStore`);
- a game number in a frame before the race's deal was revealed (`race_finished`, a snapshot or
  replay that carries it, a tournament round's `game_numbers`); a card in a frame that should
  carry none; a board or ack that is not exactly the engine's view for its receiver; a
  refusal naming a card that is face up on none of the mover's boards from its last ack on;
  a race's event on a connection whose version is not above every one it had before;
- a node that does not answer `/healthz`, or does not stop with exit status 0 on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import shutil
import signal
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults import Proc, redis_proc
from load import free_port, server_env
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from solrace.engine import (
    GAME_IDS,
    Audience,
    BoardView,
    Game,
    PileView,
    board_from_view,
    deal,
    replay,
    view_piles,
)
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_server, encode_raw, unpack_map
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    Error,
    MoveAck,
    MoveRejected,
    PileModel,
    Progress,
    RaceFinished,
    RaceList,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    Replay,
    ServerMessage,
    Welcome,
)
from solrace.server.protocol.records import MoveRecord, RaceRecord, RaceStatus
from solrace.server.protocol.tournament_messages import TournamentList, TournamentView
from solrace.server.protocol.views import board_for, pile_models
from solrace.server.store.base import Store
from solrace.server.store.redis import RedisStore
from solrace.server.store.sqlite import SqliteStore

ADMIN_TOKEN = "fuzz-admin-token-0123456789abcdef"
SECRET = "fuzz-secret-for-the-node-tokens"
#: How long an honest racer waits for an ack (or a race for its finish) before it is a violation.
HONEST_WAIT_S = 15.0
#: Game numbers shorter than this are not looked for in frames (a short one, "7", matches
#: bytes anywhere); every secret number is 17-20 digits, every long one the fuzz names 12+.
MIN_NUMBER_CHARS = 12
CARD = re.compile(r"^[A2-9TJQK][CSHD]$")
CARD_IN_TEXT = re.compile(r"\b[A2-9TJQK][CSHD]\b")
#: Close codes a client may get: the table's, but 1011 (a bug, or an unanswered keepalive ping,
#: which these clients always answer).
ALLOWED_CLOSES = {int(c) for c in CloseCode} - {int(CloseCode.INTERNAL_ERROR)}
KNOWN_ERRORS = {c.value for c in ErrorCode}
ALL_STATUSES = list(RaceStatus)
FORMATS = ["single_elimination", "double_elimination", "swiss", "round_robin", "heats"]
ADMIN_ACTS = ["open_check_in", "start", "pause", "resume", "forfeit", "correct_result", "drop"]


# --- what was seen ---------------------------------------------------------------------------


@dataclass
class Heard:
    """One frame a client received: its place in the order of every client's frames."""

    index: int
    conn: int
    player: str | None
    data: bytes
    message: ServerMessage


@dataclass
class Ledger:
    """Everything the clients sent and heard, shared by all of them."""

    violations: Counter[str] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    closes: Counter[str] = field(default_factory=Counter)
    heard: list[Heard] = field(default_factory=list)
    #: (race, player, ply) -> (seq, move) of every ack any client got.
    acks: dict[tuple[str, str, int], tuple[int, str]] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    races: list[str] = field(default_factory=list)
    invites: dict[str, str] = field(default_factory=dict)
    #: race -> the latest (epoch, version) any client saw of it.
    versions: dict[str, tuple[str, int]] = field(default_factory=dict)
    tournaments: list[str] = field(default_factory=list)
    players: list[str] = field(default_factory=list)
    honest_acks: int = 0
    honest_races: int = 0
    #: The longest an honest racer waited for an ack or a race's start, in seconds (how
    #: loaded the nodes were).
    slowest_honest_s: float = 0.0
    connections: int = 0

    def violation(self, text: str) -> None:
        self.violations[text] += 1

    def note_race(self, race_id: str) -> None:
        if race_id not in self.races:
            self.races.append(race_id)

    def note_tournament(self, tournament_id: str) -> None:
        if tournament_id not in self.tournaments:
            self.tournaments.append(tournament_id)


class Link:
    """One WebSocket connection: every frame it receives goes into the ledger, checked."""

    def __init__(self, ws: ClientConnection, ledger: Ledger, label: str, url: str) -> None:
        #: The node it is connected to.
        self.url = url
        #: An honest racer's token is kept from the fuzz clients (another connection of the
        #: same player closes this one, 4003, by design).
        self.honest = label.startswith("honest")
        self.ws = ws
        self.ledger = ledger
        self.label = label
        ledger.connections += 1
        self.number = ledger.connections
        self.player: str | None = None
        self.token: str | None = None
        #: Connections a twin took over (closed by the server unless its hello was refused).
        self.earlier: list[Link] = []
        self.welcomed = False
        #: The connection's hello was refused (a name taken, say): it may send another.
        self.hello_refused = False
        self.inbox: list[ServerMessage] = []
        self.changed = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, ledger: Ledger, label: str) -> Link | None:
        try:
            ws = await connect(url, compression=None, max_size=None, open_timeout=10)
        except InvalidStatus as exc:
            ledger.answers[f"http {exc.response.status_code}"] += 1
            return None
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            ledger.answers[f"connect failed: {type(exc).__name__}"] += 1
            return None
        return cls(ws, ledger, label, url)

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                self._take(frame)
                async with self.changed:
                    self.changed.notify_all()
        except ConnectionClosed:
            pass
        finally:
            self._closed()
            async with self.changed:
                self.changed.notify_all()

    def _take(self, frame: bytes | str) -> None:
        ledger = self.ledger
        if isinstance(frame, str):
            ledger.violation("the server sent a text frame")
            return
        try:
            message = decode_server(frame)
        except Exception as exc:
            ledger.violation(f"a frame from the server is no server message: {exc}"[:200])
            return
        if isinstance(message, Welcome):
            self.welcomed = True
            self.player, self.token = message.player_id, message.token
            if message.player_id is not None and message.token is not None and not self.honest:
                ledger.tokens[message.player_id] = message.token
                if message.player_id not in ledger.players:
                    ledger.players.append(message.player_id)
        ledger.heard.append(Heard(len(ledger.heard), self.number, self.player, frame, message))
        kind: str = message.type
        if isinstance(message, Error) and message.request == "hello":
            self.hello_refused = True
        if isinstance(message, Error | MoveRejected):
            kind = f"{message.type} {message.code}"
            if message.code not in KNOWN_ERRORS:
                ledger.violation(f"{message.type} with code {message.code!r}: {message}"[:300])
        ledger.answers[kind] += 1
        if isinstance(message, MoveAck) and self.player is not None:
            key = (message.race_id, self.player, message.ply)
            was = ledger.acks.setdefault(key, (message.seq, message.move))
            if was != (message.seq, message.move):
                ledger.violation(f"two acks of {key}: {was} and {(message.seq, message.move)}")
        if isinstance(message, RaceUpdate | RaceSnapshot | RaceStarted | Progress | RaceFinished):
            ledger.note_race(message.race_id)
            ledger.versions[message.race_id] = (message.epoch, message.version)
        elif isinstance(message, RaceList):
            for race in message.races:
                ledger.note_race(race.race_id)
        elif isinstance(message, TournamentView):
            ledger.note_tournament(message.tournament.tournament_id)
        elif isinstance(message, TournamentList):
            for summary in message.tournaments:
                ledger.note_tournament(summary.tournament_id)
        self.inbox.append(message)

    def _closed(self) -> None:
        received = self.ws.protocol.close_rcvd
        if received is None:
            self.ledger.closes["no close frame"] += 1
            return
        if not self.ws.protocol.close_rcvd_then_sent:
            self.ledger.closes["closed by the client"] += 1
            return
        self.ledger.closes[str(received.code)] += 1
        if received.code not in ALLOWED_CLOSES:
            self.ledger.violation(f"close code {received.code} ({received.reason!r})")

    @property
    def is_open(self) -> bool:
        return not self.reader.done()

    async def send(self, data: bytes | str, kind: str) -> bool:
        self.ledger.sent[kind] += 1
        try:
            await self.ws.send(data)
        except ConnectionClosed:
            return False
        return True

    async def expect(
        self, want: Callable[[ServerMessage], bool], within: float = HONEST_WAIT_S
    ) -> ServerMessage | None:
        """The first unread message `want` takes (taken out of the inbox), or None when it
        does not come within `within` seconds or the connection closes first."""

        def take() -> ServerMessage | None:
            for index, message in enumerate(self.inbox):
                if want(message):
                    del self.inbox[index]
                    return message
            return None

        try:
            async with asyncio.timeout(within), self.changed:
                while True:
                    found = take()
                    if found is not None or self.reader.done():
                        return found
                    await self.changed.wait()
        except TimeoutError:
            return None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        await self.reader

    def abort(self) -> None:
        """Drop the connection without a close frame."""
        self.ws.transport.abort()


def raw(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


# --- the honest racers -----------------------------------------------------------------------


def honest_move(game: Game, rng: random.Random) -> str | None:
    """A legal move that makes progress where it can (foundations first, never one off a
    foundation); None when there is none."""
    moves = [m for m in game.legal_moves() if not m.src.startswith("f")]
    up = [m for m in moves if m.dst.startswith("f")]
    return str(rng.choice(up or moves)) if moves else None


@dataclass
class Plan:
    """How the honest pair plays: until `done` is set and the ledger counts `goal` honest
    acks, `pause` seconds before each move (inside the rate budget of a node with the default
    limits)."""

    done: asyncio.Event
    goal: int
    pause: float

    def over(self, ledger: Ledger) -> bool:
        return self.done.is_set() and ledger.honest_acks >= self.goal


async def honest_races(urls: list[str], ledger: Ledger, rng: random.Random, plan: Plan) -> None:
    """Two honest racers, on two nodes drawn from `urls` where there are two, play private
    races of legal moves until the `plan` is over (they resign the race being played); each
    move must be acked within `HONEST_WAIT_S`."""
    tag = rng.randrange(10**6)
    links = []
    pair = rng.sample(urls, 2) if len(urls) > 1 else urls * 2
    for who, url in zip(("a", "b"), pair, strict=True):
        link = await Link.open(url, ledger, f"honest {who}")
        if link is None:
            ledger.violation("an honest racer could not connect")
            return
        links.append(link)
        await link.send(
            encode_raw(raw("hello", protocol=PROTOCOL_VERSION, name=f"h{tag}{who}")), "honest hello"
        )
        if await link.expect(lambda m: isinstance(m, Welcome)) is None:
            ledger.violation("an honest racer got no welcome")
            return
    creator, joiner = links
    try:
        while not plan.over(ledger):
            if not await honest_race(creator, joiner, ledger, rng, plan):
                return
            ledger.honest_races += 1
    finally:
        for link in links:
            await link.close()


async def honest_race(
    creator: Link, joiner: Link, ledger: Ledger, rng: random.Random, plan: Plan
) -> bool:
    """One race of the honest pair, both playing until stuck, won, 80 moves or the end of the
    plan, then resigning;
    False (after a violation) when the node stops answering."""
    number = str(rng.randrange(10**15, 10**16))
    code = "".join(rng.choices(string.ascii_letters, k=12))
    await creator.send(
        encode_raw(
            raw(
                "create_race",
                game="klondike",
                seats=2,
                time_limit_s=3600,
                invite_code=code,
                game_number=number,
            )
        ),
        "honest create_race",
    )
    update = await creator.expect(lambda m: isinstance(m, RaceUpdate))
    if not isinstance(update, RaceUpdate):
        ledger.violation("an honest create_race got no race_update")
        return False
    race_id = update.race_id
    await joiner.send(
        encode_raw(raw("join_race", race_id=race_id, invite_code=code)), "honest join_race"
    )
    joined = time.monotonic()
    for link in (creator, joiner):
        if await link.expect(lambda m: isinstance(m, RaceStarted) and m.race_id == race_id) is None:
            got = [str(m)[:120] for m in link.inbox if getattr(m, "race_id", None) == race_id]
            ledger.violation(
                f"an honest race did not start for {link.label} ({race_id}; it got {got})"[:600]
            )
            return False
    ledger.slowest_honest_s = max(ledger.slowest_honest_s, time.monotonic() - joined)
    results = await asyncio.gather(
        honest_play(creator, race_id, number, ledger, rng, plan),
        honest_play(joiner, race_id, number, ledger, random.Random(rng.random()), plan),
    )
    if not all(results):
        return False
    for link in (creator, joiner):
        finished = await link.expect(lambda m: isinstance(m, RaceFinished) and m.race_id == race_id)
        if finished is None:
            ledger.violation(f"an honest race did not finish after both racers were out: {race_id}")
            return False
    for link in (creator, joiner):
        link.inbox.clear()
    return True


async def honest_play(
    link: Link, race_id: RaceId, number: str, ledger: Ledger, rng: random.Random, plan: Plan
) -> bool:
    game = deal("klondike", number)
    for seq in range(80):
        move = honest_move(game, rng)
        if move is None or plan.over(ledger):
            break
        if plan.pause:
            await asyncio.sleep(plan.pause)
        sent = time.monotonic()
        await link.send(encode_raw(raw("move", race_id=race_id, seq=seq, move=move)), "honest move")

        def answers(m: ServerMessage, seq: int = seq) -> bool:
            if isinstance(m, MoveAck | MoveRejected):
                return m.race_id == race_id and m.seq == seq
            return isinstance(m, Error) and m.race_id == race_id

        ack = await link.expect(answers)
        if not isinstance(ack, MoveAck):
            ledger.violation(
                f"an honest move got {ack.type if ack else 'nothing'} (seq {seq} {move})"[:300]
            )
            return False
        ledger.honest_acks += 1
        ledger.slowest_honest_s = max(ledger.slowest_honest_s, time.monotonic() - sent)
        game.play(move)
        if ack.won or ack.stuck:
            return True
    await link.send(encode_raw(raw("resign", race_id=race_id)), "honest resign")
    return True


# --- the fuzz clients ------------------------------------------------------------------------


@dataclass
class Mine:
    """What a fuzz client knows of a race it races in: its board, its moves by `seq`."""

    game: str
    piles: dict[str, PileModel] = field(default_factory=dict)
    round: int = 1
    phase: str = "play"
    base_rank: str | None = None
    moves: dict[int, str] = field(default_factory=dict)
    next_seq: int = 0


class Fuzzer:
    """One fuzz client: a connection at a time, opened again after each close."""

    def __init__(
        self, number: int, urls: list[str], ledger: Ledger, rng: random.Random, tag: str
    ) -> None:
        self.number = number
        self.urls = urls
        self.ledger = ledger
        self.rng = rng
        self.name = f"f{tag}_{number}"
        self.key = f"key-{tag}-{number}-" + "k" * 16
        self.link: Link | None = None
        self.mine: dict[str, Mine] = {}
        #: The invite code of the client's last create_race, for the race it makes.
        self.code: str | None = None
        self.renamed = 0
        #: The last player this client was welcomed as (`mine` are its races), its token.
        self.player: str | None = None
        self.token: str | None = None
        #: Connections a twin took over (closed by the server unless its hello was refused).
        self.earlier: list[Link] = []

    # -- connection and identity --

    def node(self, other_than: str | None = None) -> str:
        """A node's URL drawn at random (one other than `other_than` three times in four);
        with one node, that one (and nothing drawn, so a seed plays as it did)."""
        if len(self.urls) == 1:
            return self.urls[0]
        urls = self.urls
        if other_than is not None and self.rng.random() < 0.75:
            urls = [u for u in urls if u != other_than]
        return self.rng.choice(urls)

    async def connect(self) -> None:
        link = await Link.open(self.node(), self.ledger, self.name)
        if link is None:
            return
        self.link = link
        rng = self.rng
        pick = rng.random()
        tokens = self.ledger.tokens
        if self.token is not None and rng.random() < 0.4:  # back as the player it was
            hello = raw("hello", protocol=PROTOCOL_VERSION, token=self.token)
        elif pick < 0.35:
            hello = raw("hello", protocol=PROTOCOL_VERSION, name=self.name, key=self.key)
        elif pick < 0.5 and tokens:
            hello = raw("hello", protocol=PROTOCOL_VERSION, token=rng.choice(list(tokens.values())))
        elif pick < 0.6:
            hello = raw("hello", protocol=PROTOCOL_VERSION, name=f"{self.name}x{rng.randrange(50)}")
        elif pick < 0.7:
            hello = raw("hello", protocol=PROTOCOL_VERSION)
        elif pick < 0.75:
            hello = raw("hello", protocol=PROTOCOL_VERSION, token=self.forged_token())
        elif pick < 0.8:
            hello = raw("hello", protocol=rng.choice([0, 2, -1, 2**40]), name=self.name)
        elif pick < 0.85:
            hello = raw(
                "hello",
                protocol=PROTOCOL_VERSION,
                name=rng.choice(self.ledger.names or [self.name]),
            )
        elif pick < 0.9:
            return  # no hello: every request gets hello_required
        else:
            hello = raw("hello", protocol=PROTOCOL_VERSION, name=self.name, key=self.key + "other")
        self.ledger.names.append(self.name)
        await link.send(encode_raw(hello), "hello")

    def forged_token(self) -> str:
        rng = self.rng
        players = self.ledger.players or ["p0123456789abcdef"]
        return rng.choice(
            [
                f"v1.{rng.choice(players)}.{''.join(rng.choices(string.ascii_letters, k=43))}",
                "v1.p0000000000000000.AAAA",
                "not-a-token",
                "",
                "v2." + "x" * 150,
            ]
        )

    # -- what the client learns from its frames --

    def learn(self) -> None:
        link = self.link
        if link is None:
            return
        if link.token is not None:
            self.token = link.token
        if link.welcomed and link.player != self.player:  # another player: other races
            self.player = link.player
            self.mine.clear()
        for message in link.inbox:
            if isinstance(message, Board) and message.player_id == link.player:
                mine = self.mine.setdefault(message.race_id, Mine(message.board.game))
                mine.piles = {p.name: p for p in message.board.piles}
                mine.round, mine.phase = message.board.round, message.board.phase
                mine.base_rank = message.board.base_rank
            elif isinstance(message, MoveAck) and message.race_id in self.mine:
                mine = self.mine[message.race_id]
                mine.piles.update({p.name: p for p in message.piles})
            elif isinstance(message, RaceUpdate) and link.player is not None:
                if any(r.player_id == link.player for r in message.race.racers):
                    self.mine.setdefault(message.race_id, Mine(message.race.game))
                if message.race.creator == link.player and message.race.private:
                    self.ledger.invites.setdefault(message.race_id, self.code or "")
        link.inbox.clear()

    # -- what it sends --

    def race_id(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.35 and self.mine:
            return rng.choice(list(self.mine))
        if pick < 0.85 and self.ledger.races:
            return rng.choice(self.ledger.races[-12:])
        return rng.choice(
            [
                "r0000000000",
                f"r{rng.randrange(16**10):010x}",
                "",
                "x" * 65,
                "t1-1",
                "tffff-2",
                "r\u00e9",
                "t0-",
            ]
        )

    def tournament_id(self) -> str:
        rng = self.rng
        if self.ledger.tournaments and rng.random() < 0.8:
            return rng.choice(self.ledger.tournaments[-6:])
        return rng.choice(["t0000000", "tzz", "", "t" * 65, f"t{rng.randrange(10**6)}"])

    def player_ref(self) -> str:
        players = self.ledger.players
        return (
            self.rng.choice(players) if players and self.rng.random() < 0.8 else "p0123456789abcdef"
        )

    def game_number(self) -> str | None:
        rng = self.rng
        pick = rng.random()
        if pick < 0.5:
            return None
        if pick < 0.8:
            return str(rng.randrange(10**11, 10**20))
        return rng.choice(
            ["1", "0", "-1", "abc", "1e5", " 12", "99999999999999999999999", "\u0661\u0662"]
        )

    def move_text(self, mine: Mine | None) -> str:
        rng = self.rng
        if mine is not None and mine.piles and rng.random() < 0.6:
            try:
                board = BoardView(
                    game_id=mine.game,
                    piles={n: PileView(n, p.down, tuple(p.cards)) for n, p in mine.piles.items()},
                    round=mine.round,
                    phase=mine.phase,
                    base_rank=mine.base_rank,
                    progress=(0, 0),
                    won=False,
                    stuck=False,
                )
                moves = board_from_view(board).legal_moves()
            except Exception:
                moves = []
            if moves:
                return str(rng.choice(moves))
        piles = ["s", "w", "deal", *(f"t{k}" for k in range(8)), *(f"f{k}" for k in range(4))]
        pick = rng.random()
        if pick < 0.6:
            text = f"{rng.choice(piles)}-{rng.choice(piles)}"
            return text + (f":{rng.randrange(0, 14)}" if rng.random() < 0.3 else "")
        if pick < 0.8:
            return "deal"
        return rng.choice(
            ["", "x" * 33, "t1-t2:-1", "t99-f0", "undo", "t0-t1:99999999999", "\u00e9-t1", "-"]
        )

    def move(self) -> dict[str, Any]:
        rng = self.rng
        boards = [race_id for race_id, mine in self.mine.items() if mine.piles]
        race_id = rng.choice(boards) if boards and rng.random() < 0.7 else self.race_id()
        mine = self.mine.get(race_id)
        pick = rng.random()
        if mine is not None and mine.moves and pick < 0.2:  # resend: the same answer again
            seq = rng.choice(list(mine.moves))
            return raw("move", race_id=race_id, seq=seq, move=mine.moves[seq])
        text = self.move_text(mine)
        if mine is not None and mine.moves and pick < 0.3:  # a seq used already, another move
            return raw("move", race_id=race_id, seq=rng.choice(list(mine.moves)), move=text)
        if mine is None or pick > 0.95:
            return raw("move", race_id=race_id, seq=rng.randrange(0, 2**53), move=text)
        seq = mine.next_seq
        mine.next_seq += 1
        mine.moves[seq] = text
        return raw("move", race_id=race_id, seq=seq, move=text)

    def request(self) -> dict[str, Any]:
        """A random message of the client union, valid in shape (the server may refuse it)."""
        rng = self.rng
        kind = rng.choices(
            [
                "move",
                "create_race",
                "join_race",
                "start_race",
                "leave_race",
                "resign",
                "watch",
                "unwatch",
                "sync",
                "get_replay",
                "list_races",
                "ping",
                "hello",
                "get_leaderboard",
                "get_profile",
                "create_tournament",
                "list_tournaments",
                "watch_tournament",
                "unwatch_tournament",
                "join_tournament",
                "check_in",
                "leave_tournament",
                "tournament_admin",
            ],
            weights=[30, 8, 8, 5, 3, 2, 5, 2, 4, 3, 2, 2, 1, 1, 1, 2, 1, 2, 1, 3, 2, 1, 4],
        )[0]
        if kind == "move":
            return self.move()
        if kind == "create_race":
            code = rng.choice(
                [None, None, None, "code-" + str(rng.randrange(100)), " ", "\u200b", "y" * 65]
            )
            rated = rng.random() < 0.25
            return raw(
                "create_race",
                game=rng.choice([*GAME_IDS, "klondike", "klondike", "nope", "KLONDIKE", ""]),
                seats=rng.choice([2, 2, 2, 3, 4, 16, 1, 17, 0, -1]),
                time_limit_s=rng.choice([1, 2, 5, 30, 600, 3600, 14400, 14401, 0]),
                rated=rated,
                invite_code=code,
                game_number=None if rated and rng.random() < 0.8 else self.game_number(),
            )
        if kind == "join_race":
            race_id = self.race_id()
            code = (
                self.ledger.invites.get(race_id)
                if rng.random() < 0.6
                else rng.choice([None, "wrong", "code-1"])
            )
            return raw("join_race", race_id=race_id, invite_code=code)
        if kind in ("start_race", "leave_race", "resign", "watch", "unwatch", "get_replay"):
            return raw(kind, race_id=self.race_id())
        if kind == "sync":
            race_id = self.race_id()
            if race_id in self.ledger.versions and rng.random() < 0.7:  # events missed, or not
                epoch, version = self.ledger.versions[race_id]
                since = max(0, version - rng.choice([0, 1, 3, 10, 49, 50, 60]) + rng.choice([0, 1]))
                return raw("sync", race_id=race_id, epoch=epoch, since_version=since)
            return raw(
                "sync",
                race_id=race_id,
                epoch=rng.choice([None, "", "00000000", "x" * 20]),
                since_version=rng.choice([None, 0, 1, 5, 50, 2**53 - 1]),
            )
        if kind == "list_races":
            return raw("list_races", follow=rng.random() < 0.5)
        if kind == "ping":
            return raw("ping", nonce=rng.choice([0, -(2**63), 2**63 - 1, rng.randrange(1000)]))
        if kind == "hello":
            return raw("hello", protocol=PROTOCOL_VERSION, name=self.name)
        if kind == "get_leaderboard":
            return raw(
                "get_leaderboard",
                game=rng.choice([*GAME_IDS, "nope"]),
                limit=rng.choice([1, 20, 100]),
            )
        if kind == "get_profile":
            return rng.choice(
                [
                    raw("get_profile"),
                    raw("get_profile", player_id=self.player_ref()),
                    raw("get_profile", name=rng.choice(self.ledger.names or ["nobody"])),
                ]
            )
        if kind == "create_tournament":
            return raw(
                "create_tournament",
                admin_token=ADMIN_TOKEN if rng.random() < 0.7 else "wrong-" + str(rng.randrange(9)),
                name=f"cup {rng.randrange(1000)}",
                game=rng.choice(["klondike", "klondike", "colorado", "nope"]),
                format=rng.choice(FORMATS),
                best_of=rng.choice([1, 1, 3, 2]),
                time_limit_s=rng.choice([5, 30, 600, 0]),
                min_players=2,
                max_players=rng.choice([None, 2, 4, 8]),
                check_in_required=rng.random() < 0.5,
                no_show_grace_s=rng.choice([None, 0, 2, 120]),
                rated=rng.random() < 0.5,
            )
        if kind == "list_tournaments":
            return raw("list_tournaments", skip_finished=rng.choice([0, 0, 1, 500]))
        if kind != "tournament_admin":
            return raw(kind, tournament_id=self.tournament_id())
        act = rng.choice(ADMIN_ACTS)
        message = raw(
            "tournament_admin",
            tournament_id=self.tournament_id(),
            admin_token=ADMIN_TOKEN if rng.random() < 0.85 else "wrong",
            act=act,
        )
        if act in ("forfeit", "correct_result"):
            message["match_id"] = rng.choice(["W1-1", "W1-2", "R1-1", "H1-1", "L1-1", "nope"])
        if act in ("forfeit", "drop"):
            message["player_id"] = self.player_ref()
        if act == "correct_result":
            first, second = self.player_ref(), self.player_ref()
            message["race_number"] = rng.choice([1, 2, 5])
            message["placings"] = rng.choice([[[first], [second]], [[first, second]], [[first]]])
            if rng.random() < 0.5:
                message["cards"] = {first: rng.choice([0, 52, 53, -1]), second: 10}
            message["reason"] = "fuzz"
        return message

    def spoil(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message made schema-invalid: a field dropped, one added, or one of a wrong type."""
        rng = self.rng
        spoiled = dict(message)
        pick = rng.random()
        keys = [k for k in spoiled if k != "type"]
        if pick < 0.25 and keys:
            del spoiled[rng.choice(keys)]
        elif pick < 0.45:
            spoiled[rng.choice(["extra", "Type", "seq2", ""])] = 1
        elif pick < 0.85 and keys:
            spoiled[rng.choice(keys)] = rng.choice(
                [
                    "1",
                    1.5,
                    -1,
                    2**64 - 1,
                    -(2**63),
                    None,
                    [],
                    {},
                    b"\x00",
                    True,
                    "x" * 300,
                    [[[[1]]]],
                ]
            )
        else:
            spoiled["type"] = rng.choice(["mov", "MOVE", "", "x" * 40, 7, None, ["move"]])
        return spoiled

    def garbage(self) -> tuple[bytes | str, str]:
        """A frame no message is, and its kind."""
        rng = self.rng
        pick = rng.random()
        if pick < 0.2:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))), "garbage bytes"
        if pick < 0.4:
            return encode_raw(
                rng.choice([[1, 2], 7, "move", None, [{"type": "ping"}]])
            ), "garbage not a map"
        if pick < 0.5:
            return '{"type": "ping"}', "garbage text frame"
        if pick < 0.6:
            return encode_raw(raw("ping", pad="x" * 20_000)), "garbage oversized"
        if pick < 0.7:
            return b"\x91" * 2000 + b"\xc0", "garbage nested arrays"
        if pick < 0.8:
            return b"\x81\xa4type\xa4ping" + b"\x00", "garbage trailing byte"
        if pick < 0.9:
            return b"\x82\xa4type\xa4ping\xa5nonce\xd9\x02\xff\xfe", "garbage bad utf-8"
        return b"\xde\xff\xff" + b"\xa1a\x01" * 100, "garbage many fields"

    async def step(self, flood: bool) -> None:
        if self.link is None or not self.link.is_open:
            await self.connect()
            return
        link = self.link
        self.learn()
        rng = self.rng
        pick = rng.random()
        if pick < 0.01:
            self.ledger.sent["drop"] += 1
            link.abort()
            return
        if pick < 0.05:
            data, kind = self.garbage()
            await link.send(data, kind)
            return
        if pick < 0.07 and link.welcomed and self.token is not None:
            await self.twin(link, self.token)
            return
        if flood and pick < 0.08:
            for _ in range(150):
                if not await link.send(encode_raw(raw("ping")), "flood ping"):
                    break
            return
        if link.hello_refused and not link.welcomed and pick < 0.5:  # another name
            link.hello_refused = False
            self.renamed += 1
            name = f"{self.name}n{self.renamed}"
            await link.send(encode_raw(raw("hello", protocol=PROTOCOL_VERSION, name=name)), "hello")
            return
        message = self.request()
        kind = str(message["type"])
        if kind == "create_race":
            self.code = message["invite_code"]
        if pick < 0.13:
            message, kind = self.spoil(message), f"invalid {kind}"
        await link.send(encode_raw(message), kind)

    async def twin(self, link: Link, token: str) -> None:
        """A second connection of the player says hello while the first sends requests (the
        first is replaced, 4003, once the hello is answered); the second is kept. With several
        nodes, it is mostly on another node than the first."""
        second = await Link.open(self.node(other_than=link.url), self.ledger, self.name)
        if second is None:
            return
        self.ledger.sent["twin"] += 1
        await second.send(encode_raw(raw("hello", protocol=PROTOCOL_VERSION, token=token)), "hello")
        for _ in range(self.rng.randrange(1, 4)):
            message = self.request()
            await link.send(encode_raw(message), str(message["type"]))
        self.link = second
        self.earlier.append(link)

    async def close(self) -> None:
        for link in [*self.earlier, *([] if self.link is None else [self.link])]:
            await link.close()


# --- the node --------------------------------------------------------------------------------


def node_env(limits: str) -> dict[str, str]:
    """The node's environment: `open` is `load.py`'s (no rate or connection limits), `default`
    keeps the default limits; both with no countdown, a short grace and short races allowed."""
    env = server_env() if limits == "open" else dict(os.environ)
    env.update(
        SOLRACE_COUNTDOWN_S="0",
        SOLRACE_LOG_LEVEL="WARNING",
        SOLRACE_SECRET=SECRET,
        SOLRACE_ADMIN_TOKEN=ADMIN_TOKEN,
        SOLRACE_GRACE_S="3",
        SOLRACE_MIN_TIME_LIMIT_S="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


@dataclass
class Node:
    """A `solrace serve` subprocess on a free port, its output appended to `log`."""

    process: asyncio.subprocess.Process
    port: int
    log: Path

    @classmethod
    async def start(cls, data_dir: Path, log: Path, limits: str, redis: str | None) -> Node:
        """A node on SQLite in `data_dir`, or on the Redis at the URL `redis`."""
        port = free_port()
        shared = () if redis is None else ("--redis", redis)
        with log.open("ab") as sink:
            process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "solrace.cli", "serve"),
                *("--port", str(port), "--data-dir", str(data_dir), *shared),
                stdout=sink,
                stderr=sink,
                env=node_env(limits),
                start_new_session=True,
            )
        node = cls(process, port, log)
        deadline = time.monotonic() + 30
        while not await node.healthy():
            if process.returncode is not None or time.monotonic() > deadline:
                await node.kill()
                raise RuntimeError(
                    f"the node did not start (exit {process.returncode}):\n{log_tail(log)}"
                )
            await asyncio.sleep(0.05)
        return node

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def healthy(self) -> bool:
        """Does `GET /healthz` get `200 ok`?"""
        try:
            async with asyncio.timeout(5):
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: fuzz\r\n\r\n")
                answer = await reader.read()
                writer.close()
        except (OSError, TimeoutError):
            return False
        return answer.startswith(b"HTTP/1.1 200") and answer.rstrip().endswith(b"ok")

    async def stop(self) -> int:
        """SIGTERM; its exit status (killed after 30 s: -9)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(30):
                return await self.process.wait()
        except TimeoutError:
            await self.kill()
            return -9

    async def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()


@dataclass
class Cluster:
    """The nodes of a run: one on SQLite in the data folder (its log `node.log`), or `count`
    on one redis-server (`redis/`), each with its folder `node<i>/` and log `node<i>.log`;
    started afresh for each phase and the restart, Redis kept."""

    folder: Path
    count: int
    redis: Proc | None = None
    nodes: list[Node] = field(default_factory=list)

    @property
    def redis_url(self) -> str | None:
        return None if self.redis is None else f"redis://127.0.0.1:{self.redis.port}/0"

    @property
    def logs(self) -> list[Path]:
        if self.count == 1:
            return [self.folder / "node.log"]
        return [self.folder / f"node{i}.log" for i in range(self.count)]

    async def open(self) -> None:
        if self.count > 1:
            self.redis = redis_proc(self.folder / "redis")
            if shutil.which(self.redis.command[0]) is None:
                raise RuntimeError("--nodes 2 and up need redis-server on PATH")
            await self.redis.start()

    async def start(self, limits: str) -> list[str]:
        """Every node started with the phase's `limits`; their URLs."""
        try:
            for index, log in enumerate(self.logs):
                data = self.folder if self.count == 1 else self.folder / f"node{index}"
                self.nodes.append(await Node.start(data, log, limits, self.redis_url))
        except BaseException:
            await self.stop()
            raise
        return [node.url for node in self.nodes]

    async def healthy(self) -> bool:
        return all([await node.healthy() for node in self.nodes])

    async def stop(self) -> list[int]:
        """SIGTERM to every node; their exit statuses."""
        statuses = [await node.stop() for node in self.nodes]
        self.nodes.clear()
        return statuses

    def store(self) -> Store:
        """The store the nodes kept, unopened: read with the project's own class."""
        if self.redis_url is not None:
            return RedisStore(self.redis_url)
        return SqliteStore(self.folder / "solrace.sqlite3")

    async def close(self) -> None:
        await self.stop()
        if self.redis is not None:
            await self.redis.stop()


# --- a run -----------------------------------------------------------------------------------


@dataclass
class Phase:
    """One phase's settings: the limits, and how long (seconds, or steps per client)."""

    limits: str
    seconds: float | None = None
    steps: int | None = None


async def run_phase(
    urls: list[str], ledger: Ledger, phase: Phase, clients: int, rng: random.Random, tag: str
) -> None:
    """The fuzz clients and the honest pair against the nodes at `urls`, until the phase's
    seconds have passed or every client took its steps (and the honest pair had 20 acks)."""
    done = asyncio.Event()
    acks_before = ledger.honest_acks
    goal = ledger.honest_acks + 20
    flood = phase.limits == "default"
    plan = Plan(done, goal, 0.25 if flood else 0)
    honest = asyncio.create_task(honest_races(urls, ledger, random.Random(rng.random()), plan))
    fuzzers = [Fuzzer(i, urls, ledger, random.Random(rng.random()), tag) for i in range(clients)]
    pause = 0.2 if flood else 0.01
    end = None if phase.seconds is None else time.monotonic() + phase.seconds

    async def drive(fuzzer: Fuzzer) -> None:
        taken = 0
        while (end is None or time.monotonic() < end) and (
            phase.steps is None or taken < phase.steps
        ):
            await fuzzer.step(flood)
            taken += 1
            await asyncio.sleep(fuzzer.rng.uniform(0, 2 * pause))

    try:
        await asyncio.gather(*(drive(f) for f in fuzzers))
        done.set()
        async with asyncio.timeout(10 * HONEST_WAIT_S):
            await honest
    finally:
        done.set()
        for fuzzer in fuzzers:
            await fuzzer.close()
        if not honest.done():
            honest.cancel()
    if ledger.honest_acks < goal:
        ledger.violation(
            f"the honest racers had {ledger.honest_acks - acks_before} acks in the phase"
        )


async def fuzz(
    data_dir: Path, phases: list[Phase], clients: int, seed: int, nodes: int = 1
) -> Ledger:
    """Every phase on one data folder (and one Redis, for `nodes` of 2 and up), a restart,
    then the checks; the ledger holds what was sent, answered and violated."""
    ledger = Ledger()
    rng = random.Random(seed)
    tag = f"{seed % 1000}{rng.randrange(1000)}"
    cluster = Cluster(data_dir, nodes)
    await cluster.open()
    try:
        for phase in phases:
            urls = await cluster.start(phase.limits)
            try:
                await run_phase(urls, ledger, phase, clients, rng, tag)
                if not await cluster.healthy():
                    ledger.violation(f"no /healthz after the {phase.limits} phase")
            finally:
                statuses = await cluster.stop()
            if any(statuses):
                ledger.violation(f"the exit statuses after the {phase.limits} phase: {statuses}")
        await cluster.start("open")  # a restart reads back what was stored
        try:
            if not await cluster.healthy():
                ledger.violation("no /healthz after the restart")
        finally:
            statuses = await cluster.stop()
        if any(statuses):
            ledger.violation(f"the exit statuses after the restart: {statuses}")
        for log in cluster.logs:
            check_log(log.read_text(errors="replace"), ledger)
        races, moves = await read_store(cluster.store())
    finally:
        await cluster.close()
    check_acks(ledger, moves)
    check_frames(ledger, races, moves)
    return ledger


# --- the checks ------------------------------------------------------------------------------


def check_log(text: str, ledger: Ledger) -> None:
    for line in text.splitlines():
        if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback"):
            ledger.violation(f"log: {line[:300]}")


async def read_store(
    store: Store,
) -> tuple[dict[str, RaceRecord], dict[tuple[str, str], list[MoveRecord]]]:
    """Every race in the nodes' `store` (unopened: SQLite or Redis) and every race's moves by
    player (in ply order), read with the store's own reader."""
    await store.open()
    try:
        races: dict[str, RaceRecord] = {r.race_id: r for r in await store.list_races(ALL_STATUSES)}
        moves: dict[tuple[str, str], list[MoveRecord]] = {}
        for race_id in races:
            for move in await store.get_moves(RaceId(race_id)):
                moves.setdefault((race_id, move.player_id), []).append(move)
    finally:
        await store.close()
    return races, moves


def check_acks(ledger: Ledger, moves: dict[tuple[str, str], list[MoveRecord]]) -> None:
    """Every move acked to anyone is in the store at its ply, with its seq and text."""
    for (race_id, player, ply), (seq, text) in ledger.acks.items():
        held = moves.get((race_id, player), [])
        if ply >= len(held) or held[ply].ply != ply:
            ledger.violation(f"acked move missing from the store: {race_id} {player} ply {ply}")
        elif (held[ply].seq, held[ply].move) != (seq, text):
            ledger.violation(
                f"acked move {race_id} {player} ply {ply}: acked {(seq, text)}, "
                f"stored {(held[ply].seq, held[ply].move)}"
            )


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def reveals(message: ServerMessage) -> set[str]:
    """The game numbers `message` may carry: it reveals them."""
    if isinstance(message, RaceFinished | RaceSnapshot) and message.game_number:
        return {message.game_number}
    if isinstance(message, Replay):
        return {message.replay.game_number}
    if isinstance(message, TournamentView):
        return {n for r in message.tournament.rounds for n in r.game_numbers.values()}
    return set()


def check_frames(
    ledger: Ledger, races: dict[str, RaceRecord], moves: dict[tuple[str, str], list[MoveRecord]]
) -> None:
    """No game number before its reveal, no card where none belongs, boards and acks exactly
    the engine's view for their receiver, refusals naming only cards shown, each race's
    events in rising versions on each connection (a snapshot aside)."""
    numbers = {r.game_number for r in races.values() if len(r.game_number) >= MIN_NUMBER_CHARS}
    revealed: set[str] = set()
    #: (player, race) -> the plies acked to the player so far.
    acked: dict[tuple[str | None, str], int] = {}
    #: (race, player) -> the face-up cards of the player's view after each ply.
    face_up: dict[tuple[str, str], list[set[str]]] = {}
    replays: dict[tuple[str, str, int], Game] = {}

    def shown_after(race: RaceRecord, player: str) -> list[set[str]]:
        key = (race.race_id, player)
        if key not in face_up:
            game = replay(race.game, race.game_number, [])
            seen = [set(c for p in board_for(game, Audience.PLAYER).piles for c in p.cards)]
            for move in moves.get(key, []):
                game.play(move.move)
                seen.append(set(c for p in board_for(game, Audience.PLAYER).piles for c in p.cards))
            face_up[key] = seen
        return face_up[key]

    def board_at(race: RaceRecord, player: str, ply: int) -> Game:
        key = (race.race_id, player, ply)
        if key not in replays:
            played = [m.move for m in moves.get((race.race_id, player), [])[:ply]]
            replays[key] = replay(race.game, race.game_number, played)
        return replays[key]

    #: (connection, race) -> the epoch and version of the race's latest event it got.
    latest: dict[tuple[int, str], tuple[str, int]] = {}
    for heard in ledger.heard:
        message = heard.message
        if isinstance(message, RaceUpdate | RaceStarted | Progress | RaceFinished | RaceSnapshot):
            epoch, version = latest.get((heard.conn, message.race_id), (message.epoch, -1))
            if (
                epoch == message.epoch
                and version >= message.version
                and not isinstance(message, RaceSnapshot)
            ):
                ledger.violation(
                    f"a {message.type} of version {message.version} after version {version} "
                    f"on one connection ({message.race_id})"
                )
            if epoch != message.epoch:  # the node restarted: versions start again
                version = -1
            latest[heard.conn, message.race_id] = (message.epoch, max(version, message.version))
        for number in numbers - revealed:
            if number.encode() in heard.data and number not in reveals(message):
                ledger.violation(f"game number {number} in a {message.type} before its reveal")
        revealed |= reveals(message) & numbers
        if isinstance(message, Board):
            race = races.get(message.race_id)
            if race is None:
                ledger.violation(f"a board of a race the store lacks: {message.race_id}")
                continue
            mine = message.player_id == heard.player
            audience = Audience.PLAYER if mine else Audience.SPECTATOR
            if message.board != board_for(board_at(race, message.player_id, message.ply), audience):
                ledger.violation(
                    f"a board not the engine's {audience} view: {message.race_id} ply {message.ply}"
                )
        elif isinstance(message, MoveAck):
            race = races.get(message.race_id)
            if race is None or heard.player is None:
                ledger.violation(f"an ack of a race the store lacks: {message.race_id}")
                continue
            check_ack(ledger, race, heard.player, message, moves)
            key = (heard.player, message.race_id)
            acked[key] = max(acked.get(key, 0), message.ply + 1)
        elif isinstance(message, MoveRejected):
            named = set(CARD_IN_TEXT.findall(message.reason)) - set(
                CARD_IN_TEXT.findall(message.move)
            )
            race = races.get(message.race_id)
            if not named:
                continue
            if race is None or heard.player is None:
                ledger.violation(f"{message.move!r} refused naming cards {sorted(named)}")
                continue
            # The board the move was judged on is at a ply from the last one acked on:
            # its face-up cards must hold every card named.
            views = shown_after(race, heard.player)[acked.get((heard.player, race.race_id), 0) :]
            if not any(named <= cards for cards in views):
                ledger.violation(f"{message.move!r} refused naming unseen cards {sorted(named)}")
        elif not isinstance(message, Replay):
            cards = [s for s in strings(unpack_map(heard.data)) if CARD.match(s)]
            if cards:
                ledger.violation(f"a {message.type} carries cards {cards[:5]}")


def check_ack(
    ledger: Ledger,
    race: RaceRecord,
    player: str,
    ack: MoveAck,
    moves: dict[tuple[str, str], list[MoveRecord]],
) -> None:
    """A fresh ack's piles are the player's view of the piles after its move; a duplicate's,
    of the board at some ply from its move on (the board as it was when the resend came)."""
    played = [m.move for m in moves.get((race.race_id, player), [])]
    names = [p.name for p in ack.piles]
    game = replay(race.game, race.game_number, played[: ack.ply + 1])
    if pile_models(view_piles(game, names)) == ack.piles:
        return
    if ack.duplicate:
        for move in played[ack.ply + 1 :]:
            game.play(move)
            if pile_models(view_piles(game, names)) == ack.piles:
                return
    ledger.violation(
        f"an ack not the engine's view: {race.race_id} ply {ack.ply} dup {ack.duplicate}"
    )


# --- the command -----------------------------------------------------------------------------


def report(ledger: Ledger) -> str:
    lines = [
        f"connections: {ledger.connections}, honest races: {ledger.honest_races}, "
        f"honest acks: {ledger.honest_acks}, slowest honest ack or start: "
        f"{ledger.slowest_honest_s:.1f} s",
        f"races seen: {len(ledger.races)}, tournaments seen: {len(ledger.tournaments)}, "
        f"acks checked against the store: {len(ledger.acks)}, frames checked: {len(ledger.heard)}",
        "sent: " + ", ".join(f"{k} {n}" for k, n in sorted(ledger.sent.items())),
        "answers: " + ", ".join(f"{k} {n}" for k, n in sorted(ledger.answers.items())),
        "closes: " + ", ".join(f"{k} {n}" for k, n in sorted(ledger.closes.items())),
    ]
    if ledger.violations:
        lines.append(f"VIOLATIONS ({sum(ledger.violations.values())}):")
        lines += [f"  {n}x {text}" for text, n in ledger.violations.most_common()]
    else:
        lines.append("no violation")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument(
        "--clients", type=int, default=20, help="fuzz clients (the honest pair aside)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="nodes: 1 on SQLite, or 2 and up on one redis-server (started on a free port)",
    )
    parser.add_argument(
        "--phases",
        nargs="+",
        choices=["open", "default"],
        default=["open", "default"],
        help="the phases in order, each on a new node on the same data folder",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="use this data folder (kept: the logs are node.log, or node0.log, node1.log, ...)",
    )
    args = parser.parse_args()
    if args.nodes < 1:
        parser.error("--nodes must be 1 or more")
    phases = [Phase(limits, seconds=args.seconds) for limits in args.phases]
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        ledger = asyncio.run(fuzz(args.keep, phases, args.clients, args.seed, args.nodes))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            ledger = asyncio.run(fuzz(Path(tmp), phases, args.clients, args.seed, args.nodes))
    print(report(ledger))
    sys.exit(1 if ledger.violations else 0)


if __name__ == "__main__":
    main()
