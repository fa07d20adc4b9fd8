"""`memory:`: the store in dicts, for unit tests only (nothing survives the process)."""

from __future__ import annotations

from collections.abc import Sequence

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.records import MoveRecord, PlayerRecord, RaceRecord, RaceStatus
from solrace.server.store.base import (
    NameTakenError,
    PlyConflictError,
    UnknownRaceError,
    rating_falls_due,
)
from solrace.server.store.memory_competition import MemoryCompetition


class MemoryStore(MemoryCompetition):
    def __init__(self) -> None:
        self._players: dict[PlayerId, PlayerRecord] = {}
        self._names: dict[str, PlayerId] = {}
        self._races: dict[RaceId, RaceRecord] = {}
        self._moves: dict[tuple[RaceId, PlayerId], list[MoveRecord]] = {}
        self._seqs: dict[tuple[RaceId, PlayerId], set[int]] = {}

    async def claim_secret(self, fingerprint: str) -> str:
        return fingerprint  # one node

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create_player(self, player_id: PlayerId, name: str, now_ms: int) -> PlayerRecord:
        if name.casefold() in self._names or player_id in self._players:
            raise NameTakenError(name)
        record = PlayerRecord(player_id=player_id, name=name, created_at_ms=now_ms)
        self._players[player_id] = record
        self._names[name.casefold()] = player_id
        return record

    async def get_player(self, player_id: PlayerId) -> PlayerRecord | None:
        return self._players.get(player_id)

    async def get_player_by_name(self, name: str) -> PlayerRecord | None:
        player_id = self._names.get(name.casefold())
        return None if player_id is None else self._players.get(player_id)

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        if self._races.get(race.race_id) != expected:
            return False
        self._races[race.race_id] = race
        if rating_falls_due(race, expected):
            self._competition()
            self._rating_due[race.race_id] = None
        return True

    async def get_race(self, race_id: RaceId) -> RaceRecord | None:
        return self._races.get(race_id)

    async def list_races(self, statuses: Sequence[RaceStatus]) -> list[RaceRecord]:
        wanted = set(statuses)
        return [race for race in self._races.values() if race.status in wanted]

    async def append_move(self, move: MoveRecord) -> None:
        if move.race_id not in self._races:
            raise UnknownRaceError(move.race_id)
        key = (move.race_id, move.player_id)
        log = self._moves.setdefault(key, [])
        seqs = self._seqs.setdefault(key, set())
        if move.ply != len(log) or move.seq in seqs:
            raise PlyConflictError(f"ply {move.ply} / seq {move.seq} is not the next move")
        log.append(move)
        seqs.add(move.seq)

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        moves: list[MoveRecord] = []
        for (race, _player), log in self._moves.items():
            if race == race_id:
                moves.extend(log)
        return moves
