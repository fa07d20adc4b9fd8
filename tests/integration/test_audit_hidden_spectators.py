"""Spectators against a real node, as a cheater's friend would watch: every board a spectator
gets is as old as the spectator delay says (the first after a `watch`, after a spectator's
`sync`, around a racer's reconnect), no frame names the game number of a running race, and
a change the store has not taken yet (a finish it then refuses) shows to nobody."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from solrace.server.app import App
from solrace.server.protocol.codec import decode_server
from solrace.server.protocol.messages import (
    Board,
    Error,
    GetReplay,
    MakeMove,
    MoveAck,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceFinished,
    RaceSnapshot,
    Replay,
    ReplayModel,
    Resign,
    Sync,
    Watch,
)
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.store import StoreUnavailableError
from tests.integration.conftest import ClientFactory, ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.test_hidden_info import Racer
from tests.integration.wsclient import Client

DELAY_S = 30.0
"""Longer than any of these tests: a board a spectator gets while the race runs shows no move."""


class TimedClient(Client):
    """A client that notes when (wall clock, ms: the server's clock on this machine) each
    frame came."""

    async def _read(self) -> None:
        self.came_at_ms: list[int] = []
        with contextlib.suppress(Exception):
            async for frame in self.connection:
                assert isinstance(frame, bytes)
                self.came_at_ms.append(time.time_ns() // 1_000_000)
                self.frames.append(frame)
                message = decode_server(frame)
                async with self.changed:
                    self.received.append(message)
                    self.inbox.append(message)
                    self.changed.notify_all()
        async with self.changed:
            self.changed.notify_all()


async def timed_spectator(app: App) -> TimedClient:
    spectator = await TimedClient.open(f"ws://127.0.0.1:{app.port}")
    assert isinstance(spectator, TimedClient)
    await spectator.hello()
    return spectator


def check_spectator_frames(spectator: TimedClient, race: ReplayModel, delay_ms: int) -> int:
    """Every board `spectator` got shows no move younger than `delay_ms` when it came (the
    final boards, after the finish, every move), and no frame before `race_finished` holds
    the game number; the number of boards checked."""
    number = race.game_number.encode()
    times = {r.player_id: [m.at_ms for m in r.moves] for r in race.racers}
    finished = False
    boards = 0
    for came_at, frame, message in zip(
        spectator.came_at_ms, spectator.frames, spectator.received, strict=True
    ):
        if isinstance(message, RaceFinished):
            finished = True
        if not finished:
            assert number not in frame, f"the game number came before the end ({message.type})"
        if not isinstance(message, Board):
            continue
        boards += 1
        shown = times[message.player_id][: message.ply]
        if finished:
            assert message.delayed_ms == 0 and message.ply == len(times[message.player_id])
        else:
            assert message.delayed_ms == delay_ms
            assert all(at <= came_at - delay_ms for at in shown), (
                f"a board of ply {message.ply} showed a move {came_at - max(shown)} ms old"
            )
    return boards


async def play_on(racer: Racer, count: int) -> None:
    """`count` more moves of `racer`, each chosen from what it sees (refusals allowed)."""
    for _ in range(count):
        racer.seq += 1
        move = racer.choose()
        await racer.client.send(MakeMove(race_id=racer.race_id, seq=racer.seq, move=move))
        answer = await racer.client.expect(
            MoveAck | MoveRejected,  # type: ignore[arg-type]
            lambda m, s=racer.seq: m.seq == s,
        )
        if isinstance(answer, MoveAck):
            racer.see(answer.piles)


@pytest.fixture
async def server(start_server: ServerFactory) -> App:
    return await start_server(spectator_delay_rated_s=DELAY_S)


async def test_every_spectator_board_of_a_rated_race_is_as_late_as_its_delay(
    server: App, client: ClientFactory
) -> None:
    """Spectators who watch from the start, come late, resync with an old epoch, and watch
    while a racer reconnects: each board shows only moves older than the delay, until the
    final boards."""
    alice, bob = await client("alice"), await client("bob")
    early = await timed_spectator(server)
    race_id = await start_race(alice, [bob], rated=True, game_number=None)
    await early.send(Watch(race_id=race_id))
    racers = [Racer(alice, race_id, "klondike", 1), Racer(bob, race_id, "klondike", 2)]
    for racer in racers:
        [board] = [m for m in racer.client.received if isinstance(m, Board)]
        racer.see(board.board.piles)
    await play_on(racers[0], 8)

    late = await timed_spectator(server)
    await late.send(Watch(race_id=race_id))
    await late.expect(RaceSnapshot)
    await play_on(racers[1], 8)

    # Alice's connection drops; she comes back with her token and syncs.
    assert alice.welcome is not None and alice.welcome.token is not None
    await alice.close()
    again = await client()
    await again.hello(token=alice.welcome.token)
    await again.send(Sync(race_id=race_id))
    resynced = await again.expect(Board, lambda m: m.race_id == race_id)
    assert resynced.player_id == again.player_id and resynced.delayed_ms == 0
    racers[0].client = again
    racers[0].see(resynced.board.piles)
    await play_on(racers[0], 8)

    # A spectator whose link dropped resyncs from an epoch the race no longer has.
    await late.send(Sync(race_id=race_id, epoch="0ldep0ch", since_version=3))
    await late.expect(RaceSnapshot)
    await play_on(racers[1], 4)
    for each in (early, late):
        await each.send(Ping(nonce=1))
        await each.expect(Pong)

    for racer in racers:
        await racer.client.send(Resign(race_id=race_id))
    for each in (early, late):
        await each.expect(RaceFinished)
        for player in (again, bob):
            await each.expect(
                Board, lambda m, p=player: m.player_id == p.player_id and m.delayed_ms == 0
            )
    await bob.send(GetReplay(race_id=race_id))
    race = (await bob.expect(Replay)).replay
    assert sum(len(r.moves) for r in race.racers) >= 10
    assert check_spectator_frames(early, race, int(DELAY_S * 1000)) >= 4
    assert check_spectator_frames(late, race, int(DELAY_S * 1000)) >= 4
    for each in (early, late):
        await each.close()


async def test_a_finish_the_store_refuses_shows_nobody_the_deal_or_a_live_board(
    server: App, client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last racer resigns and the store refuses the finish: the race runs on. A `watch`,
    or a racer's `sync`, that came while the finish was being stored was answered from the
    race as changed in memory, not as stored: its snapshot held the game number (a racer out
    of the race could tell the one racing on), and the spectator's boards every move so far
    (the spectators' copy, moved to the end, then went to every spectator as delayed)."""
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob], rated=True, game_number=None)
    await play(alice, race_id, ["deal", "deal", "deal"])
    await alice.send(Resign(race_id=race_id))
    await bob.expect(Progress, lambda m: m.progress.state == "resigned")
    saving, refuse = asyncio.Event(), asyncio.Event()
    save = server.store.save_race_if

    async def refuse_the_finish(race: RaceRecord, expected: RaceRecord | None) -> bool:
        if race.status is RaceStatus.FINISHED and not refuse.is_set():
            saving.set()
            await refuse.wait()
            raise StoreUnavailableError("the store is away (injected)")
        return await save(race, expected)

    monkeypatch.setattr(server.store, "save_race_if", refuse_the_finish)
    await bob.send(Resign(race_id=race_id))
    async with asyncio.timeout(10):
        await saving.wait()
    spectator = await timed_spectator(server)
    await spectator.send(Watch(race_id=race_id))
    await alice.send(Sync(race_id=race_id))
    # A correct node answers them once the store has answered: at most a second is waited
    # for the snapshots an answer from memory sends at once.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.0):
            await spectator.expect(RaceSnapshot)
            await alice.expect(RaceSnapshot)
    refuse.set()
    assert (await bob.expect(Error, lambda m: m.request == "resign")).code == "unavailable"

    await play(bob, race_id, ["deal"], first_seq=1)  # the race runs on
    for each in (spectator, alice):
        await each.send(Ping(nonce=2))
        await each.expect(Pong)
    await spectator.expect(Board, lambda m: m.player_id == bob.player_id)
    for each in (spectator, alice):
        snapshots = [m for m in each.received if isinstance(m, RaceSnapshot)]
        assert snapshots and all(s.game_number is None and s.salt is None for s in snapshots)
        assert all(s.race.status == "running" for s in snapshots)
    boards = [m for m in spectator.received if isinstance(m, Board)]
    assert boards and all((b.ply, b.delayed_ms) == (0, int(DELAY_S * 1000)) for b in boards)

    await bob.send(Resign(race_id=race_id))
    await spectator.expect(RaceFinished)
    await bob.send(GetReplay(race_id=race_id))
    race = (await bob.expect(Replay)).replay
    check_spectator_frames(spectator, race, int(DELAY_S * 1000))
    await spectator.close()
