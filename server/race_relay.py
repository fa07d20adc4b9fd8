"""Races on several nodes: their channels. After storing a change to a race a node publishes a
small notice on the race's channel (`race:<id>`: the new version and the moves behind it, if
any); each node that follows the race (it has sessions in it, or recovered it) plays the
notice's moves on its boards, and reloads the record when the notice is newer than its copy,
or says the record changed without an event (a racer's connection handed over), and the boards
too when a move was not a board's next one; the reload forwards the events its own sessions
have not had. A gap in the channel (the broker says messages may be lost), or a
notice that cannot be read, reloads the record and every board from the store.

A notice is a wake-up, not the truth: the record in the store is. `RaceRelay` is this node's end
of the races' channels; the race keeper (race_sync.py) owns it, tells it which races to follow
and what it stored, and does the reloading for it (`RaceKeeper.refresh`), which the tick, the
move handler and the node watch also use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from pydantic import Field

from solrace.server.broker import Broker, BrokerError, Notice, Subscription
from solrace.server.outage import Outage
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.records import MoveRecord
from solrace.server.runtime import RaceRuntime
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.race_relay")


class RaceNotice(Notice):
    """What a node publishes on `race:<id>` after storing a change (a wake-up, not the
    truth: the record in the store is)."""

    epoch: str
    version: int
    moves: list[MoveRecord] = Field(default_factory=list)
    #: The change stored made no event (a racer's connection handed over to another one),
    #: so the version did not move on: a copy at that version reloads the record too.
    reload: bool = False


def race_channel(race_id: RaceId) -> str:
    return f"race:{race_id}"


class Reload(Protocol):
    """Take a race's stored record (and, if asked, every board from the stored moves) and
    forward what this node's sessions missed (`RaceKeeper.refresh`)."""

    async def __call__(self, runtime: RaceRuntime, *, reload_boards: bool = False) -> None: ...


class RaceRelay:
    """This node's end of the races' channels: it publishes a notice for each change this
    node stores (`publish`) and follows the races it is given (`subscribe`, then `follow`)
    until they end or it is told to stop (`unfollow`, `drop`); a copy that fell behind is
    reloaded through `reload`."""

    def __init__(self, broker: Broker, reload: Reload) -> None:
        self.broker = broker
        self.reload = reload
        #: Notices to the other nodes that the broker refused (they reload on the gap).
        self.publishing = Outage(log, "publishing race notices")

    async def publish(
        self, runtime: RaceRuntime, moves: Sequence[MoveRecord], *, reload: bool = False
    ) -> None:
        """Tell the nodes following the race that its record moved on to this copy's version
        (through `moves`, if any; `reload`: the record changed without an event, its version
        did not move on). A refusal is logged (once per outage), not raised: the change is
        stored."""
        race = runtime.race
        notice = RaceNotice(
            epoch=race.epoch, version=race.version, moves=list(moves), reload=reload
        )
        try:
            await self.broker.publish(race_channel(runtime.race_id), notice.encode())
        except BrokerError as exc:
            # Nodes whose link dropped get a gap when it is back and reload then.
            self.publishing.failed(f"race {runtime.race_id}: {exc}")
        else:
            self.publishing.worked()

    async def subscribe(self, race_id: RaceId) -> Subscription:
        """The race's channel, which keeps its notices from now on: subscribed before the
        store is read, no change stored meanwhile is missed. The caller closes it if it does
        not `follow` it."""
        return await self.broker.subscribe(race_channel(race_id))

    def follow(self, runtime: RaceRuntime, subscription: Subscription) -> None:
        """Act on the race's notices from `subscription` (closed when the following ends), in
        a task of the race's own (`runtime.follower`)."""
        runtime.follower = asyncio.create_task(
            self._read_notices(runtime, subscription), name=f"solrace-follow-{runtime.race_id}"
        )

    async def unfollow(self, runtime: RaceRuntime) -> None:
        """Stop following the race and wait until the following has ended."""
        task, runtime.follower = runtime.follower, None
        if task is not None and task is not asyncio.current_task():
            await cancel_and_wait([task])

    def drop(self, runtime: RaceRuntime) -> None:
        """Stop following a race the node forgets, without waiting."""
        follower, runtime.follower = runtime.follower, None
        # It closes its subscription as it ends; a follower dropping its own race (a notice
        # that cancelled it) ends by itself, the race no longer live.
        if follower is not None and follower is not asyncio.current_task():
            follower.cancel()

    async def _read_notices(self, runtime: RaceRuntime, subscription: Subscription) -> None:
        """Follow the race's notices until it ends. A notice that cannot be read or acted on
        is treated as a gap (the record and boards are reloaded from the store, which holds
        the truth): one bad notice never stops the following."""
        try:
            async for item in subscription:
                try:
                    if item is None:  # messages may be lost: reload everything
                        await self.reload(runtime, reload_boards=True)
                    else:
                        await self._on_notice(runtime, RaceNotice.model_validate_json(item))
                except Exception:
                    log.exception("race %s: notice not applied; reloading", runtime.race_id)
                    await self.reload(runtime, reload_boards=True)
                if not runtime.race.is_live or runtime.follower is not asyncio.current_task():
                    break  # nothing follows a race's end, nor one the reload dropped (`drop`)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("race %s: following failed", runtime.race_id)
        finally:
            await subscription.close()
            if runtime.follower is asyncio.current_task():
                runtime.follower = None

    async def _on_notice(self, runtime: RaceRuntime, notice: RaceNotice) -> None:
        behind = False
        for move in notice.moves:
            board = runtime.boards.get(move.player_id)
            if board is not None and board.lock.locked():
                continue  # a move of that racer is being stored here: the store decides
            if not runtime.apply_stored_move(move):
                behind = True
        race = runtime.race
        if behind or notice.reload or notice.epoch != race.epoch or notice.version > race.version:
            await self.reload(runtime, reload_boards=behind)


__all__ = ["RaceNotice", "RaceRelay", "Reload", "race_channel"]
