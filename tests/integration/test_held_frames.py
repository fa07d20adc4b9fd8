"""A racer's progress sent to another connection waits (`progress_hold_s`) for the next frame
written to that connection and goes out in the same write, before it; or alone once its hold
is over; or before the close, when the server closes the connection. Real sockets, the
node in-process so that the session's writes can be watched. Where a test needs the frame
still held when it acts, the hold is ten minutes (`LONG_HOLD`, set past the settings' bound of
`MAX_PROGRESS_HOLD_S`, which is for operators): no timer ends it within the test, however slow
the machine, and the test acts once the frame is held."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import MoveAck, Progress
from solrace.server.websocket_protocol import server_frame
from solrace.server.websocket_session import WebSocketSession
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.wsclient import Client
from tests.waiting import eventually

#: A hold no timer ends within a test (past `MAX_PROGRESS_HOLD_S`: see the module's note).
LONG_HOLD = {"progress_hold_s": 600.0}


def session_of(app: App, client: Client) -> WebSocketSession:
    (session,) = [s for s in app.transport.sessions if s.player_id == client.player_id]
    return session


def watch_writes(session: WebSocketSession) -> list[bytes]:
    """What the session's socket is given, one item per write (the real write still runs)."""
    writes: list[bytes] = []
    transport = session.transport
    assert transport is not None
    write = transport.write

    def recorded(data: bytes | bytearray | memoryview) -> None:
        writes.append(bytes(data))
        write(data)

    transport.write = recorded  # type: ignore[method-assign]
    return writes


def alices_progress(bob: Client, alice: Client) -> list[Progress]:
    return [
        m
        for m in bob.received
        if isinstance(m, Progress)
        and m.progress.player_id == alice.player_id
        and m.progress.moves > 0
    ]


@asynccontextmanager
async def racing(
    start_server: ServerFactory, long_hold: bool = False, **settings: float
) -> AsyncIterator[tuple[App, Client, Client, RaceId]]:
    """A node with `settings` (and `LONG_HOLD` if `long_hold`), and Alice and Bob racing on
    it."""
    app = await start_server(unchecked=LONG_HOLD if long_hold else None, **settings)
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = [await Client.open(url) for _ in range(2)]
    try:
        await alice.hello("alice")
        await bob.hello("bob")
        yield app, alice, bob, await start_race(alice, [bob])
    finally:
        await alice.close()
        await bob.close()


@dataclass
class Holding:
    """A node where Alice's progress is held for Bob (`bob_holding`)."""

    app: App
    alice: Client
    bob: Client
    #: Bob's session on the node.
    bobs: WebSocketSession


@asynccontextmanager
async def bob_holding(start_server: ServerFactory) -> AsyncIterator[Holding]:
    """Alice has moved once and her progress is held for Bob (`LONG_HOLD`)."""
    async with racing(start_server, progress_interval_s=0.01, long_hold=True) as (
        app,
        alice,
        bob,
        race_id,
    ):
        bobs = session_of(app, bob)
        await play(alice, race_id, ["deal"])
        await eventually(lambda: bool(bobs.held), what="Alice's progress held for Bob")
        yield Holding(app, alice, bob, bobs)


async def test_held_progress_goes_out_in_one_write_with_the_next_frame(
    start_server: ServerFactory,
) -> None:
    # Folded at once, held ten minutes: Bob's own move, right after, sends it.
    async with racing(start_server, progress_interval_s=0.01, long_hold=True) as (
        app,
        alice,
        bob,
        race_id,
    ):
        bobs = session_of(app, bob)
        writes = watch_writes(bobs)
        await play(alice, race_id, ["deal"] * 2)
        await eventually(lambda: bool(bobs.held), what="Alice's progress held for Bob")
        assert writes == [] and alices_progress(bob, alice) == []

        await play(bob, race_id, ["deal"])
        progress = alices_progress(bob, alice)
        assert [p.progress.moves for p in progress] == [2]
        # Before Bob's ack, in the same write as it.
        received = [m for m in bob.received if isinstance(m, (Progress, MoveAck))]
        assert received[-2:] == [progress[0], bob.received[-1]]
        assert isinstance(bob.received[-1], MoveAck)
        assert writes == [server_frame(encode(progress[0])) + server_frame(bob.frames[-1])]
        assert bobs.held == []


async def test_held_progress_goes_out_alone_when_its_hold_is_over(
    start_server: ServerFactory,
) -> None:
    async with racing(start_server, progress_interval_s=0.01, progress_hold_s=0.05) as (
        app,
        alice,
        bob,
        race_id,
    ):
        writes = watch_writes(session_of(app, bob))
        await play(alice, race_id, ["deal"] * 3)
        # Bob sends nothing: the hold's timer writes it.
        latest = await bob.expect(
            Progress, lambda m: m.progress.player_id == alice.player_id and m.progress.moves == 3
        )
        assert server_frame(encode(latest)) in writes


