"""A TCP proxy in front of a real Redis that can lose one reply after its command ran.

Armed with a command name (`lose_next_reply("EXEC")`), the proxy passes the next such command
on to Redis, reads Redis's whole answer to it (so the command has run), and instead of passing
the answer on closes that client connection: what a client sees when the link breaks just
after Redis applied its write. Error answers are passed on and keep the proxy armed (a
NOSCRIPT answer to an EVALSHA is no write). Every other byte goes through unchanged.

`before_next("EXEC", hook)` awaits `hook()` just before the next such command is passed on:
another client's write in between, e.g. one that makes Redis refuse a transaction's EXEC.

Answers are RESP3 (redis-py's default) or RESP2: the proxy counts whole values to match each
answer to its command, connection by connection (no pub/sub, no client tracking: their
messages answer no command).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65536


LINE_KINDS = frozenset(b"+-:_,#(")  # RESP3 values of one line
SIZED_KINDS = frozenset(b"$!=")  # a length, then that many bytes
ERROR_KINDS = frozenset(b"-!")
COUNTED_KINDS = {
    ord("*"): 1,
    ord("~"): 1,
    ord(">"): 1,
    ord("%"): 2,
    ord("|"): 2,
}  # values per count


def value_end(buf: bytes, start: int = 0) -> int | None:
    """Where the RESP3 (or RESP2) value that starts at `start` ends (the index after it), or
    None when `buf` does not hold all of it yet."""
    line_end = buf.find(b"\r\n", start)
    if line_end < 0:
        return None
    kind, head, after = buf[start], buf[start + 1 : line_end], line_end + 2
    if kind in LINE_KINDS:
        return after
    if kind in SIZED_KINDS:
        size = int(head)
        end = after if size < 0 else after + size + 2
        return end if len(buf) >= end else None
    if kind in COUNTED_KINDS:
        found: int | None = after
        values = max(int(head), 0) * COUNTED_KINDS[kind]
        if kind == ord("|"):
            values += 1  # an attribute comes before the value it describes
        for _ in range(values):
            assert found is not None
            found = value_end(buf, found)
            if found is None:
                return None
        return found
    raise ValueError(f"not a RESP value: {buf[start:line_end]!r}")


def command_name(command: bytes) -> bytes:
    """The upper-cased name of one whole command (an array of bulk strings)."""
    size_start = command.index(b"\r\n") + 2
    size_end = command.index(b"\r\n", size_start)
    size = int(command[size_start + 1 : size_end])
    return command[size_end + 2 : size_end + 2 + size].upper()


class ReplyLosingProxy:
    """Listens on 127.0.0.1 (a port from the OS) and connects each client to `target_url`'s
    Redis. `lost` counts the answers lost so far."""

    def __init__(self, target_url: str) -> None:
        self.target = urlsplit(target_url)
        self.lost = 0
        self._armed: bytes | None = None
        self._hook: tuple[bytes, Callable[[], Awaitable[None]]] | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """`target_url` with the proxy's host and port: a client of it goes through here."""
        assert self._server is not None, "proxy not started"
        port = self._server.sockets[0].getsockname()[1]
        return urlunsplit(self.target._replace(netloc=f"127.0.0.1:{port}"))

    def lose_next_reply(self, command: str) -> None:
        """Lose the next successful answer to `command` (any connection), once."""
        self._armed = command.upper().encode()

    @property
    def is_armed(self) -> bool:
        return self._armed is not None

    def before_next(self, command: str, hook: Callable[[], Awaitable[None]]) -> None:
        """Await `hook()` before passing on the next `command` (any connection), once. The
        commands before it on that connection are passed on first."""
        self._hook = (command.upper().encode(), hook)

    @property
    def is_hooked(self) -> bool:
        """A hook is set and its command not yet seen."""
        return self._hook is not None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self.target.hostname or "127.0.0.1", self.target.port or 6379
        upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        self._writers.update((writer, upstream_writer))
        waiting: deque[bytes] = deque()  # names of the commands sent, not yet answered
        pumps = [
            asyncio.create_task(self._commands(reader, upstream_writer, waiting)),
            asyncio.create_task(self._answers(upstream_reader, writer, waiting)),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)
            for end in (writer, upstream_writer):
                end.close()
                self._writers.discard(end)

    async def _commands(
        self, reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, waiting: deque[bytes]
    ) -> None:
        buf = b""
        while chunk := await reader.read(CHUNK):
            buf += chunk
            while (end := value_end(buf)) is not None:
                command, buf = buf[:end], buf[end:]
                name = command_name(command)
                if self._hook is not None and self._hook[0] == name:
                    hook, self._hook = self._hook[1], None
                    await upstream.drain()
                    await hook()
                waiting.append(name)  # before Redis can answer it
                upstream.write(command)
            await upstream.drain()

    async def _answers(
        self, upstream: asyncio.StreamReader, writer: asyncio.StreamWriter, waiting: deque[bytes]
    ) -> None:
        buf = b""
        while chunk := await upstream.read(CHUNK):
            buf += chunk
            while (end := value_end(buf)) is not None:
                answer, buf = buf[:end], buf[end:]
                name = waiting.popleft()
                if name == self._armed and answer[0] not in ERROR_KINDS:
                    self._armed = None
                    self.lost += 1
                    return  # the connection closes without the answer
                writer.write(answer)
            await writer.drain()


@contextlib.asynccontextmanager
async def reply_losing_proxy(target_url: str) -> AsyncIterator[ReplyLosingProxy]:
    """A started proxy in front of `target_url`, closed however the test ends."""
    proxy = ReplyLosingProxy(target_url)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
