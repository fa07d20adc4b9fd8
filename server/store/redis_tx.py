"""What every checked write of the `redis://` store shares: an optimistic transaction.

A write that checks what is stored before it writes (a compare-and-set, a rating applied
once) WATCHes its keys, reads through the pipeline, and either gives up (unwatch, return) or
queues its writes after `MULTI` and executes them. If a watched key changed meanwhile, Redis
refuses the whole `EXEC` (`WatchError`) and the check runs again on what is there now:
here, once.

A link lost meanwhile is not such a refusal, though redis-py reports it as a `WatchError`
too (the watch dies with the connection): an `EXEC` whose reply was lost may have been
applied. `watched` raises the connection error instead, for the caller to try again knowing
it is a retry (the store's retry takes finding its own write stored for its success).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

T = TypeVar("T")


async def watched(redis: Any, keys: Sequence[str], attempt: Callable[[Any], Awaitable[T]]) -> T:
    """`attempt(pipe)` with `keys` watched, again until no key changed under it. `attempt`
    reads through `pipe`, then either calls `pipe.unwatch()` and returns, or calls
    `pipe.multi()`, queues its writes, awaits `pipe.execute()` and returns. A connection
    error or timeout on the way is raised, not checked again."""
    async with redis.pipeline(transaction=True) as pipe:
        while True:
            try:
                await pipe.watch(*keys)
                return await attempt(pipe)
            except WatchError as refused:
                # redis-py raises the WatchError of a lost link while handling the link's error.
                lost = refused.__context__
                if isinstance(lost, RedisConnectionError | RedisTimeoutError):
                    raise lost from None
                continue  # a watched key changed: check again


__all__ = ["watched"]
