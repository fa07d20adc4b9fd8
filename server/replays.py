"""Finished races' replays (`get_replay`): built from the store once, kept encoded.

A replay of a long race is thousands of moves (~18 ms to build for 3,000); a client asking
for it again, or many spectators asking at the end of a race, get the frame built the first
time. A finished race's replay never changes, so nothing makes a kept one stale; a race whose
deal its tournament still holds has no replay yet, and none is kept for it; a cancelled race
(its tournament match decided without it, or left by all its players before the start) never
has one, and is refused as such, not as one that has yet to finish.
"""

from __future__ import annotations

from collections import OrderedDict

from solrace.server.protocol.codec import encode
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Replay
from solrace.server.protocol.records import RaceStatus
from solrace.server.protocol.replay import build_replay
from solrace.server.store import Store

#: What the replays kept encoded may take in all (a 3,000-move race's is ~0.1 MB).
REPLAYS_KEPT_BYTES = 16 * 2**20


class RecentFrames:
    """Encoded messages by key, the most recently used kept within `max_bytes` in all (one
    larger than a quarter of it is not kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._frames: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> bytes | None:
        frame = self._frames.get(key)
        if frame is not None:
            self._frames.move_to_end(key)
        return frame

    def keep(self, key: str, frame: bytes) -> None:
        if len(frame) > self.max_bytes // 4 or key in self._frames:
            return
        self._frames[key] = frame
        self._bytes += len(frame)
        while self._bytes > self.max_bytes:
            _, oldest = self._frames.popitem(last=False)
            self._bytes -= len(oldest)

    def __len__(self) -> int:
        return len(self._frames)


class Replays:
    """The `replay` frame of a finished race, from `store`, kept within `max_bytes`."""

    def __init__(self, store: Store, max_bytes: int = REPLAYS_KEPT_BYTES) -> None:
        self.store = store
        self.kept = RecentFrames(max_bytes)

    async def frame_of(self, race_id: RaceId) -> bytes:
        """The encoded `replay` of race `race_id`. `RaceError` if it has none: unknown
        (`UNKNOWN_RACE`), cancelled (`WRONG_STATUS`: it never will), not finished or its deal
        still held by its tournament (`NOT_FINISHED`: later); `StoreError` from the store."""
        frame = self.kept.get(race_id)
        if frame is not None:
            return frame
        record = await self.store.get_race(race_id)
        if record is None:
            raise RaceError(ErrorCode.UNKNOWN_RACE, f"no race {race_id!r}")
        if record.status is RaceStatus.CANCELLED:
            raise RaceError(
                ErrorCode.WRONG_STATUS,
                f"race {race_id} was cancelled (its tournament match was decided without it, or "
                "all its players left it before the start): a cancelled race has no replay",
            )
        if record.status is not RaceStatus.FINISHED:
            raise RaceError(ErrorCode.NOT_FINISHED, "replays exist once a race has finished")
        if record.deal_held:
            raise RaceError(
                ErrorCode.NOT_FINISHED, "this deal is revealed when its tournament round ends"
            )
        moves = await self.store.get_moves(race_id)
        frame = encode(Replay(replay=build_replay(record, moves)))
        self.kept.keep(race_id, frame)
        return frame


__all__ = ["REPLAYS_KEPT_BYTES", "RecentFrames", "Replays"]
