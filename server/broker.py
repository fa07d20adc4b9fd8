"""Live events between nodes: `publish(channel, bytes)` and `subscribe(channel)`.

Backends by URL: `memory:` (one process: nodes that share the broker object) and
`redis://` (Redis pub/sub). Delivery is at most once on purpose: the durable record is the
store, and the broker only wakes nodes up. So a subscription yields `bytes`, or `None` when
messages may have been lost (its bounded queue overflowed, or the link to Redis dropped and
came back): the subscriber then reloads what it needs from the store. A slow subscriber
never slows a publisher or the other subscribers; it only gets a gap.

It also keeps which nodes are alive (`announce`, `withdraw`) and the digest of each live
node's token secret (`note_secret`, `node_secrets`): what a node starting checks its own
against (`App`), and the nodes compare at every watch (`NodePresence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from solrace.server.outage import Outage
from solrace.server.redis_client import redis_client
from solrace.server.settings import REDIS_SCHEMES, REDIS_URL_FORMS
from solrace.server.url_redaction import redact
from solrace.tasks import cancel_and_wait, raise_lost_cancellation

T = TypeVar("T")

log = logging.getLogger("solrace.server.broker")

OUTAGE_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)
MAX_QUEUED = 1024
CONFIRM_TIMEOUT_S = 5.0
#: How long one command (publish, announce, withdraw) waits for Redis's answer: the client's
#: socket has no timeout of its own, since the pub/sub link waits for messages without end.
REPLY_TIMEOUT_S = 5.0
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 2.0
#: How long the pub/sub link may be silent before Redis is asked for a pong on it (which must
#: come within `REPLY_TIMEOUT_S`): a link that died without a word (a NAT or a firewall that
#: forgot the connection, a failover) is found out and replaced, with a gap.
LINK_CHECK_S = 10.0

# KEYS: the nodes' sorted set (member: node id, score: when its presence expires, in Redis's
# own milliseconds, so the nodes' clocks need not agree). ARGV: node id, ttl in ms, and when
# its last announce said its presence expires ('' for none). Returns 1 if that presence was
# lost (not there, or an older one, before it was due to expire), else 0; when the presence
# now expires; then the nodes alive.
ANNOUNCE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lost = 0
if ARGV[3] ~= '' and now < tonumber(ARGV[3]) then
  local until_ms = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not until_ms or tonumber(until_ms) < tonumber(ARGV[3]) then
    lost = 1
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], expires, ARGV[1])
local alive = redis.call('ZRANGE', KEYS[1], 0, -1)
table.insert(alive, 1, expires)
table.insert(alive, 1, lost)
return alive
"""

