"""Race changes on several nodes (server/race_sync.py): a progress batch whose store write
fails is not lost; it is folded in with the next batch."""

from __future__ import annotations

from pydantic import BaseModel

from solrace.server.broker import MemoryBroker
from solrace.server.hub import Hub
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Hello,
    JoinRace,
    MakeMove,
    Progress,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import StoreError
from solrace.server.store.memory import MemoryStore


class Recorder(Session):
    def __init__(self, session_id: int) -> None:
        super().__init__(session_id)
        self.sent: list[BaseModel] = []

    def send(self, message: BaseModel) -> None:
        self.sent.append(message)

    def close(self, code: CloseCode, reason: str) -> None:
        self.closed = True


class FailingSaves(MemoryStore):
    """The memory store, with race writes that fail while `failing` is set."""

    failing = False

    async def save_race_if(self, race: RaceRecord, expected: RaceRecord | None) -> bool:
        if self.failing:
            raise StoreError("the store is away")
        return await super().save_race_if(race, expected)


async def test_a_batch_not_stored_goes_out_with_the_next_one() -> None:
    store = FailingSaves()
    await store.open()
    settings = Settings(store="memory:", countdown_s=0, progress_interval_s=600)
    hub = Hub(store, settings, Metrics(), b"x" * 32, broker=MemoryBroker())
    alice, bob = Recorder(1), Recorder(2)
    await hub.handle(alice, Hello(protocol=PROTOCOL_VERSION, name="alice"))
    await hub.handle(bob, Hello(protocol=PROTOCOL_VERSION, name="bob"))
    await hub.handle(
        alice, CreateRace(game="klondike", seats=2, time_limit_s=600, game_number="1002")
    )
    (race_id,) = hub.races
    await hub.handle(bob, JoinRace(race_id=race_id))
    await hub.tick()
    runtime = hub.races[race_id]
    assert runtime.boards, "the race did not start"
    for seq in range(3):
        await hub.handle(alice, MakeMove(race_id=race_id, seq=seq, move="deal"))
    player = alice.player_id or ""

    store.failing = True
    await hub._fold(runtime)  # logged: progress not stored
    assert runtime.race.racers[player].moves == 0
    assert runtime.pending[player].moves == 3 and len(runtime.pending_moves) == 3
    assert runtime.fold_due is not None, "the next fold is due"

    store.failing = False
    await hub.handle(alice, MakeMove(race_id=race_id, seq=3, move="deal"))
    await hub._fold(runtime)
    assert runtime.race.racers[player].moves == 4 and not runtime.pending
    seen = [m.progress.moves for m in bob.sent if isinstance(m, Progress)]
    assert seen[-1] == 4
    await hub.stop()
    await store.close()
