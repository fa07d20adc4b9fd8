"""The one way this server makes a Redis client (the store's and the broker's).

redis-py's asyncio pool refuses a request past its 100th connection at once ("Too many
connections", a `ConnectionError`): a burst of hellos or reconnects on one node (the fuzz
audit's 200 at once) reached it, the node took it for Redis being down (`unavailable`
answers, presence announcements missed, healthy nodes declared gone). Here requests past
`MAX_CONNECTIONS` wait for a connection instead, up to the client's own timeout; no request
is retried by the library (each retry is the caller's decision).

The wait is a semaphore in front of redis-py's plain pool (`WaitingPool`), not the library's
`BlockingConnectionPool`: that one takes a condition's lock, a timeout scope and its
observability hooks on every request, whether or not anything waits. The semaphore costs one
counter while connections are free: below the pool's size a request costs what it costs on
the plain pool (`bench/redis_pool.py`; `bench/README.md`, "Several nodes on Redis").
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from solrace.server.redis_url import check_redis_url

#: Connections one client keeps to Redis at most (a node has two clients: store, broker).
MAX_CONNECTIONS: Final = 256
#: How long a request waits for a free connection when all are busy, unless told.
POOL_WAIT_S: Final = 10.0


class WaitingPool(aioredis.ConnectionPool):
    """redis-py's plain pool, but a request finding all `max_connections` in use waits up
    to `wait_s` for one to come back (then `ConnectionError`, as when Redis cannot be
    reached) instead of being refused at once.

    Every connection handed out holds one unit of `_room` (`_holding` says which) until
    `release` gives both back, each once: a connection released twice, or a release that
    fails, gives back no second unit (one more than `max_connections` would let the plain
    pool refuse a request again). Taking a connection from the pool is synchronous, so no
    other task sees the pool half changed (the library's own pools rely on the same).

    Once disconnected in full (the client's `aclose`), the pool is closed: a request is
    refused (`ConnectionError`) instead of opening a new connection that nothing would close,
    and a connection given back after that (one that was connecting, or in use, while the
    pool closed) is disconnected. `abort` closes the pool and its connections without a wait."""

    def __init__(self, *, wait_s: float = POOL_WAIT_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wait_s = wait_s
        self._room = asyncio.Semaphore(self.max_connections)
        self._holding: set[AbstractConnection] = set()
        self.closed = False

    @property
    def full(self) -> bool:
        """Whether every connection is in use (the next request waits)."""
        return self._room.locked()

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> Any:
        self._refuse_if_closed()
        await self._wait_for_room()
        self._refuse_if_closed()  # closed while this request waited
        try:
            connection = self.get_available_connection()  # type: ignore[no-untyped-call]
        except BaseException:
            self._room.release()
            raise
        self._holding.add(connection)
        try:
            await self.ensure_connection(connection)
        except BaseException:
            await self.release(connection)
            raise
        return connection

    def _refuse_if_closed(self) -> None:
        if self.closed:
            raise RedisConnectionError("the Redis client is closed")

    async def disconnect(self, inuse_connections: bool = True) -> None:
        if inuse_connections:
            self.closed = True
        await super().disconnect(inuse_connections)

    def abort(self) -> None:
        """Close every connection at once, waiting for nothing, and close the pool: what a
        `disconnect` cut short left open (a stop's deadline reached while Redis answered
        nothing cancels it before it closes a socket). Each socket is dropped with unsent
        data, if any: nothing more will be read from it."""
        self.closed = True
        for connection in (*self._available_connections, *self._in_use_connections):
            # redis-py's own synchronous close (`_close`) waits to flush what is unsent,
            # which a frozen Redis never takes: the transport is aborted instead.
            writer = connection._writer
            if writer is not None:
                writer.transport.abort()
            connection._reader = None
            connection._writer = None

    async def _wait_for_room(self) -> None:
        if not self._room.locked():
            await self._room.acquire()  # returns at once: no scope, no wait
            return
        try:
            async with asyncio.timeout(self.wait_s):
                await self._room.acquire()
        except TimeoutError:
            raise RedisConnectionError(
                f"no Redis connection came free in {self.wait_s:g} s "
                f"({self.max_connections} in use)"
            ) from None

    async def release(self, connection: AbstractConnection) -> None:
        held = connection in self._holding
        self._holding.discard(connection)  # before any await: a second release finds none
        # Shielded: a release cancelled while it waits for the pool's lock would leave the
        # connection in use for good, its unit given back.
        await asyncio.shield(self._give_back(connection, held=held))

    async def _give_back(self, connection: AbstractConnection, *, held: bool) -> None:
        try:
            await super().release(connection)
            if self.closed:
                await connection.disconnect()
        finally:
            if held:  # once the pool has it again, so the next one finds it free
                self._room.release()


def redis_client(
    url: str,
    *,
    timeout_s: float | None = None,
    decode_responses: bool = False,
    max_connections: int = MAX_CONNECTIONS,
) -> aioredis.Redis:
    """A client of `url` on a bounded pool that waits when full (`ValueError` if the URL does
    not parse, or has a query option this server does not take: `check_redis_url`).
    `timeout_s`: for connecting, each reply, and a free connection (None: the socket waits as
    long as it takes, a free connection `POOL_WAIT_S`)."""
    check_redis_url(url)
    pool = WaitingPool.from_url(
        url,
        max_connections=max_connections,
        wait_s=POOL_WAIT_S if timeout_s is None else timeout_s,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        decode_responses=decode_responses,
    )
    return aioredis.Redis.from_pool(pool)


__all__ = ["MAX_CONNECTIONS", "WaitingPool", "redis_client"]
