"""The one way this server makes a Redis client (the store's and the broker's).

redis-py's asyncio pool refuses a request past its 100th connection at once ("Too many
connections", a `ConnectionError`): a burst of hellos or reconnects on one node (the fuzz
audit's 200 at once) reached it, the node took it for Redis being down (`unavailable`
answers, presence announcements missed, healthy nodes declared gone). Here requests past
`MAX_CONNECTIONS` wait for a connection instead (`BlockingConnectionPool`), up to the
client's own timeout; no request is retried by the library (each retry is the caller's
decision).
"""

from __future__ import annotations

from typing import Final

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

#: Connections one client keeps to Redis at most (a node has two clients: store, broker).
MAX_CONNECTIONS: Final = 256
#: How long a request waits for a free connection when all are busy, unless told.
POOL_WAIT_S: Final = 10.0


def redis_client(
    url: str,
    *,
    timeout_s: float | None = None,
    decode_responses: bool = False,
    max_connections: int = MAX_CONNECTIONS,
) -> aioredis.Redis:
    """A client of `url` on a bounded pool that waits when full (`ValueError` if the URL does
    not parse). `timeout_s`: for connecting, each reply, and a free connection (None: the
    socket waits as long as it takes, a free connection `POOL_WAIT_S`)."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=POOL_WAIT_S if timeout_s is None else timeout_s,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        decode_responses=decode_responses,
    )
    return aioredis.Redis.from_pool(pool)


__all__ = ["MAX_CONNECTIONS", "redis_client"]
