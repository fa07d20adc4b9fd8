"""Who may open a connection: a cap on the node's connections, a cap per client address and a
pace of handshakes per address.

Every connection counts from the moment the socket is accepted until it closes, upgraded or
not, so that a client cannot hold sockets open by never finishing its handshake. A connection
past a limit is still answered, once its request has been read: `429 Too Many Requests` (this
address) or `503 Service Unavailable` (the node), with `Retry-After`; the terminal client
retries those with its backoff. One far past a limit (twice the per-address cap, or a tenth
past the node's) is dropped unanswered: answering every one of a flood is work the flood
chose.

An IPv6 client is counted by its /64 network, since one host usually has the whole of it.
Behind a proxy every client has the proxy's address: per-address limits go in the proxy
(`deploy/haproxy.cfg`) and the nodes run with `max_connections_per_address = 0`.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import resource
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus

from solrace.server.log_throttle import LogThrottle
from solrace.server.protocol.ratelimit import CreditBucket
from solrace.server.settings import Settings

log = logging.getLogger("solrace.server.admission")

#: Descriptors kept for what is not a client socket: the store, Redis, logs, the listener.
DESCRIPTOR_RESERVE = 64

#: Seconds between two log lines about one address's refused names (`Admission.is_news`).
REFUSALS_SAID_EVERY_S = 60.0


class RefusalKind(StrEnum):
    """The limit a refused handshake met (the `reason` label of the refusals metric)."""

    NODE_FULL = "node_full"
    ADDRESS_FULL = "address_full"
    TOO_OFTEN = "too_often"


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: RefusalKind
    status: HTTPStatus
    text: str
    retry_after_s: int


def client_key(host: str) -> str:
    """The address limits count by: the host's IP, or its /64 network for IPv6 (an IPv4
    address mapped into IPv6 counts as the IPv4 one)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _default(setting: str) -> float:
    """The setting's default value, so that `Admission`'s defaults are the node's own."""
    value = Settings.model_fields[setting].default
    assert isinstance(value, (int, float))
    return float(value)


