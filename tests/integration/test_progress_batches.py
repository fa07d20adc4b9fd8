"""Progress batches over real sockets: a racer's moves are folded into the race once per
`progress_interval_s` (one event with the latest figures), or at once ahead of any other
change, so the others see them in version order and a finish ranks on current figures; a
mover's own progress rides in its acks."""

from __future__ import annotations

from typing import Any

from solrace.server.protocol.messages import (
    Progress,
    RaceEvent,
    RaceFinished,
    RaceSnapshot,
    Resign,
    Watch,
)
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.solver import scoring_line
from tests.integration.wsclient import Client

EVENT_TYPES = ("race_update", "race_started", "progress", "race_finished")


def versions(client: Client) -> list[int]:
    return [m.version for m in client.received if m.type in EVENT_TYPES]  # type: ignore[union-attr]


def progress_of(client: Client, player_id: str | None) -> list[Any]:
    return [
        m.progress
        for m in client.received
        if isinstance(m, Progress) and m.progress.player_id == player_id
    ]


async def test_a_state_change_sends_the_held_progress_first(start_server: ServerFactory) -> None:
    # A batch interval far longer than the test: only the resign can release the batch.
    app = await start_server(progress_interval_s=600)
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob, carol = [await Client.open(url) for _ in range(3)]
    try:
        for each, name in ((alice, "alice"), (bob, "bob"), (carol, "carol")):
            await each.hello(name)
        race_id = await start_race(alice, [bob])
        await carol.send(Watch(race_id=race_id))
        # Watching before the moves: a watch handled after the batch went out would see
        # none of its progress (requests on two connections are not ordered).
        await carol.expect(RaceSnapshot)
        acks = await play(alice, race_id, ["deal"] * 5)
        assert [a.ply for a in acks] == [0, 1, 2, 3, 4]
        await alice.send(Resign(race_id=race_id))

        for watcher in (bob, carol):
            resigned = await watcher.expect(
                Progress,
                lambda m: (
                    m.progress.player_id == alice.player_id and m.progress.state == "resigned"
                ),
            )
            mine = progress_of(watcher, alice.player_id)
            # Five moves, one batch: the latest progress only, right before the resign.
            playing = [p for p in mine if p.state == "playing" and p.moves > 0]
            assert [p.moves for p in playing] == [5]
            assert mine[-1] == resigned.progress and mine[-2] == playing[0]
            assert versions(watcher) == sorted(set(versions(watcher)))  # rising, no repeat
        # The mover was sent no progress of its own moves (its acks carried it) but its
        # state change, like everyone.
        own = progress_of(alice, alice.player_id)
        assert [p.moves for p in own if p.state == "playing" and p.moves > 0] == []
        assert own[-1].state == "resigned"
        assert acks[-1].on_foundations == own[-1].on_foundations
    finally:
        for each in (alice, bob, carol):
            await each.close()


async def test_held_progress_goes_out_after_the_interval(start_server: ServerFactory) -> None:
    app = await start_server(progress_interval_s=0.05)
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = [await Client.open(url) for _ in range(2)]
    try:
        await alice.hello("alice")
        await bob.hello("bob")
        race_id = await start_race(alice, [bob])
        await play(alice, race_id, ["deal"] * 3)
        # No other event follows: the timer sends the batch.
        latest = await bob.expect(
            Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 3
        )
        assert latest.progress.state == "playing"
        events: list[RaceEvent] = [m for m in bob.received if isinstance(m, Progress)]
        assert [e.version for e in events] == sorted({e.version for e in events})
    finally:
        await alice.close()
        await bob.close()


async def test_a_time_out_ranks_on_the_figures_of_moves_not_yet_batched(
    start_server: ServerFactory,
) -> None:
    # Only the time-out can fold Alice's moves in: they must count in the ranking.
    app = await start_server(progress_interval_s=600)
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = [await Client.open(url) for _ in range(2)]
    try:
        await alice.hello("alice")
        await bob.hello("bob")
        race_id = await start_race(alice, [bob], time_limit_s=2)
        acks = await play(alice, race_id, scoring_line("klondike", "1"))
        assert acks[-1].on_foundations == 1
        finished = await bob.expect(RaceFinished, within=30)
        by_player = {r.player_id: r for r in finished.results}
        assert by_player[alice.player_id].on_foundations == 1
        assert by_player[alice.player_id].rank == 1 and by_player[bob.player_id].rank == 2
    finally:
        await alice.close()
        await bob.close()
