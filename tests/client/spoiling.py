"""A relay between clients and the real server that spoils frames from the server, and a
player racing through it: the set-up of the tests of boards the client has to ignore
(test_audit_client_boards.py, test_audit_client_resync.py, test_review_s19b_board_syncs.py).
`Pipe`, the relay's frame passing, serves other relays too (test_race_screen.py's)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from solrace.client.bots import Bot
from solrace.client.link_status import Incoming, StatusChange
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.engine import BoardView
from solrace.server.protocol.codec import encode_raw, unpack_map
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board
from solrace.tasks import cancel_and_wait

from .conftest import open_session

Frame = dict[str, Any]
#: Changes one frame from the server into a hostile one, or None to pass it on as it is.
Tamper = Callable[[Frame], Frame | None]


Data = bytes | str


@dataclass
class Pipe:
    """Passes frames between each client and the real server at `upstream`, each frame
    through `from_server` or `from_client` (which may change it or wait), in order."""

    upstream: str

    async def from_server(self, data: Data) -> Data:
        return data

    async def from_client(self, data: Data) -> Data:
        return data

    async def _relay(self, ws: ServerConnection) -> None:
        async with connect(self.upstream, max_size=None, compression=None) as up:

            async def down() -> None:
                async for data in up:
                    await ws.send(await self.from_server(data))

            async def upward() -> None:
                async for data in ws:
                    await up.send(await self.from_client(data))

            tasks = [asyncio.create_task(down()), asyncio.create_task(upward())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            except ConnectionClosed:
                pass
            finally:
                await cancel_and_wait(tasks)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a loopback port from the OS; its URL."""
        async with serve(self._relay, "127.0.0.1", 0, max_size=None, compression=None) as server:
            yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@dataclass
class Relay(Pipe):
    """Passes frames between clients and the real server at `upstream`; the first `times`
    frames from the server that `tamper` changes go on changed (None: every one; counted
    over all connections), and the types of the clients' messages are counted (`sent`).
    With `held`, the clients' `sync` frames from the first frame spoiled on wait until it is
    set."""

    tamper: Tamper
    times: int | None = 1
    held: asyncio.Event | None = None
    spoiled: list[Frame] = field(default_factory=list)
    sent: Counter[str] = field(default_factory=Counter)

    def _down(self, data: bytes | str) -> bytes | str:
        if isinstance(data, str) or (self.times is not None and len(self.spoiled) >= self.times):
            return data
        changed = self.tamper(unpack_map(data))
        if changed is None:
            return data
        self.spoiled.append(changed)
        return encode_raw(changed)

    def _holds(self, data: bytes | str) -> bool:
        """Does the client's frame `data` wait for `held`?"""
        if self.held is None or self.held.is_set() or not self.spoiled:
            return False
        return isinstance(data, bytes) and unpack_map(data).get("type") == "sync"

    def _up(self, data: bytes | str) -> bytes | str:
        if isinstance(data, bytes):
            self.sent[str(unpack_map(data).get("type"))] += 1
        return data

    async def from_server(self, data: Data) -> Data:
        return self._down(data)

    async def from_client(self, data: Data) -> Data:
        if self._holds(data):
            assert self.held is not None
            await self.held.wait()
        return self._up(data)


def junk_board(frame: Frame) -> Frame | None:
    """A `board`, its piles one klondike does not have."""
    if frame.get("type") != "board":
        return None
    board = {**frame["board"], "piles": [{"name": "zz", "down": 0, "cards": ["??"]}]}
    return {**frame, "board": board}


def junk_ack(frame: Frame) -> Frame | None:
    """A `move_ack`, its changed piles one klondike does not have."""
    if frame.get("type") != "move_ack":
        return None
    return {**frame, "piles": [{"name": "t0", "down": 0, "cards": ["AS"]}]}


@dataclass
class Player:
    """A session through `url` (pumped), what it heard, and a bot racing it directly."""

    session: Session
    pump: asyncio.Task[None]
    heard: list[Incoming]

    @classmethod
    @asynccontextmanager
    async def racing(cls, url: str, server_url: str) -> AsyncIterator[tuple[Player, Bot]]:
        """alice's session through `url` and the bot bob on `server_url` (greedy, 5 s
        between moves), both connected; closed after the block."""
        session, pump = await open_session(url, "alice", backoff_s=(0.05, 0.1))
        heard: list[Incoming] = []
        session.listeners.append(heard.append)
        bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=5)
        await bot.connect()
        try:
            yield cls(session, pump, heard), bot
        finally:
            await bot.close()
            await cancel_and_wait([pump])
            await session.conn.close()

    @property
    def me(self) -> PlayerId:
        return PlayerId(self.session.me or "")

    def boards_heard(self, race_id: RaceId) -> int:
        return sum(1 for m in self.heard if isinstance(m, Board) and m.race_id == race_id)

    def board(self, race_id: RaceId) -> BoardView | None:
        return self.session.state.my_board(race_id)

    def links(self) -> list[StatusChange]:
        return [m for m in self.heard if isinstance(m, StatusChange)]
