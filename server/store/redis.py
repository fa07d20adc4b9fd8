"""`redis://HOST:PORT/DB`: the store several nodes share (run Redis with AOF for durability).

Keys, all under one prefix (default `solrace:`):
- `player:<id>` hash (player_id, name, created_at_ms); `name:<casefolded name>` -> player id,
  so a name is owned once, case-blind, like the other backends.
- `race:<id>` hash (record JSON, status, order); `status:<status>` sorted sets of race ids
  scored by `order` (first-save order, from the `race-order` counter) for `list_races`;
  `rating-due` the finished rated races not rated yet, scored the same (`races_to_rate`).
- `secret-fingerprint`: a digest of the token secret of the first node (`claim_secret`): a node
  with another secret refuses to start.
- `moves:<race>:<player>` list of move JSON in ply order; `seqs:<race>:<player>` hash
  seq -> ply; `racers:<race>` set of players with moves (`get_moves` reads the moves of these
  and of the race's racers, so a set lost still finds the moves a race must count).

Writes whose checks must be atomic run as Lua scripts (one round trip, nothing interleaves):
creating a player, saving a race over the record this store last read or wrote (compared by
the digest of its JSON), appending a move. Otherwise `save_race_if` compares parsed records
under WATCH/MULTI, so a record written by an older node (other JSON text, same values)
still compares equal. Either way a save that puts a racer out (the `out` field grows) first
checks that the record counts every move stored for that racer (`UncountedMovesError`; a
count above the moves stored, whose list lost some, is taken as it is), and a move appended
after it is refused (`NotPlayingError`): a racer's results are those of its stored moves,
whichever node put it out.

Redis commands are never retried blindly: a write whose reply is lost may have been applied,
so its retry knows it is one (`_call_with_retry_flag`) and takes finding its own write stored
(this player's name, the very move at its ply, its record, its tournament save's token, its
rating marker) for its success. A call gives up with `StoreUnavailableError` (retryable) when
Redis stays away. Keys are built from the prefix inside scripts, so this wants one Redis (or
one hash slot), not Redis Cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import (
    DONE_STATES,
    LIVE_STATUSES,
    MoveRecord,
    PlayerRecord,
    RaceRecord,
    RaceStatus,
)
from solrace.server.redis_client import redis_client
from solrace.server.store.base import (
    NameTakenError,
    NotPlayingError,
    PlyConflictError,
    StoreError,
    StoreUnavailableError,
    UncountedMovesError,
    UnknownRaceError,
    rating_falls_due,
)
from solrace.server.store.redis_competition import OPEN_VERSIONS, RedisCompetition
from solrace.server.store.redis_tx import watched
from solrace.tasks import raise_lost_cancellation, stop_requests

T = TypeVar("T")

OUTAGE_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)
ATTEMPTS = 3  # per call: a stale pooled connection after a Redis restart costs one
RETRY_PAUSE_S = 0.05

# KEYS: name, player. ARGV: player_id, name, created_at_ms.
# 1 created, 0 name owned by someone else, 2 name already this player's (a retried create).
CREATE_PLAYER = """
local owner = redis.call('GET', KEYS[1])
if owner then
  if owner == ARGV[1] then return 2 end
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'player_id', ARGV[1], 'name', ARGV[2], 'created_at_ms', ARGV[3])
return 1
"""

# KEYS: race, order counter, new status set, rating-due, then every status set. ARGV:
# race_id, status, new record JSON, sha1 of the record JSON expected to be stored, sha1 of the
# new JSON, the racers out of it (`_out`), '1' if it falls due for rating, the key prefix of
# the race's move lists, then each racer out of it and its move count (`_out_counts`: one
# put out by this save must count all its stored moves, or more if its list lost some; a
# record saved before the `out` field existed is not checked).
# 1 stored; 2 the new record is already stored; 0 neither (the caller compares parsed
# records: another node may have written the same record as other JSON text); 3 a racer it
# puts out counts fewer moves than are stored for it (nothing stored).
SAVE_RACE_IF_TEXT = """
local current = redis.call('HGET', KEYS[1], 'record')
local digest = current and redis.sha1hex(current) or ''
if digest ~= ARGV[4] then
  if digest == ARGV[5] then return 2 end
  return 0
