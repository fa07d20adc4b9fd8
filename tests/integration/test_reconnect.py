"""Reconnect with the token and the last event version; forfeit after the grace period."""

from __future__ import annotations

import pytest

from solrace.server.app import App
from solrace.server.protocol.messages import (
    Board,
    MakeMove,
    MoveAck,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceUpdate,
    Resign,
    Sync,
    Watch,
)
from tests.integration.conftest import ClientFactory, ServerFactory
from tests.integration.helpers import create_race, play, start_race


async def test_reconnect_mid_race_gets_missed_events_and_plays_on(
    server: App, client: ClientFactory
) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    carol = await client("carol")
    await carol.send(Watch(race_id=race_id))
    await carol.expect(RaceSnapshot)  # watching before the moves whose progress it waits for
    await play(alice, race_id, ["deal", "deal"])
    last = max(m.version for m in alice.received if hasattr(m, "version"))
    epoch = next(m.epoch for m in alice.received if isinstance(m, Progress))
    token = alice.welcome.token if alice.welcome else None
    assert token is not None
    await alice.close()
    # Bob sees Alice drop, and keeps playing meanwhile.
    await bob.expect(RaceUpdate, lambda m: not m.race.racers[0].connected)
    await play(bob, race_id, ["deal", "deal", "deal"])
    # Bob's progress batch has gone out (a spectator has it): Alice's new connection gets it
    # only from her resync.
    await carol.expect(
        Progress, lambda m: m.progress.player_id == bob.player_id and m.progress.moves == 3
    )

    again = await client()
    welcome = await again.hello(token=token)
    assert welcome.player_id == alice.player_id and welcome.active_races == [race_id]
    await again.send(Sync(race_id=race_id, epoch=epoch, since_version=last))
    # The missed events (Bob's three quick moves are one progress batch), not a snapshot.
    latest = await again.expect(
        Progress, lambda m: m.progress.player_id == bob.player_id and m.progress.moves == 3
    )
    missed = [m for m in again.received if hasattr(m, "version")]
    assert missed and all(m.version > last for m in missed)
    assert [m.version for m in missed] == sorted({m.version for m in missed})
    assert latest in missed
    assert not [m for m in again.received if isinstance(m, RaceSnapshot)]
    board = await again.expect(Board)
    assert board.ply == 2 and board.player_id == alice.player_id
    # An ack lost in the drop: resending the same seq is answered again, not replayed.
    await again.send(MakeMove(race_id=race_id, seq=2, move="deal"))
    assert (await again.expect(MoveAck)).duplicate
    [ack] = await play(again, race_id, ["deal"], first_seq=3)
    assert ack.ply == 2

    # An unknown epoch (or a too old version) gets a snapshot instead (once that move's
    # progress batch is in the race: a spectator sees it).
    await carol.expect(
        Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 3
    )
    await again.send(Sync(race_id=race_id, epoch="other", since_version=1))
    snapshot = await again.expect(RaceSnapshot)
    assert {p.player_id: p.moves for p in snapshot.progress} == {
        alice.player_id: 3,
        bob.player_id: 3,
    }


@pytest.fixture
async def server(start_server: ServerFactory, request: pytest.FixtureRequest) -> App:
    grace = 0.3 if "forfeit" in request.node.name else 60.0
    return await start_server(grace_s=grace)


async def test_a_racer_away_longer_than_the_grace_period_forfeits(
    server: App, client: ClientFactory
) -> None:
    alice, bob = await client("alice"), await client("bob")
    race_id = await start_race(alice, [bob])
    await play(alice, race_id, ["deal"])
    await alice.close()
    gone = await bob.expect(Progress, lambda m: m.progress.state == "gone")
    assert gone.progress.player_id == alice.player_id
    await play(bob, race_id, ["deal"])
    await bob.send(Resign(race_id=race_id))
    finished = await bob.expect(RaceFinished)
    assert {r.name: r.state for r in finished.results} == {"alice": "gone", "bob": "resigned"}


async def test_a_racer_who_forfeited_or_resigned_is_not_told_it_races_there_when_back(
    server: App, client: ClientFactory
) -> None:
    """`welcome.active_races` lists the races a player still races in: not one it forfeited
    by staying away (gone) nor one it resigned, which go on without it."""
    alice, bob, carol = await client("alice"), await client("bob"), await client("carol")
    race_id = await start_race(alice, [bob, carol])
    tokens = {c.welcome.name: c.welcome.token for c in (alice, bob) if c.welcome}
    await bob.send(Resign(race_id=race_id))
    await carol.expect(Progress, lambda m: m.progress.state == "resigned")
    await alice.close()
    await carol.expect(Progress, lambda m: m.progress.state == "gone")
    await bob.close()
    for name in ("alice", "bob"):
        back = await client()
        welcome = await back.hello(token=tokens[name])
        assert welcome.active_races == [], name
    again = await client()
    welcome = await again.hello(token=carol.welcome.token if carol.welcome else None)
    assert welcome.active_races == [race_id]  # carol races on


async def test_a_sync_with_nothing_missed_is_answered_too(
    server: App, client: ClientFactory
) -> None:
    """A `sync` at the race's latest version used to get nothing back (no event was missed,
    and a racer of an open race has no board): a client could not tell it from a lost
    request. It gets the race's snapshot, for a racer and for a spectator alike."""
    alice = await client("alice")
    race_id = await create_race(alice, seats=3)
    [update] = [m for m in alice.received if isinstance(m, RaceUpdate)]
    await alice.send(Sync(race_id=race_id, epoch=update.epoch, since_version=update.version))
    snapshot = await alice.expect(RaceSnapshot, lambda m: m.race_id == race_id)
    assert (snapshot.epoch, snapshot.version) == (update.epoch, update.version)

    carol = await client()  # a spectator: watched, then resyncs at what the watch sent
    await carol.hello()
    await carol.send(Watch(race_id=race_id))
    seen = await carol.expect(RaceSnapshot, lambda m: m.race_id == race_id)
    await carol.send(Sync(race_id=race_id, epoch=seen.epoch, since_version=seen.version))
    again = await carol.expect(RaceSnapshot, lambda m: m.race_id == race_id)
    assert (again.epoch, again.version) == (seen.epoch, seen.version)
