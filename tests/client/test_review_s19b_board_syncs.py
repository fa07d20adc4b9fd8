"""A spectator whose server keeps spoiling one racer's boards while the other racer's are
fine syncs the race `MAX_BOARD_SYNCS` times, no more: the other racer's good board in each
sync's answer does not start the count afresh."""

from __future__ import annotations

from solrace.client.bots import Bot
from solrace.client.session import MAX_BOARD_SYNCS
from solrace.client.strategy import make_strategy
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import Board
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually

from .conftest import open_session
from .spoiling import Frame, Relay, junk_board


async def test_a_spectator_syncs_a_few_times_only_for_one_racer_s_bad_boards(
    server_url: str,
) -> None:
    ann = Bot(server_url, "ann", make_strategy("greedy", seed=1), delay_s=30)
    bob = Bot(server_url, "bob", make_strategy("greedy", seed=2), delay_s=30)
    await ann.connect()
    await bob.connect()
    spoiled_player = PlayerId(ann.state.player_id or "")

    def ann_s_boards(frame: Frame) -> Frame | None:
        return junk_board(frame) if frame.get("player_id") == spoiled_player else None

    relay = Relay(server_url, ann_s_boards, times=None)
    async with relay.running() as url:
        watcher, pump = await open_session(url, None)
        heard: list[object] = []
        watcher.listeners.append(heard.append)
        try:
            race_id = await ann.create("klondike", 2, 120)
            await watcher.watch(race_id)
            await bob.join(race_id)

            def ann_boards() -> int:
                return sum(
                    1
                    for m in heard
                    if isinstance(m, Board)
                    and m.race_id == race_id
                    and m.player_id == spoiled_player
                )

            # The first of ann's boards, then the answers to the syncs it is worth.
            await eventually(lambda: ann_boards() >= MAX_BOARD_SYNCS + 1, what="ann's boards")
            await watcher.list_races()  # answered after any sync sent meanwhile
            assert relay.sent["sync"] == MAX_BOARD_SYNCS
            race = watcher.state.race(race_id)
            assert spoiled_player not in race.boards  # none of ann's boards was usable
            assert PlayerId(bob.state.player_id or "") in race.boards
        finally:
            await cancel_and_wait([pump])
            await watcher.conn.close()
            await ann.close()
            await bob.close()