end
local was_out = redis.call('HGET', KEYS[1], 'out')
if was_out and was_out ~= '*' then
  for i = 9, #ARGV, 2 do
    if not string.find(was_out, ',' .. ARGV[i] .. ',', 1, true)
        and redis.call('LLEN', ARGV[8] .. ARGV[i]) > tonumber(ARGV[i + 1]) then
      return 3
    end
  end
end
local order = redis.call('HGET', KEYS[1], 'order')
if not order then order = redis.call('INCR', KEYS[2]) end
for i = 5, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('HSET', KEYS[1], 'record', ARGV[3], 'status', ARGV[2], 'order', order, 'out', ARGV[6])
redis.call('ZADD', KEYS[3], order, ARGV[1])
if ARGV[7] == '1' then redis.call('ZADD', KEYS[4], order, ARGV[1]) end
return 1
"""

# KEYS: race, moves list, seqs hash, racers set. ARGV: ply, seq, move JSON, player_id.
# 1 stored, -1 unknown race, -2 wrong ply, -3 seq already stored, -4 the race takes no more
# moves from this racer (its `out` field; none in a record saved before it existed), 2 this
# very move is already stored at that ply (a retried append whose first reply was lost).
APPEND_MOVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local stored_ply = redis.call('HGET', KEYS[3], ARGV[2])
if stored_ply then
  if stored_ply == ARGV[1] and redis.call('LINDEX', KEYS[2], tonumber(ARGV[1])) == ARGV[3] then
    return 2
  end
  return -3
end
local out = redis.call('HGET', KEYS[1], 'out')
if out and (out == '*' or string.find(out, ',' .. ARGV[4] .. ',', 1, true)) then return -4 end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[1]) then return -2 end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[4], ARGV[4])
return 1
"""

# KEYS: status sets. ARGV: race key prefix. Records in first-save order.
LIST_RACES = """
local items = {}
for _, key in ipairs(KEYS) do
  local found = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  for j = 1, #found, 2 do table.insert(items, {tonumber(found[j + 1]), found[j]}) end
end
table.sort(items, function(a, b) return a[1] < b[1] end)
local records = {}
for _, item in ipairs(items) do
  table.insert(records, redis.call('HGET', ARGV[1] .. item[2], 'record'))
end
return records
"""


def _out(race: RaceRecord) -> str:
    """The racers the race takes no more moves from, as `APPEND_MOVE` reads them: ",p1,p2,"
    (those out of it), or "*" once it has finished or was cancelled (everyone)."""
    if race.status in (RaceStatus.FINISHED, RaceStatus.CANCELLED):
        return "*"
    return "," + "".join(f"{r.player_id}," for r in race.racers if r.state in DONE_STATES)


def _out_counts(race: RaceRecord) -> list[str]:
    """Each racer out of the race and its move count, flat (player, count, ...), as
    `SAVE_RACE_IF_TEXT` reads them: a racer it puts out must count all its stored moves."""
    return [
        each for r in race.racers if r.state in DONE_STATES for each in (r.player_id, str(r.moves))
    ]


def _newly_out(race: RaceRecord, was_out: str | None) -> list[tuple[str, int]]:
    """The racers out of `race` who were not out of the stored record (its `out` field,
    `was_out`), with their counts; none over a finished race, a new one, or one saved before
    the field existed (its racers may be out with any count: they are taken as they are)."""
    if was_out is None or was_out == "*":
        return []
    return [
        (r.player_id, r.moves)
        for r in race.racers
        if r.state in DONE_STATES and f",{r.player_id}," not in was_out
    ]


