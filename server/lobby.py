"""The lobby feed: the list of live races, pushed to the sessions that follow it.

A session follows the lobby with `list_races` and `follow: true` (and stops with `follow:
false`, or by leaving). After a change of a race's lobby, status or timing on this node the
list goes out again, at most every `interval_s` (a burst of joins is one push). On several
nodes a race may change on another node, unseen here: while anyone follows, the list is also
read again every `poll_s` and pushed when it differs from the last one sent.

The list is built once and kept, encoded, until a change here (several nodes: also until it
is `interval_s` old): at 1,000 live races it costs ~8 ms to build, and every `list_races`
asks for it. It is built again at most every `REBUILD_EVERY_S`: a request that finds it
stale sooner waits for the next build, shared by every request waiting (a client that makes
a change and lists, again and again from many connections, kept the node rebuilding).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from solrace.server.protocol.codec import encode
from solrace.server.protocol.messages import RaceInfo, RaceList
from solrace.server.protocol.records import RaceStatus
from solrace.server.session import Session
from solrace.server.store import StoreError
from solrace.server.timers import run_every
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.lobby")

#: The most races one `race_list` holds (~270 bytes each with a few racers): a lobby of
#: thousands of running races stays a frame every client reads.
RACE_LIST_LIMIT = 200
#: Seconds between two builds of the list at least (a change shows in the next one).
REBUILD_EVERY_S = 0.05


def race_list(infos: list[RaceInfo], limit: int = RACE_LIST_LIMIT) -> RaceList:
    """The lobby's list of `infos` (in their order), the open races kept first when there are
    more than `limit`; `more` counts those left out."""
    if len(infos) <= limit:
        return RaceList(races=infos)
    open_ = [i for i in infos if i.status == RaceStatus.OPEN.value]
    others = [i for i in infos if i.status != RaceStatus.OPEN.value]
    kept = {id(i) for i in (open_ + others)[:limit]}
    return RaceList(races=[i for i in infos if id(i) in kept], more=len(infos) - limit)


@dataclass(frozen=True, slots=True)
class _Built:
    """The list as built once, kept until a change makes it stale."""

    races: RaceList
    frame: bytes
    #: When its reading began (loop time), and the changes counted then: a change since
    #: (during the reading too) makes it stale.
    at: float
    changes: int


class LobbyFeed:
    def __init__(
        self,
        list_races: Callable[[], Awaitable[RaceList]],
        interval_s: float,
        poll_s: float | None,
    ) -> None:
        self.list_races = list_races
        self.interval_s = interval_s
        self.poll_s = poll_s
        #: Each follower and the list it was last sent.
        self.followers: dict[Session, RaceList] = {}
        #: The list as last built.
        self._current: _Built | None = None
        #: One more at each change (`changed`).
        self._changes = 0
        self._due: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._poller: asyncio.Task[None] | None = None

    def follow(self, session: Session, sent: RaceList) -> None:
        """`session` was just sent `sent`; it follows the lobby from now on."""
        self.followers[session] = sent

    def unfollow(self, session: Session) -> None:
        self.followers.pop(session, None)

    async def current(self) -> tuple[RaceList, bytes]:
        """The list and its frame: the kept one, unless a change came since (several nodes:
        or it is `interval_s` old). `StoreError` if it must be read and cannot be."""
        loop = asyncio.get_running_loop()
        now, changes = loop.time(), self._changes
        kept = self._current
        if (
            kept is not None
            and kept.changes == changes
            and (self.poll_s is None or now - kept.at < self.interval_s)
        ):
            return kept.races, kept.frame
        if kept is not None and now - kept.at < REBUILD_EVERY_S:
            await asyncio.sleep(kept.at + REBUILD_EVERY_S - now)
            fresh = self._current
            if fresh is not None and fresh is not kept and fresh.changes >= changes:
                return fresh.races, fresh.frame  # built meanwhile, with every change before this
            now, changes = loop.time(), self._changes
        races = await self.list_races()
        frame = encode(races)
        self._current = _Built(races, frame, now, changes)
        return races, frame

    def changed(self) -> None:
        """A race's lobby, status or timing changed here (or a change was undone): push
        within `interval_s`."""
        self._changes += 1
        self._push_within_interval()

    def drained(self, session: Session) -> None:
        """`session` reads again after its writes backed up: a follower may have been passed
        over meanwhile (`push`), so it gets the newest list within `interval_s`."""
        if session in self.followers:
            self._push_within_interval()

    def _push_within_interval(self) -> None:
        if self.followers and self._due is None:
            self._due = asyncio.get_running_loop().call_later(self.interval_s, self._push_soon)

    def _push_soon(self) -> None:
        self._due = None
        task = asyncio.create_task(self.push(), name="solrace-lobby-push")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def push(self) -> None:
        """Send each follower the list if it differs from the last one it was sent."""
        if not self.followers:
            return
        try:
            races, frame = await self.current()
        except StoreError as exc:
            log.warning("lobby not refreshed: %s", exc)
            return
        for session, sent in list(self.followers.items()):
            if session.closed:
                del self.followers[session]
            elif sent != races:
                if session.backed_up:
                    continue  # not reading: the newest list once it does (`drained`)
                session.send_frame(frame)
                self.followers[session] = races

    def start(self) -> None:
        if self.poll_s is not None:
            self._poller = asyncio.create_task(self._poll(self.poll_s), name="solrace-lobby")

    async def _poll(self, every_s: float) -> None:
        await run_every(every_s, self.push, log, "the lobby poll")

    async def stop(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
        await cancel_and_wait([*self._tasks, *([self._poller] if self._poller else [])])
        self._poller = None