#: KEYS[1]: the nodes alive (as `ANNOUNCE` keeps them), KEYS[2]: their secrets' fingerprints
#: by node. ARGV[1], ARGV[2]: a node alive and its fingerprint, to note ('' notes nothing).
#: The fingerprints of nodes no longer alive are dropped; those of the live ones returned,
#: as node, fingerprint, node, fingerprint, ...
NODE_SECRETS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
local noted = redis.call('HGETALL', KEYS[2])
local live = {}
for i = 1, #noted, 2 do
  local until_ms = redis.call('ZSCORE', KEYS[1], noted[i])
  if until_ms and tonumber(until_ms) > now then
    live[#live + 1] = noted[i]
    live[#live + 1] = noted[i + 1]
  else
    redis.call('HDEL', KEYS[2], noted[i])
  end
end
return live
"""

#: KEYS[1]: the nodes alive, KEYS[2]: their secrets' fingerprints. ARGV[1]: a node that stops
#: on purpose, taken out of both at once.
WITHDRAW = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 0
"""


class Notice(BaseModel):
    """A message nodes send each other on a channel, as JSON. Fields a newer node adds are
    ignored, so nodes of two versions understand each other during a rolling upgrade."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, data: bytes) -> Self | None:
        """The notice `data` holds; None (logged) if it does not read: for the reader, a
        gap (what it says may be lost)."""
        try:
            return cls.model_validate_json(data)
        except ValidationError:
            log.warning("a %s that does not read: %r", cls.__name__, data[:200])
            return None


class Announced(NamedTuple):
    """What an announce found (`Broker.announce`)."""

    #: The nodes alive now, the one announcing included.
    alive: set[str]
    #: The announcing node's presence was gone before its time was up (by the broker's own
    #: clock): the broker lost the presences (a Redis restarted without its data, or from an
    #: older snapshot), so the nodes missing from `alive` may just not have announced again
    #: yet. Not said of a presence that ran out (a node silent its whole ttl).
    lost: bool


class BrokerError(Exception):
    """Base of the broker's errors; itself, Redis refused: a URL (`open`: e.g. a database it
    lacks) or a command (a replica's READONLY after a failover, a user's NOPERM)."""


class BrokerUnavailableError(BrokerError):
    """Redis cannot be reached: the message was not published (the store still has the
    truth), or the broker did not open."""


class Subscription:
    """One subscriber's bounded queue: iterate for `bytes`, or `None` meaning "resync"."""

    def __init__(self, fanout: LocalFanout, channel: str, max_queued: int) -> None:
        self.channel = channel
        self._fanout = fanout
        self._max_queued = max_queued
        self._items: deque[bytes | None] = deque()
        self._ready = asyncio.Event()
        self.closed = False
        self.gaps = 0

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> bytes | None:
        while not self._items:
            if self.closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    async def get(self, timeout_s: float | None = None) -> bytes | None:
        """The next item (waiting at most `timeout_s`; TimeoutError after that)."""
        async with asyncio.timeout(timeout_s):
            return await self.__anext__()

    def deliver(self, data: bytes) -> None:
        if self.closed:
            return
        if len(self._items) >= self._max_queued:
            # Too slow to keep up: drop what is queued, keep one gap (it resyncs instead).
            self._items.clear()
            self.mark_gap()
            return
        self._items.append(data)
        self._ready.set()

    def mark_gap(self) -> None:
        if self.closed:
            return
        if not self._items or self._items[-1] is not None:
            self._items.append(None)
            self.gaps += 1
        self._ready.set()

    def end(self) -> None:
        """No more items: what is queued is still read, then the iteration stops (a reader
        waiting for more stops at once); later deliveries are dropped. It stays subscribed
        (`close` also unsubscribes): the fanout ends each subscription this way when the
        broker closes, and drops them all itself."""
        self.closed = True
        self._ready.set()

    async def close(self) -> None:
        """End this subscription and unsubscribe it."""
        if self.closed:
            return
        self.end()
        await self._fanout.unsubscribe(self)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ChannelListener:
    """A task that reads one channel of `broker` and hands each message (None: a gap, some
    may be lost) to `receive`, in order; a message `receive` fails on is logged to `errors`,
    and the reading goes on. `stop` ends the reading even if `receive` swallowed the
    cancellation (a Redis client may: `periodic.run_every`): the task still says it is
    being cancelled, and the reader looks after each message."""

    def __init__(
        self,
        broker: Broker,
        channel: str,
        receive: Callable[[bytes | None], Awaitable[None]],
        errors: logging.Logger,
    ) -> None:
        self.broker = broker
        self.channel = channel
        self.receive = receive
        self.errors = errors
        self._subscription: Subscription | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Subscribed once this returns: what is published from now on is read."""
        self._subscription = await self.broker.subscribe(self.channel)
        self._reader = asyncio.create_task(
            self._read(self._subscription), name=f"solrace-{self.channel}"
        )

    async def stop(self) -> None:
        if self._reader is not None:
            await cancel_and_wait([self._reader])
            self._reader = None
        if self._subscription is not None:
            await self._subscription.close()
            self._subscription = None

    async def _read(self, subscription: Subscription) -> None:
        async for data in subscription:
            try:
                await self.receive(data)
            except Exception:
                self.errors.exception("a message of channel %s not handled", self.channel)
            raise_lost_cancellation()  # asked to stop during the message, which lost it


class Broker(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def publish(self, channel: str, data: bytes) -> None:
        """Hand `data` to every current subscriber of `channel` on every node (at most once);
        `BrokerError` if it was not sent (`BrokerUnavailableError` when Redis cannot be
        reached, a plain `BrokerError` when it refuses, e.g. a replica after a failover)."""
        ...

    async def subscribe(self, channel: str) -> Subscription:
        """A subscription that receives what is published from now on (once this returns,
        unless the broker is down: then its first item is a gap, when the link is back)."""
        ...

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        """Say `node_id` is alive for `ttl_ms` more; the nodes alive now (itself included): a
        node that stops announcing (killed, cut off) drops out once its time is up; and
        whether its own presence, announced last through this broker, was lost before its
        time was up (`Announced.lost`). `BrokerError` if it could not be said
        (`BrokerUnavailableError`: Redis unreachable)."""
        ...

    async def withdraw(self, node_id: str) -> None:
        """`node_id` stops on purpose: it is not alive from now on (the others need not wait
        for its time to run out), and its secret's fingerprint is forgotten with it.
        `BrokerError` if that could not be said."""
        ...

    async def note_secret(self, node_id: str, fingerprint: str) -> dict[str, str]:
        """Note the fingerprint of the token secret of `node_id`, alive (announced), with its
        presence; the fingerprint each node alive noted, by node (`node_secrets`)."""
        ...

    async def node_secrets(self) -> dict[str, str]:
        """The fingerprint of the token secret each node alive noted with its presence, by
        node: nodes that must sign with one secret can tell which of them do not. A node's
        is forgotten once it is no longer alive. `BrokerError` if they could not be read."""
        ...


class LocalFanout:
    """This node's subscriptions by channel; backends feed it."""

    def __init__(self, max_queued: int = MAX_QUEUED) -> None:
        self.max_queued = max_queued
        self.subscriptions: dict[str, set[Subscription]] = {}

    def _add(self, channel: str) -> tuple[Subscription, bool]:
        subscription = Subscription(self, channel, self.max_queued)
        subscribers = self.subscriptions.setdefault(channel, set())
        subscribers.add(subscription)
        return subscription, len(subscribers) == 1

    def fan_out(self, channel: str, data: bytes) -> None:
        for subscription in self.subscriptions.get(channel, ()):
            subscription.deliver(data)

    def mark_gap(self, channel: str) -> None:
        for subscription in self.subscriptions.get(channel, ()):
            subscription.mark_gap()

    async def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self.subscriptions.get(subscription.channel)
        if subscribers is None:
            return
        subscribers.discard(subscription)
        if not subscribers:
            del self.subscriptions[subscription.channel]
            await self._last_one_left(subscription.channel)

    async def _last_one_left(self, channel: str) -> None:
        return None

    async def _close_subscriptions(self) -> None:
        self._end_subscriptions()

    def _end_subscriptions(self) -> None:
        for subscribers in list(self.subscriptions.values()):
            for subscription in subscribers:
                subscription.end()
        self.subscriptions.clear()


class MemoryBroker(LocalFanout):
    """`memory:`: in-process fan-out; several hubs in one process share one instance."""

    def __init__(self, max_queued: int = MAX_QUEUED) -> None:
        super().__init__(max_queued)
        #: Seconds, for node presence (tests move it on instead of waiting).
        self.clock: Callable[[], float] = time.monotonic
        self._nodes: dict[str, float] = {}  # node id -> when its presence expires
        self._told: dict[str, float] = {}  # node id -> when its last announce said it expires
        self._secrets: dict[str, str] = {}  # node id -> its secret's fingerprint

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        now = self.clock()
        due = self._told.get(node_id)
        lost = due is not None and now < due and self._nodes.get(node_id, now) < due
        self._nodes = {n: until for n, until in self._nodes.items() if until > now}
        self._nodes[node_id] = self._told[node_id] = now + ttl_ms / 1000
        return Announced(set(self._nodes), lost)

    async def withdraw(self, node_id: str) -> None:
        self._nodes.pop(node_id, None)
        self._told.pop(node_id, None)
        self._secrets.pop(node_id, None)

    async def note_secret(self, node_id: str, fingerprint: str) -> dict[str, str]:
        self._secrets[node_id] = fingerprint
        return await self.node_secrets()

    async def node_secrets(self) -> dict[str, str]:
        now = self.clock()
        alive = {n for n, until in self._nodes.items() if until > now}
        self._secrets = {n: f for n, f in self._secrets.items() if n in alive}
        return dict(self._secrets)

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        await self._close_subscriptions()

    async def publish(self, channel: str, data: bytes) -> None:
        self.fan_out(channel, data)

    async def subscribe(self, channel: str) -> Subscription:
        subscription, _ = self._add(channel)
        return subscription


async def _ask_redis(
    refused: str, command: Callable[[], Awaitable[T]], *, pooled: bool = True
) -> T:
    """What `command()` (one Redis command) returns, its failures in the broker's own errors:
    `BrokerUnavailableError` if Redis cannot be reached (after a second try if the connection
    is `pooled`: it may be stale after a Redis restart) or does not answer within
    `REPLY_TIMEOUT_S` (not tried again: a frozen Redis would be waited for twice),
    `BrokerError` ("`refused`: why") if Redis answers with an error, such as a replica's
    READONLY after a failover or a user's NOPERM. Callers catch `BrokerError`: never
    redis-py's errors."""

    async def ask() -> T:
        async with asyncio.timeout(REPLY_TIMEOUT_S):
            return await command()

    try:
        try:
            return await ask()
        except OUTAGE_ERRORS as exc:
            if not pooled or isinstance(exc, TimeoutError):
                raise
            return await ask()
    except TimeoutError as exc:  # before OUTAGE_ERRORS: asyncio's timeout is an OSError
        raise BrokerUnavailableError(
            f"redis unreachable: no answer in {REPLY_TIMEOUT_S:g} s"
        ) from exc
    except OUTAGE_ERRORS as exc:
        raise BrokerUnavailableError(f"redis unreachable: {exc}") from exc
    except RedisError as exc:
        raise BrokerError(f"{refused}: {exc}") from exc


class RedisBroker(LocalFanout):
    """`redis://`: one pub/sub connection per node, read by one task that fans messages out
    to local subscriptions; after a dropped link it subscribes again and sends every local
    subscription a gap once the subscription is live again."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "solrace:live:",
        max_queued: int = MAX_QUEUED,
        link_check_s: float = LINK_CHECK_S,
    ) -> None:
        super().__init__(max_queued)
        self.url = url
        self.prefix = prefix
        self.link_check_s = link_check_s
        self._client: Any = None  # redis-py's annotations and the stubs disagree; see store
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._wanted = asyncio.Event()
        # Per channel: SUBSCRIBE commands sent and not yet confirmed, and who waits for it.
        self._unconfirmed: dict[str, int] = {}
        self._confirmed: dict[str, asyncio.Event] = {}
        self._gap_pending: set[str] = set()
        self.is_connected = False
        self.is_down = False  # the link was lost and is not back yet
        self.link_outage = Outage(log, "the redis pub/sub link")
        self.reconnects = 0
        #: Node id -> when Redis said its presence expires, at its last announce through
        #: this broker (Redis's milliseconds): what tells a presence lost from one run out.
        self._told: dict[str, int] = {}

    def _wire(self, channel: str) -> str:
        return self.prefix + channel

    async def open(self) -> None:
        """Connect, failing fast on a wrong URL: `BrokerUnavailableError` if Redis cannot be
        reached, `BrokerError` if the URL is malformed or Redis refuses it. A broker that
        failed to open holds no connection and may be opened again."""
        try:
            client: Any = redis_client(self.url)
        except ValueError as exc:  # the URL does not parse (e.g. a port that is no number)
            raise BrokerError(f"invalid Redis URL: {exc}") from exc
        try:
            await _ask_redis("Redis refused the broker", client.ping, pooled=False)
        except BaseException:
            try:
                await client.aclose()
            finally:
                client.connection_pool.abort()
            raise
        self._client = client
        self._reader = asyncio.create_task(self._read_forever(), name="solrace-broker-reader")

    async def close(self) -> None:
        """Stop reading, end the subscriptions and close the connections. Cancelled (a stop's
        deadline while Redis answers nothing), it still ends every subscription (their readers
        stop) and closes the connections, saying nothing more to Redis."""
        try:
            if self._reader is not None:
                await cancel_and_wait([self._reader])
                self._reader = None
            await self._drop_pubsub()
            await self._close_subscriptions()
            if self._client is not None:
                await self._client.aclose()
        finally:
            self._pubsub, self.is_connected = None, False
            self._end_subscriptions()
            if self._client is not None:
                self._client.connection_pool.abort()
                self._client = None

    async def publish(self, channel: str, data: bytes) -> None:
        wire = self._wire(channel)
        refused = f"message on {channel} not published"
        await _ask_redis(refused, lambda: self._client.publish(wire, data))

    async def announce(self, node_id: str, ttl_ms: int) -> Announced:
        key, due = self.prefix + "nodes", self._told.get(node_id, "")
        lost, expires, *nodes = await _ask_redis(
            "node presence not announced",
            lambda: self._client.eval(ANNOUNCE, 1, key, node_id, ttl_ms, due),
        )
        self._told[node_id] = int(expires)
        alive = {n.decode() if isinstance(n, bytes) else str(n) for n in nodes}
        return Announced(alive, lost == 1)

    async def withdraw(self, node_id: str) -> None:
        keys = (self.prefix + "nodes", self.prefix + "node-secrets")
        self._told.pop(node_id, None)
        await _ask_redis(
            "node presence not withdrawn",
            lambda: self._client.eval(WITHDRAW, 2, *keys, node_id),
        )

    async def note_secret(self, node_id: str, fingerprint: str) -> dict[str, str]:
        return await self._node_secrets(node_id, fingerprint)

    async def node_secrets(self) -> dict[str, str]:
        return await self._node_secrets("", "")

    async def _node_secrets(self, node_id: str, fingerprint: str) -> dict[str, str]:
        keys = (self.prefix + "nodes", self.prefix + "node-secrets")
        pairs = await _ask_redis(
            "the nodes' secret fingerprints not read",
            lambda: self._client.eval(NODE_SECRETS, 2, *keys, node_id, fingerprint),
        )
        text = [p.decode() if isinstance(p, bytes) else str(p) for p in pairs]
        return dict(zip(text[::2], text[1::2], strict=True))

    async def subscribe(self, channel: str) -> Subscription:
        subscription, first = self._add(channel)
        if first:
            self._confirmed[channel] = asyncio.Event()
            self._unconfirmed[channel] = 0
            if self.is_down:
                self._gap_pending.add(channel)  # it may miss what comes before the link
            self._wanted.set()
            await self._send_subscribe(channel)
        confirmed = self._confirmed.get(channel)
        if confirmed is not None and not self.is_down:
            # Released by the confirmation, or by an outage (the gap then follows).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CONFIRM_TIMEOUT_S):
                    await confirmed.wait()
        return subscription

    async def _send_subscribe(self, channel: str) -> None:
        pubsub = self._pubsub
        if pubsub is None:
            return  # the reader subscribes to every wanted channel when it connects
        self._unconfirmed[channel] = self._unconfirmed.get(channel, 0) + 1
        # On an outage the reader sees the same error, reconnects and subscribes again.
        with contextlib.suppress(*OUTAGE_ERRORS):
            await pubsub.subscribe(self._wire(channel))

    async def _last_one_left(self, channel: str) -> None:
        self._confirmed.pop(channel, None)
        self._unconfirmed.pop(channel, None)
        self._gap_pending.discard(channel)
        pubsub = self._pubsub
        if pubsub is not None:
            with contextlib.suppress(*OUTAGE_ERRORS):
                await pubsub.unsubscribe(self._wire(channel))

    async def _drop_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        self.is_connected = False
        if pubsub is not None:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def _connect(self) -> Any:
        pubsub = self._client.pubsub()
        channels = list(self.subscriptions)
        if not channels:
            return pubsub
        for channel in channels:
            self._confirmed.setdefault(channel, asyncio.Event())
            self._unconfirmed[channel] = 1
        # Set before the first await: a channel added from now on is subscribed by its caller.
        self._pubsub = pubsub
        await pubsub.subscribe(*(self._wire(channel) for channel in channels))
        self.is_connected = True
        self.is_down = False
        self.link_outage.worked()
        return pubsub

    async def _read_forever(self) -> None:
        backoff = BACKOFF_FIRST_S
        while True:
            if not self.subscriptions:
                self._wanted.clear()
                await self._wanted.wait()
                continue
            try:
                pubsub = await self._connect()
                while self._pubsub is pubsub:
                    message = await self._next_message(pubsub)
                    if message is not None:
                        self._handle(message)
                        backoff = BACKOFF_FIRST_S
            except OUTAGE_ERRORS as exc:
                self.link_outage.failed(f"{exc}; reconnecting")
            except Exception:
                log.exception("redis pub/sub reader failed; reconnecting")
            self._lose_link()
            await self._drop_pubsub()
            await asyncio.sleep(backoff)  # back off before reconnecting, not a wait for a test
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def _next_message(self, pubsub: Any) -> dict[str, Any] | None:
        """The link's next message (None: none came, the link is fine). After `link_check_s`
        of silence Redis is asked for a pong (PING on the link): no word at all within
        `REPLY_TIMEOUT_S` more is a lost link (`RedisTimeoutError`), for a socket that died
        silently raises nothing itself."""
        message: dict[str, Any] | None = await pubsub.get_message(timeout=self.link_check_s)
        if message is not None:
            return message
        await pubsub.ping()
        message = await pubsub.get_message(timeout=REPLY_TIMEOUT_S)
        if message is None:
            raise RedisTimeoutError(
                f"no answer on the pub/sub link in {REPLY_TIMEOUT_S:g} s (a PING after "
                f"{self.link_check_s:g} s of silence)"
            )
        return message  # the pong (ignored), or a message that came first

    def _lose_link(self) -> None:
        """Every channel gets a gap once subscribed again; waiting subscribers are released."""
        self.is_down = True
        self.reconnects += 1
        for channel in self.subscriptions:
            self._gap_pending.add(channel)
            self._unconfirmed[channel] = 0
            released = self._confirmed.get(channel)
            self._confirmed[channel] = asyncio.Event()
            if released is not None:
                released.set()

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        wire = message.get("channel")
        name = wire.decode() if isinstance(wire, bytes) else str(wire)
        channel = name.removeprefix(self.prefix)
        if kind == "message":
            data = message.get("data")
            if isinstance(data, bytes):
                self.fan_out(channel, data)
        elif kind == "subscribe" and channel in self.subscriptions:
            left = max(0, self._unconfirmed.get(channel, 1) - 1)
            self._unconfirmed[channel] = left
            if left == 0:
                self._confirmed.setdefault(channel, asyncio.Event()).set()
                if channel in self._gap_pending:
                    self._gap_pending.discard(channel)
                    self.mark_gap(channel)


def open_broker(url: str) -> Broker:
    """The (unopened) broker a URL names: `memory:` or a Redis URL (`redis://HOST:PORT/DB`,
    `rediss://` for TLS, `unix://` for a socket)."""
    if url == "memory:":
        return MemoryBroker()
    if url.startswith(REDIS_SCHEMES):
        return RedisBroker(url)
    shown = redact(url)
    raise ValueError(f"unsupported broker URL {shown!r}; accepted: memory:, {REDIS_URL_FORMS}")
