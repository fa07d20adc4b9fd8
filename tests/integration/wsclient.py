"""A real WebSocket test client: keeps every frame it receives and waits on messages."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, TypeVar

from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import PROTOCOL_VERSION, Hello, ServerMessage, Welcome

M = TypeVar("M", bound=BaseModel)

WAIT_S = 10.0


class Client:
    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.frames: list[bytes] = []
        self.received: list[ServerMessage] = []
        self.inbox: list[ServerMessage] = []
        self.changed = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())
        self.welcome: Welcome | None = None

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> Client:
        connection = await connect(url, compression=None, max_size=2**20, **kwargs)
        return cls(connection)

    async def _read(self) -> None:
        try:
            async for frame in self.connection:
                assert isinstance(frame, bytes), "the server sends binary frames only"
                self.frames.append(frame)
                message = decode_server(frame)
                async with self.changed:
                    self.received.append(message)
                    self.inbox.append(message)
                    self.changed.notify_all()
        except ConnectionClosed:
            pass
        finally:
            async with self.changed:
                self.changed.notify_all()

    async def send(self, message: BaseModel) -> None:
        await self.connection.send(encode(message))

    async def send_raw(self, data: bytes | str) -> None:
        await self.connection.send(data)

    async def expect(self, kind: type[M], where: Any = None, within: float = WAIT_S) -> M:
        """The first unread message of `kind` (matching `where`, a predicate), waiting for it."""

        def take() -> M | None:
            for index, message in enumerate(self.inbox):
                if isinstance(message, kind) and (where is None or where(message)):
                    del self.inbox[index]
                    return message
            return None

        async with asyncio.timeout(within), self.changed:
            while True:
                found = take()
                if found is not None:
                    return found
                if self.reader.done():
                    raise AssertionError(f"connection closed while waiting for {kind.__name__}")
                await self.changed.wait()

    def drop(self, kind: type[BaseModel]) -> None:
        """Forget unread messages of `kind`."""
        self.inbox = [m for m in self.inbox if not isinstance(m, kind)]

    async def hello(self, name: str | None = None, token: str | None = None) -> Welcome:
        await self.send(Hello(protocol=PROTOCOL_VERSION, name=name, token=token))
        self.welcome = await self.expect(Welcome)
        return self.welcome

    @property
    def player_id(self) -> PlayerId:
        assert self.welcome is not None and self.welcome.player_id is not None
        return self.welcome.player_id

    async def closed(self, within: float = WAIT_S) -> int | None:
        """Wait for the server to close; its close code."""
        async with asyncio.timeout(within):
            await self.connection.wait_closed()
        return self.connection.close_code

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.connection.close()
        with contextlib.suppress(Exception):
            await self.reader


async def connect_client(url: str, name: str | None = None, token: str | None = None) -> Client:
    """A client that has said hello (a new name, a token, or neither: a spectator)."""
    client = await Client.open(url)
    await client.hello(name, token)
    return client
