"""What a `Connection` follows across a lost link (real server on loopback): watched
tournaments are watched again, left races are not synced again, and a request whose answer
timed out while the link was down is not made once it is back."""

from __future__ import annotations

import asyncio

import pytest

from solrace.client.connection import Connection
from solrace.client.link_status import Incoming, LinkStatus
from solrace.client.session import RequestError, Session, tournament_view_of
from solrace.server.app import App
from solrace.server.protocol.messages import (
    CreateRace,
    Error,
    LeaveRace,
    Ping,
    Pong,
    RaceUpdate,
)
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    TournamentView,
    WatchTournament,
)
from tests.server.sessions import RecordingSession
from tests.waiting import eventually

from .conftest import Opened, url_of
from .test_tournament_screen import create


async def drop_link(session: Session) -> None:
    """The link drops (as far as this client can tell); returns once it is reconnecting."""
    ws = session.conn._ws
    assert ws is not None
    await ws.close(code=1011)
    await eventually(lambda: session.conn.status is not LinkStatus.CONNECTED, what="link down")


async def test_a_watched_tournament_is_watched_again_after_a_reconnect(opened: Opened) -> None:
    """`tournament watch` went silent for good after a lost link: the server forgets what a
    closed session watched, and nothing watched it again."""
    admin = await opened.open("director")
    tid = await create(admin, "swiss")
    watcher = await opened.open(None)
    views: list[TournamentView] = []
    watcher.listeners.append(lambda m: views.append(m) if isinstance(m, TournamentView) else None)
    await watcher.request(WatchTournament(tournament_id=tid), tournament_view_of(tid))
    await drop_link(watcher)
    await eventually(lambda: watcher.conn.status is LinkStatus.CONNECTED, what="reconnected")
    ann = await opened.open("ann")
    await ann.request(JoinTournament(tournament_id=tid), tournament_view_of(tid))
    await eventually(
        lambda: any(len(v.tournament.players) == 1 for v in views), what="ann's join pushed"
    )


async def test_a_request_that_timed_out_with_the_link_down_is_not_made_later(
    tournament_server: App,
) -> None:
    """A create that timed out while the link was down was sent once it was back: the user
    was told it failed, and the race was made all the same."""
    conn = Connection(url_of(tournament_server), name="alice", backoff_s=(4.0, 4.0))
    await conn.connect()
    conn.recv_nowait()
    alice = Session(conn)
    pump = asyncio.create_task(alice.pump())
    try:
        await drop_link(alice)  # the next try comes 2-4 s later
        create_race = CreateRace(game="klondike", seats=2, time_limit_s=60)
        with pytest.raises(TimeoutError):
            await alice.request(create_race, lambda m: isinstance(m, RaceUpdate), timeout_s=0.2)
        await eventually(lambda: conn.status is LinkStatus.CONNECTED, within=15, what="back")
        assert await alice.list_races() == []
    finally:
        pump.cancel()
        await conn.close()


async def test_a_race_left_is_not_followed_again_by_its_last_events(opened: Opened) -> None:
    """The event that confirms a leave made the race followed again, so a reconnect synced
    it, and the server made the player its spectator."""
    alice, bob = await opened.open("alice"), await opened.open("bob")
    race_id = await alice.create_race("klondike", seats=3)
    await bob.join_race(race_id)
    await bob.leave_race(race_id)
    assert race_id not in bob.conn.followed
    await drop_link(bob)
    await eventually(lambda: bob.conn.status is LinkStatus.CONNECTED, what="reconnected")
    heard: list[Incoming] = []
    bob.listeners.append(lambda m: heard.append(m) if getattr(m, "race_id", None) else None)
    carol = await opened.open("carol")
    await carol.join_race(race_id)
    # Bob's answer comes after anything the server sent him about carol's join.
    await bob.request(Ping(nonce=7), lambda m: isinstance(m, Pong))
    assert not [m for m in heard if getattr(m, "race_id", None) == race_id], heard


