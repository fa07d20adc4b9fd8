"""Ratings and tournaments for the `redis://` store (mixed into `RedisStore`).

Keys (under the store's prefix):
- `ratings:<game>` hash player id -> rating JSON (the leaderboard reads one hash);
  `rated-games:<player>` set of the game ids a player has a rating in;
- `rated:<race>` marks a race whose ratings were applied (once-only across nodes), with a
  random token of the call that applied them (its retry after a lost reply knows its own);
- `recent:<player>` list of result JSON, newest first, trimmed to `RECENT_RESULTS_KEPT`;
- `tournament:<id>` hash (version, record JSON, and `writer`: a random token of the call
  that saved it, so its retry after a lost reply knows its own save from another node's save
  of the same version; a hash saved without it is read the same); `tournaments` sorted set of
  ids by creation order (from the `tournament-order` counter); `tournaments-open` and
  `tournaments-finished`, the ids of the tournaments not settled and of the finished ones,
  scored the same, written with each save. A store written before those two existed gets
  them filled from its records once (`_indexed`), then `tournament-indexes` is set.

Both writes are WATCH/MULTI transactions: the checks (race not yet rated, ratings unchanged,
tournament version) hold when the writes land, or the transaction is tried again.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from solrace.server.protocol.competition_records import (
    RECENT_RESULTS_KEPT,
    RatingOutcome,
    RatingRecord,
    RatingUpdate,
    RecentResult,
    TournamentRecord,
)
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.store.base import TournamentVersion, flags_of_stored_tournament
from solrace.server.store.redis_tx import watched

T = TypeVar("T")

# KEYS: the open set, the finished set. ARGV: the tournament key prefix. One JSON array
# text: for each open tournament stored, in creation order, its id, order, version, and 1 if
# finished else 0.
OPEN_VERSIONS = """
local open = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local found = {}
for i = 1, #open, 2 do
  local version = redis.call('HGET', ARGV[1] .. open[i], 'version')
  if version then
    local finished = redis.call('ZSCORE', KEYS[2], open[i]) and '1' or '0'
    table.insert(found, open[i])
    table.insert(found, open[i + 1])
    table.insert(found, version)
    table.insert(found, finished)
  end