class _RacerId(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    player_id: PlayerId


class _RaceRacers(BaseModel):
    """Only the racers' ids of a stored `RaceRecord`: the rest of its JSON (its recent events
    above all) is skipped, not validated; `get_moves` needs no more, on every racer's sync."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    racers: list[_RacerId] = []


def _move_json(move: MoveRecord) -> str:
    return move.model_dump_json()


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


KNOWN_KEPT = 4096  # live races whose stored JSON this store remembers (newest kept)


class RedisStore(RedisCompetition):
    def __init__(self, url: str, *, prefix: str = "solrace:", timeout_s: float = 5.0) -> None:
        self.url = url
        self.prefix = prefix
        self.timeout_s = timeout_s
        # The client is Any on purpose: redis-py's own annotations and the types-redis stubs
        # disagree, and every reply is converted into a record right here anyway.
        self._redis: Any = None
        self._scripts: dict[str, Any] = {}
        # Per race: the record object last read or written here, with the sha1 of its JSON
        # as stored. A compare-and-set whose `expected` is that very object compares the
        # digests inside Redis (one script call) instead of WATCH, HMGET, parsing the stored
        # record (its recent events included) and MULTI/EXEC. Live races only: a finished
        # or cancelled race is rarely saved again (a held deal released, once), and its
        # record with its recent events (~120 KB as objects) would stay here long after the
        # node forgot the race.
        self._known: dict[RaceId, tuple[RaceRecord, str]] = {}

    # --- plumbing --------------------------------------------------------------------------

    @property
    def redis(self) -> Any:
        assert self._redis is not None, "store is not open"
        return self._redis

    def _key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def _status_key(self, status: RaceStatus) -> str:
        return self._key("status", status.value)

    async def _call(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work`, once more per attempt on a connection error; then give up cleanly."""
        return await self._call_with_retry_flag(lambda is_retry: work())

    async def _call_with_retry_flag(self, work: Callable[[bool], Awaitable[T]]) -> T:
        """`_call` for a write that must know whether it is a retry: `work(is_retry)`, where
        `is_retry` is True once an earlier attempt failed on the link. That attempt may have
        been applied with only its reply lost, so the retry takes finding its own write
        stored for its success, not for someone else's write.

        A cancellation of the calling task that redis-py dropped on the way is raised again
        (`CancelledError`) as soon as the attempt ends, with its answer or its failure: on
        Python 3.11 each command is sent through `asyncio.wait_for` (the client has a socket
        timeout), which returns the send's result, and loses the cancellation, when the send
        ends as the cancellation comes. The task would otherwise go on as if never asked to
        stop (a loop of store calls, such as a channel's reader, would run on)."""
        cancels = stop_requests()
        for attempt in range(ATTEMPTS):
            try:
                try:
                    return await work(attempt > 0)
                finally:
                    raise_lost_cancellation(cancels)  # answered or failed: no retry then
            except OUTAGE_ERRORS as exc:
                if attempt == ATTEMPTS - 1:
                    raise StoreUnavailableError(f"redis unreachable: {exc}") from exc
                await asyncio.sleep(RETRY_PAUSE_S * (attempt + 1))  # back off, then reconnect
            except StoreError:
                raise
            except RedisError as exc:
                raise StoreError(f"redis refused: {exc}") from exc
        raise AssertionError("unreachable")

    async def claim_secret(self, fingerprint: str) -> str:
        """`secret-fingerprint`: set by the first node, compared by every later one."""
        key = self._key("secret-fingerprint")

        async def claim() -> str:
            await self.redis.set(key, fingerprint, nx=True)
            stored = await self.redis.get(key)
            return fingerprint if stored is None else str(stored)

        return await self._call(claim)

    async def open(self) -> None:
        """Connect: `StoreUnavailableError` if Redis cannot be reached, `StoreError` if the URL
        does not parse or Redis refuses it. A store that failed to open may be opened again."""
        try:
            # No client-side retries: every retry here is a decision (see `_call`).
            self._redis = redis_client(self.url, timeout_s=self.timeout_s, decode_responses=True)
        except ValueError as exc:  # e.g. a port that is no number
            raise StoreError(f"invalid Redis URL: {exc}") from exc
        self._scripts = {
            "create_player": self._redis.register_script(CREATE_PLAYER),
            "save_race_if_text": self._redis.register_script(SAVE_RACE_IF_TEXT),
            "append_move": self._redis.register_script(APPEND_MOVE),
            "list_races": self._redis.register_script(LIST_RACES),
            "open_versions": self._redis.register_script(OPEN_VERSIONS),
        }
        try:
            await self._call(self.redis.ping)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connections; cancelled (a stop's deadline), they are closed all the same,
        without waiting for Redis."""
        if self._redis is not None:
            try:
                await self._redis.aclose()
            finally:
                self._redis.connection_pool.abort()
                self._redis = None

    # --- players ---------------------------------------------------------------------------

    async def create_player(self, player_id: PlayerId, name: str, now_ms: int) -> PlayerRecord:
        keys = [self._key("name", name.casefold()), self._key("player", player_id)]

        async def create(is_retry: bool) -> bool:
            code = int(await self._scripts["create_player"](keys, [player_id, name, now_ms]))
            # 2, the name already this player's: ours after a lost reply, else taken before.
            return code == 1 or (code == 2 and is_retry)

        if not await self._call_with_retry_flag(create):
            raise NameTakenError(name)
        return PlayerRecord(player_id=player_id, name=name, created_at_ms=now_ms)

    async def get_player(self, player_id: PlayerId) -> PlayerRecord | None:
        fields: dict[str, str] = await self._call(
            lambda: self.redis.hgetall(self._key("player", player_id))
        )
        if not fields:
            return None
        return PlayerRecord(
            player_id=PlayerId(fields["player_id"]),
            name=fields["name"],
            created_at_ms=int(fields["created_at_ms"]),
        )

    async def get_player_by_name(self, name: str) -> PlayerRecord | None:
        player_id: str | None = await self._call(
            lambda: self.redis.get(self._key("name", name.casefold()))
        )
        return None if player_id is None else await self.get_player(PlayerId(player_id))

    # --- races -----------------------------------------------------------------------------

    @property
    def remembered_races(self) -> int:
        """How many races' records this store keeps for its one-call compare-and-set."""
        return len(self._known)

    def _remember(self, record: RaceRecord, digest: str) -> None:
        self._known.pop(record.race_id, None)
        if record.status not in LIVE_STATUSES:
            return
        self._known[record.race_id] = (record, digest)
        if len(self._known) > KNOWN_KEPT:
            del self._known[next(iter(self._known))]

    def _race_keys(self, race: RaceRecord) -> list[str]:
        return [
            self._key("race", race.race_id),
            self._key("race-order"),
            self._status_key(race.status),
            self._key("rating-due"),
            *(self._status_key(status) for status in RaceStatus),
        ]

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        text = race.model_dump_json()
        digest = _sha1(text)
        due = "1" if rating_falls_due(race, expected) else "0"
        known = self._known.get(race.race_id)
        if expected is not None and known is not None and known[0] is expected:

            async def by_digest(is_retry: bool) -> int:
                args = [
                    race.race_id,
                    race.status.value,
                    text,
                    known[1],
                    digest,
                    _out(race),
                    due,
                    self._key("moves", race.race_id, ""),
                    *_out_counts(race),
                ]
                code = int(await self._scripts["save_race_if_text"](self._race_keys(race), args))
                return 1 if code == 2 and is_retry else code  # 2 after a lost reply: ours

            code = await self._call_with_retry_flag(by_digest)
            if code == 1:
                self._remember(race, digest)
                return True
            if code == 2:
                return False  # as below: stored is not `expected`
            if code == 3:
                raise UncountedMovesError(f"race {race.race_id}: a racer out misses moves")
        stored = await self._save_race_if_parsed(race, expected, text)
        if stored:
            self._remember(race, digest)
        return stored

    async def _save_race_if_parsed(
        self, race: RaceRecord, expected: RaceRecord | None, text: str
    ) -> bool:
        key = self._key("race", race.race_id)

        async def attempt(pipe: Any, is_retry: bool) -> bool:
            current, order, was_out = await pipe.hmget(key, ["record", "order", "out"])
            stored = None if current is None else RaceRecord.model_validate_json(current)
            if stored != expected:
                await pipe.unwatch()
                # A retry finding our own record: the lost reply was a success.
                return is_retry and stored == race
            newly_out = _newly_out(race, was_out)
            if newly_out:  # each must count all its stored moves (`SAVE_RACE_IF_TEXT`)
                lists = [self._key("moves", race.race_id, p) for p, _ in newly_out]
                await pipe.watch(*lists)  # a move appended meanwhile refuses the EXEC
                for list_key, (_, count) in zip(lists, newly_out, strict=True):
                    if await pipe.llen(list_key) > count:
                        await pipe.unwatch()
                        raise UncountedMovesError(f"race {race.race_id}: a racer out misses moves")
            if order is None:
                order = await self.redis.incr(self._key("race-order"))
            pipe.multi()
            for status in RaceStatus:
                pipe.zrem(self._status_key(status), race.race_id)
            mapping = {"record": text, "status": race.status.value, "order": order}
            pipe.hset(key, mapping={**mapping, "out": _out(race)})
            pipe.zadd(self._status_key(race.status), {race.race_id: int(order)})
            if rating_falls_due(race, expected):
                pipe.zadd(self._key("rating-due"), {race.race_id: int(order)})
            await pipe.execute()
            return True

        async def compare_and_set(is_retry: bool) -> bool:
            return await watched(self.redis, [key], lambda pipe: attempt(pipe, is_retry))

        return await self._call_with_retry_flag(compare_and_set)

    async def get_race(self, race_id: RaceId) -> RaceRecord | None:
        text: str | None = await self._call(
            lambda: self.redis.hget(self._key("race", race_id), "record")
        )
        if text is None:
            return None
        record = RaceRecord.model_validate_json(text)
        self._remember(record, _sha1(text))
        return record

    async def list_races(self, statuses: Sequence[RaceStatus]) -> list[RaceRecord]:
        keys = [self._status_key(status) for status in dict.fromkeys(statuses)]
        if not keys:
            return []
        texts: list[str | None] = await self._call(
            lambda: self._scripts["list_races"](keys, [self._key("race", "")])
        )
        return [RaceRecord.model_validate_json(text) for text in texts if text]

    # --- moves -----------------------------------------------------------------------------

    async def append_move(self, move: MoveRecord) -> None:
        keys = [
            self._key("race", move.race_id),
            self._key("moves", move.race_id, move.player_id),
            self._key("seqs", move.race_id, move.player_id),
            self._key("racers", move.race_id),
        ]
        args = [move.ply, move.seq, _move_json(move), move.player_id]

        async def append(is_retry: bool) -> int:
            code = int(await self._scripts["append_move"](keys, args))
            return 1 if code == 2 and is_retry else code  # 2 after a lost reply: ours

        code = await self._call_with_retry_flag(append)
        if code == 1:
            return
        if code == -1:
            raise UnknownRaceError(move.race_id)
        if code == -2:
            raise PlyConflictError(f"ply {move.ply} is not {move.player_id}'s next move")
        if code == -4:
            raise NotPlayingError(f"race {move.race_id} takes no more moves from {move.player_id}")
        raise PlyConflictError(f"seq {move.seq} is already stored")

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        async def read() -> list[str]:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.smembers(self._key("racers", race_id))
                pipe.hget(self._key("race", race_id), "record")
                listed: set[str]
                text: str | None
                listed, text = await pipe.execute()
            # The set of movers, and the race's racers: a set lost (a key evicted) does not
            # hide their moves, which a save putting them out counts (`SAVE_RACE_IF_TEXT`).
            players = set(listed)
            if text is not None:
                players.update(r.player_id for r in _RaceRacers.model_validate_json(text).racers)
            async with self.redis.pipeline(transaction=False) as pipe:
                for player_id in sorted(players):
                    pipe.lrange(self._key("moves", race_id, player_id), 0, -1)
                logs: list[list[str]] = await pipe.execute()
            return [text for log in logs for text in log]

        return [MoveRecord.model_validate_json(text) for text in await self._call(read)]
