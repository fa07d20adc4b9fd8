"""The supervisor of a `Connection`'s link: it notices a lost link and brings it back.

`LinkSupervisor`, the base class of `Connection`, follows a link once it is up. When the link
closes, the link's tasks stop and the reader gets a `StatusChange`: a normal close, or one
after which connecting again cannot help, closes the link for good; any other is followed by
tries to open a new link (`Connection._open`), waited out as `Backoff` says and never sooner
than a refusing server's `Retry-After`. A failure of the supervisor itself (a bug) closes the
link for good too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod

from websockets.asyncio.client import ClientConnection

from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import Welcome
from solrace.tasks import cancel_and_wait

from .backoff import Backoff
from .connect_failures import ConnectionFailedError
from .link_closes import FATAL_CLOSE_CODES, close_text, link_end_text
from .link_status import Incoming, LinkStatus, StatusChange

#: The connection's logger: the supervisor is a part of the connection, and logs as it.
log = logging.getLogger("solrace.client.connection")


async def close_quietly(ws: ClientConnection) -> None:
    """Close a link being given up; a failure to close it is logged, not raised."""
    try:
        await ws.close()
    except Exception:
        log.warning("closing the link to %s failed", ws.remote_address, exc_info=True)


class LinkSupervisor(ABC):
    """The part of `Connection` that follows its link; see the module docstring.

    `Connection.__init__` sets what it reads and changes, and `Connection._open` opens each
    new link (its tasks, `_tasks`, are stopped here when the link closes)."""

    url: str
    status: LinkStatus
    backoff_s: tuple[float, float]
    stable_after_s: float
    _backoff: Backoff | None
    _opened_at: float
    _closing: bool
    _ws: ClientConnection | None
    _queue: asyncio.Queue[Incoming]
    _tasks: list[asyncio.Task[None]]

    @abstractmethod
    async def _open(self) -> Welcome:
        """Open a new link and resume on it; raises `ConnectionFailedError` if that fails."""

    async def _stop_tasks(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)

    # --- the supervisor: notice a lost link and bring it back ------------------------------

    async def _supervise(self) -> None:
        """Follow the link until it is closed for good; a failure of this task itself (a bug)
        closes the link for good too, said with a `StatusChange`, rather than leave the user
        waiting on a link nobody brings back."""
        try:
            await self._follow_link()
        except Exception as exc:
            log.exception("the connection to %s failed", self.url)
            ws, self._ws = self._ws, None
            if ws is not None:
                await close_quietly(ws)
            await self._stop_tasks()
            self.status = LinkStatus.CLOSED
            await self._queue.put(StatusChange(LinkStatus.CLOSED, f"client error: {exc!r}"))

    async def _follow_link(self) -> None:
        while not self._closing:
            ws = self._ws
            if ws is None:
                return
            await ws.wait_closed()
            self._ws = None
            lived_s = time.monotonic() - self._opened_at
            await self._stop_tasks()
            if self._closing:
                return
            code = ws.close_code
            if code in FATAL_CLOSE_CODES or code == CloseCode.NORMAL:
                self.status = LinkStatus.CLOSED
                await self._queue.put(StatusChange(LinkStatus.CLOSED, link_end_text(ws)))
                return
            self.status = LinkStatus.RECONNECTING
            # What it means is enough (the server's reason is left out): the link is coming
            # back. A close of this client's own says its reason: the frame's size, say.
            detail = close_text(code) if ws.protocol.close_rcvd else link_end_text(ws)
            await self._queue.put(StatusChange(LinkStatus.RECONNECTING, detail))
            if self._backoff is None:
                low, high = self.backoff_s
                self._backoff = Backoff(low, high, self.stable_after_s)
            self._backoff.link_lost(lived_s)
            await self._reconnect(self._backoff)

    async def _reconnect(self, backoff: Backoff) -> None:
        """Open a new link, waiting before each try as `backoff` says (carried over from the
        last round when the lost link was short-lived), and never less than the `Retry-After`
        of a handshake the server refused."""
        not_before_s = 0.0
        while not self._closing:
            await asyncio.sleep(backoff.next_wait(not_before_s))
            try:
                await self._open()
            except ConnectionFailedError as exc:
                if exc.fatal:
                    self.status = LinkStatus.CLOSED
                    await self._queue.put(StatusChange(LinkStatus.CLOSED, str(exc)))
                    return
                not_before_s = exc.retry_after_s or 0.0
                await self._queue.put(StatusChange(LinkStatus.RECONNECTING, str(exc)))
                continue
            await self._queue.put(StatusChange(LinkStatus.CONNECTED, "reconnected"))
            return


__all__ = ["LinkSupervisor", "close_quietly"]