end
if #found == 0 then return '[]' end
return cjson.encode(found)
"""

#: Tournaments read and indexed in one transaction when a store written before the open and
#: finished sets existed gets them filled.
INDEX_BATCH = 500


def _rating(text: str | None) -> RatingRecord | None:
    return None if text is None else RatingRecord.model_validate_json(text)


class RedisCompetition:
    #: Whether this store has seen the open and finished sets filled (`_indexed`).
    _tournaments_indexed = False

    @property
    def redis(self) -> Any:
        raise NotImplementedError  # provided by RedisStore

    #: The store's Lua scripts by name (provided by RedisStore; `OPEN_VERSIONS` among them).
    _scripts: dict[str, Any]

    def _key(self, *parts: str) -> str:
        raise NotImplementedError  # provided by RedisStore

    async def _call(self, work: Callable[[], Awaitable[T]]) -> T:
        raise NotImplementedError  # provided by RedisStore

    async def _call_with_retry_flag(self, work: Callable[[bool], Awaitable[T]]) -> T:
        raise NotImplementedError  # provided by RedisStore

    # --- ratings ---------------------------------------------------------------------------

    async def get_ratings(self, player_id: PlayerId) -> list[RatingRecord]:
        async def read() -> list[str]:
            games: set[str] = await self.redis.smembers(self._key("rated-games", player_id))
            async with self.redis.pipeline(transaction=False) as pipe:
                for game in sorted(games):
                    pipe.hget(self._key("ratings", game), player_id)
                texts: list[str | None] = await pipe.execute()
            return [text for text in texts if text]

        return [RatingRecord.model_validate_json(text) for text in await self._call(read)]

    async def list_ratings(self, game: str) -> list[RatingRecord]:
        texts: dict[str, str] = await self._call(
            lambda: self.redis.hgetall(self._key("ratings", game))
        )
        return [RatingRecord.model_validate_json(text) for text in texts.values()]

    async def apply_rating_update(self, update: RatingUpdate) -> RatingOutcome:
        marker = self._key("rated", update.race_id)
        table = self._key("ratings", update.game)
        due = self._key("rating-due")
        token = secrets.token_hex(8)

        async def attempt(pipe: Any, is_retry: bool) -> RatingOutcome:
            # The ratings first, then the marker: another node's application sets both at
            # once, so ratings read after it come with the marker, and are never taken for
            # stale ones (the marker read first, the ratings after, they were: STALE).
            players = [c.player_id for c in update.changes]
            texts = await pipe.hmget(table, players) if players else []
            applied_by = await pipe.get(marker)
            if applied_by is not None:
                await pipe.unwatch()
                if is_retry and applied_by == token:
                    return RatingOutcome.APPLIED  # a retry finding its own marker: ours
                await self.redis.zrem(due, update.race_id)
                return RatingOutcome.ALREADY_APPLIED
            for change, text in zip(update.changes, texts, strict=True):
                if _rating(text) != change.before:
                    await pipe.unwatch()
                    return RatingOutcome.STALE
            pipe.multi()
            for change in update.changes:
                pipe.hset(table, change.player_id, change.after.model_dump_json())
                pipe.sadd(self._key("rated-games", change.player_id), update.game)
                recent = self._key("recent", change.player_id)
                pipe.lpush(recent, change.result.model_dump_json())
                pipe.ltrim(recent, 0, RECENT_RESULTS_KEPT - 1)
            pipe.set(marker, token)
            pipe.zrem(due, update.race_id)
            await pipe.execute()
            return RatingOutcome.APPLIED

        async def apply(is_retry: bool) -> RatingOutcome:
            return await watched(self.redis, [marker, table], lambda pipe: attempt(pipe, is_retry))

        return await self._call_with_retry_flag(apply)

    async def races_to_rate(self) -> list[RaceId]:
        due: list[str] = await self._call(lambda: self.redis.zrange(self._key("rating-due"), 0, -1))
        return [RaceId(race_id) for race_id in due]

    async def rating_settled(self, race_id: RaceId) -> None:
        await self._call(lambda: self.redis.zrem(self._key("rating-due"), race_id))

    async def get_recent_results(self, player_id: PlayerId, limit: int) -> list[RecentResult]:
        if limit <= 0:
            return []
        texts: list[str] = await self._call(
            lambda: self.redis.lrange(self._key("recent", player_id), 0, limit - 1)
        )
        return [RecentResult.model_validate_json(text) for text in texts]

    # --- tournaments -----------------------------------------------------------------------

    async def save_tournament(self, record: TournamentRecord, expected_version: int | None) -> bool:
        key = self._key("tournament", record.tournament_id)
        token = secrets.token_hex(8)

        async def attempt(pipe: Any, is_retry: bool) -> bool:
            version, writer = await pipe.hmget(key, ["version", "writer"])
            stored = None if version is None else int(version)
            if stored != expected_version:
                await pipe.unwatch()
                # A retry finding our own token: the lost reply was a success. The version
                # alone is not enough: another node may have saved that version first (our
                # EXEC then refused, the refusal lost with the link).
                return is_retry and writer == token
            if stored is None:
                order = await self.redis.incr(self._key("tournament-order"))
            else:
                order = await pipe.zscore(self._key("tournaments"), record.tournament_id)
            pipe.multi()
            pipe.hset(
                key,
                mapping={
                    "version": record.version,
                    "record": record.model_dump_json(),
                    "writer": token,
                },
            )
            if stored is None or order is not None:
                pipe.zadd(self._key("tournaments"), {record.tournament_id: int(order)})
                self._index(pipe, record.tournament_id, int(order), _flags(record))
            await pipe.execute()
            return True

        async def compare_and_set(is_retry: bool) -> bool:
            return await watched(self.redis, [key], lambda pipe: attempt(pipe, is_retry))

        return await self._call_with_retry_flag(compare_and_set)

    async def get_tournament(self, tournament_id: str) -> TournamentRecord | None:
        text: str | None = await self._call(
            lambda: self.redis.hget(self._key("tournament", tournament_id), "record")
        )
        return None if text is None else TournamentRecord.model_validate_json(text)

    def _index(self, pipe: Any, tournament_id: str, order: int, flags: tuple[bool, bool]) -> None:
        """Queue the writes that put a tournament of `flags` (finished, settled) in the open
        and finished sets, or take it out of them."""
        finished, settled = flags
        for key, member in (("tournaments-open", not settled), ("tournaments-finished", finished)):
            if member:
                pipe.zadd(self._key(key), {tournament_id: order})
            else:
                pipe.zrem(self._key(key), tournament_id)

    async def _indexed(self) -> None:
        """Fill the open and finished sets from the stored records if no node has yet (a store
        written before they existed), once: each batch of tournaments is read and indexed
        under WATCH, so a save meanwhile (which indexes its own) is not undone."""
        if self._tournaments_indexed:
            return
        marker = self._key("tournament-indexes")

        async def fill() -> None:
            if await self.redis.get(marker) is not None:
                return
            ordered: list[tuple[str, float]] = await self.redis.zrange(
                self._key("tournaments"), 0, -1, withscores=True
            )
            for start in range(0, len(ordered), INDEX_BATCH):
                batch = ordered[start : start + INDEX_BATCH]
                keys = [self._key("tournament", tid) for tid, _ in batch]

                async def attempt(
                    pipe: Any, batch: list[tuple[str, float]] = batch, keys: list[str] = keys
                ) -> None:
                    # Read in one round trip beside the watch: a save after it still
                    # makes the EXEC fail, and the batch is read again.
                    async with self.redis.pipeline(transaction=False) as reads:
                        for key in keys:
                            reads.hget(key, "record")
                        texts: list[str | None] = await reads.execute()
                    pipe.multi()
                    for (tid, order), text in zip(batch, texts, strict=True):
                        if text is not None:
                            self._index(pipe, tid, int(order), flags_of_stored_tournament(text))
                    await pipe.execute()

                await watched(self.redis, keys, attempt)
            await self.redis.set(marker, "1")

        await self._call(fill)
        self._tournaments_indexed = True

    async def list_open_tournaments(self) -> list[TournamentRecord]:
        await self._indexed()

        async def read() -> list[str]:
            ids: list[str] = await self.redis.zrange(self._key("tournaments-open"), 0, -1)
            async with self.redis.pipeline(transaction=False) as pipe:
                for tournament_id in ids:
                    pipe.hget(self._key("tournament", tournament_id), "record")
                texts: list[str | None] = await pipe.execute()
            return [text for text in texts if text]

        return [TournamentRecord.model_validate_json(t) for t in await self._call(read)]

    async def open_tournament_versions(self) -> list[TournamentVersion]:
        await self._indexed()
        script = self._scripts["open_versions"]
        keys = [self._key("tournaments-open"), self._key("tournaments-finished")]

        async def read() -> str:
            text: str = await script(keys, [self._key("tournament", "")])
            return text

        # The tick's read: one round trip, and one JSON text rather than four replies a
        # tournament, which the client's parser took ~10 us each to read on the event loop.
        found: list[str] = json.loads(await self._call(read))
        return [
            TournamentVersion(found[i], int(found[i + 2]), int(found[i + 1]), found[i + 3] == "1")
            for i in range(0, len(found), 4)
        ]

    async def finished_tournament_versions(
        self, skip: int, limit: int
    ) -> tuple[list[TournamentVersion], int]:
        await self._indexed()
        key = self._key("tournaments-finished")
        skip, limit = max(0, skip), max(0, limit)

        async def read() -> tuple[list[TournamentVersion], int]:
            total = int(await self.redis.zcard(key))
            if limit == 0 or skip >= total:
                return [], total
            ordered: list[tuple[str, float]] = await self.redis.zrevrange(
                key, skip, skip + limit - 1, withscores=True
            )
            ordered.reverse()
            async with self.redis.pipeline(transaction=False) as pipe:
                for tournament_id, _ in ordered:
                    pipe.hget(self._key("tournament", tournament_id), "version")
                versions: list[str | None] = await pipe.execute()
            page = [
                TournamentVersion(tid, int(version), int(order), True)
                for (tid, order), version in zip(ordered, versions, strict=True)
                if version is not None
            ]
            return page, total

        return await self._call(read)


def _flags(record: TournamentRecord) -> tuple[bool, bool]:
    """A record's place in the indexes: whether it is finished, whether it is settled."""
    return record.is_finished, record.settled