async def test_a_leave_confirmed_after_a_reconnect_stops_the_watch_its_sync_made(
    opened: Opened, tournament_server: App
) -> None:
    """A leave the server took whose answer was lost with the link: the reconnect's `sync`
    of the race, from someone no longer racing, is answered by watching it. The client
    took what came as the leave's confirmation and stayed the race's spectator on the
    server until it closed, sent every event of the race."""
    alice, bob = await opened.open("alice"), await opened.open("bob")
    race_id = await alice.create_race("klondike", seats=3)
    await bob.join_race(race_id)
    # Bob's leave goes through on the server, its answer lost (as with the link dropping
    # just after): here taken by the hub from another session of his.
    bob.conn._leaving.add(race_id)
    assert bob.conn.welcome is not None
    elsewhere = RecordingSession(10**9)
    elsewhere.said_hello, elsewhere.name = True, "bob"
    elsewhere.player_id = bob.conn.welcome.player_id
    await tournament_server.hub.handle(elsewhere, LeaveRace(race_id=race_id))
    assert [type(m) for m in elsewhere.sent] == [RaceUpdate], elsewhere.sent
    await drop_link(bob)
    await eventually(lambda: race_id in bob.conn._left, what="the leave confirmed")
    await bob.request(Ping(nonce=8), lambda m: isinstance(m, Pong))  # after its unwatch
    heard: list[Incoming] = []
    bob.listeners.append(lambda m: heard.append(m) if getattr(m, "race_id", None) else None)
    carol = await opened.open("carol")
    await carol.join_race(race_id)
    await bob.request(Ping(nonce=9), lambda m: isinstance(m, Pong))
    assert not heard, heard


async def test_a_leave_sent_after_a_reconnect_s_sync_is_not_followed_by_an_unwatch(
    opened: Opened,
) -> None:
    """A leave made while the link was down goes after the reconnect's sync, which a racer
    sends: no watch is made, and the race (its creator alone) is gone once left. An unwatch
    after it was refused (`unknown_race`), an error nobody waited for."""
    alice = await opened.open("alice")
    race_id = await alice.create_race("klondike", seats=2)
    heard: list[Incoming] = []
    alice.listeners.append(lambda m: heard.append(m) if isinstance(m, Error) else None)
    alice.conn.backoff_s = (2.0, 2.0)  # back 1-2 s later: the leave is made meanwhile
    await drop_link(alice)
    assert alice.conn._ws is None  # down: the leave waits in the outbox
    await alice.conn.send(LeaveRace(race_id=race_id))
    await eventually(lambda: race_id in alice.conn._left, what="the leave confirmed")
    await alice.request(Ping(nonce=10), lambda m: isinstance(m, Pong))
    assert not heard, heard


async def test_a_leave_the_server_refuses_keeps_the_race_followed(opened: Opened) -> None:
    """A leave counts once the server took the player out: one refused (the race under way)
    left the racer not following the race, so a reconnect did not resync it."""
    alice, bob = await opened.open("alice"), await opened.open("bob")
    race_id = await alice.create_race("klondike", seats=3)
    await bob.join_race(race_id)
    await alice.start_race(race_id)
    await eventually(lambda: bob.state.my_board(race_id) is not None, what="bob's deal")
    with pytest.raises(RequestError, match="wrong_status"):
        await bob.leave_race(race_id)
    assert race_id in bob.conn.followed
    assert race_id not in bob.conn._leaving  # refused: no leave left to count later


async def test_a_refused_tournament_watch_is_not_asked_again(opened: Opened) -> None:
    watcher = await opened.open(None)
    with pytest.raises(RequestError):
        await watcher.request(WatchTournament(tournament_id="tnope"), tournament_view_of("tnope"))
    assert "tnope" not in watcher.conn.watched_tournaments
    assert watcher.conn._watch_asked == []  # refused: no watch left that a view could count