async def test_a_closing_server_writes_held_progress_before_its_close(
    start_server: ServerFactory,
) -> None:
    async with bob_holding(start_server) as held:
        assert held.bobs.held  # not yet written by the hold's timer
        writes = watch_writes(held.bobs)
        await held.app.transport.close_connections()
        assert await held.bob.closed() == 1012
        progress = alices_progress(held.bob, held.alice)
        assert [p.progress.moves for p in progress] == [1]
        # One write: the progress, then the close frame (opcode 0x8, unmasked).
        frame = server_frame(encode(progress[0]))
        assert len(writes) == 1 and writes[0].startswith(frame)
        assert writes[0][len(frame)] == 0x88


async def test_a_close_the_protocol_makes_itself_writes_held_progress_before_it(
    start_server: ServerFactory,
) -> None:
    # A frame past the size cap: websockets' protocol fails the connection itself (1009), its
    # close written by `flush`, not by `close`; the progress held for Bob still goes first, as
    # it would have had it been written at once.
    async with bob_holding(start_server) as held:
        assert held.bobs.held
        await held.bob.send_raw(b"\x00" * (held.app.settings.max_frame_bytes + 1))
        assert await held.bob.closed() == 1009
        assert [p.progress.moves for p in alices_progress(held.bob, held.alice)] == [1]


async def test_a_pong_takes_held_progress_along_before_it(start_server: ServerFactory) -> None:
    async with bob_holding(start_server) as held:
        writes = watch_writes(held.bobs)
        pong = await held.bob.connection.ping(b"ping")
        async with asyncio.timeout(10):
            await pong
        assert held.bobs.held == []  # written with the pong, before it
        progress = await held.bob.expect(
            Progress,
            lambda m: m.progress.player_id == held.alice.player_id and m.progress.moves == 1,
        )
        # One write: the progress, then the pong (opcode 0xA, 4 bytes, unmasked).
        assert writes == [server_frame(encode(progress)) + b"\x8a\x04ping"]


async def test_a_connection_gone_while_holding_keeps_nothing_held(
    start_server: ServerFactory,
) -> None:
    async with bob_holding(start_server) as held:
        assert held.bobs.held
        await held.bob.close()
        await asyncio.wait_for(held.bobs.lost, 10)
        # Nothing can be written to it any more: its frames are not kept for the hold's end,
        # nor is it kept queued for it (the hold is ten minutes: this is long before).
        assert held.bobs.held == [] and held.bobs.held_bytes == 0
        queue = held.app.transport.held
        assert queue is not None
        await eventually(lambda: held.bobs not in queue, within=0.5, what="Bob unqueued")


async def test_a_keepalive_timeout_writes_held_progress_before_its_close(
    start_server: ServerFactory,
) -> None:
    # A client that stops reading answers no ping: the server fails the connection itself
    # (1011), its close written by `flush` as the 1009 above; the progress held for Bob since
    # the unanswered ping went out goes first, in the same write, and the node serves on.
    async with racing(
        start_server,
        progress_interval_s=0.01,
        long_hold=True,
        ping_interval_s=0.2,
        ping_timeout_s=0.6,  # the close comes within 0.65 s of the ping, long before the hold's end
    ) as (app, alice, bob, race_id):
        bobs = session_of(app, bob)
        bob.connection.transport.pause_reading()  # our pings now go unanswered
        paused_at = time.monotonic()
        await eventually(
            lambda: bobs.ping_outstanding and bobs.last_ping_at > paused_at,
            what="a ping Bob does not answer",
        )
        writes = watch_writes(bobs)
        await play(alice, race_id, ["deal"])
        await eventually(lambda: bool(bobs.held), what="Alice's progress held for Bob")
        await eventually(lambda: bobs.closing, what="the keepalive's close")
        bob.connection.transport.resume_reading()
        assert await bob.closed() == CloseCode.INTERNAL_ERROR
        assert bob.connection.close_reason == "keepalive ping timeout"
        progress = alices_progress(bob, alice)
        assert [p.progress.moves for p in progress] == [1]
        # One write: the progress, then the close frame (opcode 0x8, unmasked).
        frame = server_frame(encode(progress[0]))
        assert len(writes) == 1 and writes[0].startswith(frame)
        assert writes[0][len(frame)] == 0x88
        await eventually(lambda: bobs not in app.transport.sessions, what="Bob's session gone")

        # The node serves the others: Alice plays on, a newcomer says hello.
        await play(alice, race_id, ["deal"], first_seq=2)
        carol = await Client.open(f"ws://127.0.0.1:{app.port}")
        try:
            await carol.hello("carol")
        finally:
            await carol.close()
