"""Following a race and reading it back (server/watch_requests.py): a replay is built once and
sent again as it was."""

from __future__ import annotations

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Error, GetReplay, Replay, Resign
from solrace.server.protocol.records import MoveRecord
from solrace.server.store import MemoryStore
from tests.server.sessions import opened, running_hub, start_race_of_two


class CountingMoves(MemoryStore):
    """The memory store, counting the move logs read."""

    reads = 0

    async def get_moves(self, race_id: RaceId) -> list[MoveRecord]:
        self.reads += 1
        return await super().get_moves(race_id)


async def test_a_replay_is_built_once_and_sent_again_as_it_was() -> None:
    store = CountingMoves()
    async with opened(store), running_hub(store) as hub:
        race_id, alice, bob = await start_race_of_two(hub)
        await hub.handle(alice, GetReplay(race_id=race_id))
        refused = alice.sent[-1]
        assert isinstance(refused, Error) and refused.code == "not_finished"  # nothing kept
        for session in (alice, bob):
            await hub.handle(session, Resign(race_id=race_id))
        for session in (alice, bob, alice):
            await hub.handle(session, GetReplay(race_id=race_id))
        replays = [m for s in (alice, bob) for m in s.sent if isinstance(m, Replay)]
        assert len(replays) == 3 and replays[0] == replays[1] == replays[2]
        assert replays[0].replay.race_id == race_id and store.reads == 1
