"""A broker on a real Redis that refuses its commands: its user lacks the permission, so Redis
answers NOPERM, an error reply like a replica's READONLY after a failover (which a test cannot
make PUBLISH answer: replicas accept it)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import redis

from solrace.server.broker import RedisBroker

#: What the broker sends: a message, a presence announcement (a script), a withdrawal.
BROKER_COMMANDS = ("publish", "eval", "zrem")

_users = itertools.count(1)


@contextlib.asynccontextmanager
async def refusing_broker(
    url: str, denied: Sequence[str] = BROKER_COMMANDS
) -> AsyncIterator[RedisBroker]:
    """An open broker on `url` whose Redis user may not run `denied` (anything else it may);
    the user is gone again and the broker closed however the test ends."""
    user, password = f"refused-{next(_users)}", "not-allowed"
    parts = urlsplit(url)
    as_user = urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.netloc}"))
    with redis.Redis.from_url(url) as admin:
        admin.acl_setuser(
            user,
            enabled=True,
            passwords=[f"+{password}"],
            categories=["+@all"],
            commands=[f"-{command}" for command in denied],
            keys=["*"],
            channels=["*"],
        )
        try:
            broker = RedisBroker(as_user)
            await broker.open()
            try:
                yield broker
            finally:
                await broker.close()
        finally:
            admin.acl_deluser(user)