class Admission:
    """Counts open connections (in all and per address) and paces each address's handshakes.

    The limits are keyword arguments only, so that no two can be swapped by position;
    `from_settings` passes each setting to its own."""

    def __init__(
        self,
        *,
        max_connections: int,
        per_address: int,
        burst: float,
        per_s: float,
        register_burst: float = _default("register_burst"),
        register_per_s: float = _default("register_per_s"),
        register_node_burst: float = _default("register_node_burst"),
        register_node_per_s: float = _default("register_node_per_s"),
    ) -> None:
        self.max_connections = max_connections
        #: 0: no per-address limits (neither the cap nor the paces).
        self.per_address = per_address
        self.burst = burst
        self.per_s = per_s
        self.register_burst = register_burst
        self.register_per_s = register_per_s
        self.total = 0
        self.open: dict[str, int] = {}
        #: Each address's handshake budget, dropped once refilled (`forget_refilled`).
        self.openings: dict[str, CreditBucket] = {}
        #: Each address's budget of new names (hellos that register one), likewise.
        self.registrations: dict[str, CreditBucket] = {}
        #: The node's budget of new names, whatever their address (made on first use).
        self.register_node_burst = register_node_burst
        self.register_node_per_s = register_node_per_s
        self.node_registrations: CreditBucket | None = None
        #: When each address's refused names are next said in the log (`is_news`).
        self.refusals_said = LogThrottle(REFUSALS_SAID_EVERY_S)

    @classmethod
    def from_settings(cls, settings: Settings) -> Admission:
        return cls(
            max_connections=settings.max_connections,
            per_address=settings.max_connections_per_address,
            burst=settings.connect_burst,
            per_s=settings.connect_per_s,
            register_burst=settings.register_burst,
            register_per_s=settings.register_per_s,
            register_node_burst=settings.register_node_burst,
            register_node_per_s=settings.register_node_per_s,
        )

    def arrive(self, key: str, now: float) -> Refusal | None:
        """A connection from `key` (`client_key`) was accepted at `now`: it counts until
        `leave`. Returns why it must be refused, if it must."""
        self.total += 1
        count = self.open[key] = self.open.get(key, 0) + 1
        if self.total > self.max_connections:
            return Refusal(
                RefusalKind.NODE_FULL,
                HTTPStatus.SERVICE_UNAVAILABLE,
                "the server is full: try again later",
                5,
            )
        cap = self.per_address
        if not cap:
            return None
        if count > cap:
            return Refusal(
                RefusalKind.ADDRESS_FULL,
                HTTPStatus.TOO_MANY_REQUESTS,
                f"too many connections from your address (at most {cap} open)",
                5,
            )
        bucket = self.openings.get(key)
        if bucket is None:
            bucket = self.openings[key] = CreditBucket(self.burst, self.per_s, now)
        if not bucket.spend(now):
            return Refusal(
                RefusalKind.TOO_OFTEN,
                HTTPStatus.TOO_MANY_REQUESTS,
                "connecting too often from your address: wait a moment",
                max(1, math.ceil(1 / self.per_s)),
            )
        return None

    def register(self, key: str, now: float) -> str | None:
        """May address `key` register one more name at `now`? Spends a credit of its budget
        and of the node's if so; otherwise says why not. A name costs the node for good (it is
        never forgotten), so each address gets a budget of them (none behind a proxy:
        `per_address` 0, every client has the proxy's address) and the node one in all, which
        bounds what many addresses together can make."""
        bucket: CreditBucket | None = None
        if self.per_address:
            bucket = self.registrations.get(key)
            if bucket is None:
                bucket = self.registrations[key] = CreditBucket(
                    self.register_burst, self.register_per_s, now
                )
            if not bucket.can_spend(now):
                return "too many new names from your address"
        node = self.node_registrations
        if node is None:
            node = self.node_registrations = CreditBucket(
                self.register_node_burst, self.register_node_per_s, now
            )
        if not node.spend(now):
            return "too many new names on this server"
        if bucket is not None:
            bucket.spend(now)
        return None

    def is_news(self, key: str, now: float) -> bool:
        """Should a refused name from address `key` be logged at `now`? Once a minute per
        address (`REFUSALS_SAID_EVERY_S`): a flood of hellos is not a flood of lines."""
        return self.refusals_said.due(key, now) is not None

    def unregister(self, key: str) -> None:
        """The name `register` allowed for address `key` was not made (someone else's): its
        credits go back, so refused hellos do not use up the budgets of names made."""
        if self.node_registrations is not None:
            self.node_registrations.give_back()
        bucket = self.registrations.get(key) if self.per_address else None
        if bucket is not None:
            bucket.give_back()

    def hopeless(self, key: str) -> bool:
        """Far past a cap: not worth reading the request to answer it."""
        if self.total > hard_cap(self.max_connections):
            return True
        return bool(self.per_address) and self.open.get(key, 0) > 2 * self.per_address

    def leave(self, key: str) -> None:
        """A connection `arrive` counted has closed."""
        self.total -= 1
        count = self.open[key] - 1
        if count:
            self.open[key] = count
        else:
            del self.open[key]

    def forget_refilled(self, now: float) -> None:
        """Drop the handshake budgets that have refilled (as good as new ones), and the
        refusals said over a minute ago."""
        for buckets in (self.openings, self.registrations):
            full = [key for key, bucket in buckets.items() if bucket.is_full(now)]
            for key in full:
                del buckets[key]
        self.refusals_said.forget(now)


def hard_cap(max_connections: int) -> int:
    """Open connections past which a new one is dropped unanswered (`Admission.hopeless`)."""
    return max_connections + max(16, max_connections // 10)


def fit_to_descriptors(settings: Settings) -> Settings:
    """The settings with `max_connections` the process's open-files limit can hold: each
    connection is a descriptor, and up to `hard_cap` of them may be open for an instant
    (those past the cap are answered 503, those past the hard cap dropped). The soft limit
    is raised toward the hard one first; past what the system allows, the cap is lowered
    (said in the log), so that a flood is refused by the node instead of failing `accept()`
    in a loop."""
    needed = hard_cap(settings.max_connections) + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError) as exc:
            log.debug("open-files limit not raised: %s", exc)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return settings
    fitted = settings.max_connections
    while fitted > 1 and hard_cap(fitted) + DESCRIPTOR_RESERVE > soft:
        fitted = min(fitted - 1, (soft - DESCRIPTOR_RESERVE) * 10 // 11)
    log.warning(
        "max_connections lowered from %d to %d: the open-files limit is %d (ulimit -n)",
        settings.max_connections,
        fitted,
        soft,
    )
    return settings.model_copy(update={"max_connections": fitted})
