"""Clients that do not read, over real sockets: the server stops reading them too, counts what
it buffers for them in bytes, charges their pings to the rate budget, and closes them with
the documented code; a flood's messages read within the budget are still handled."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    MoveAck,
    Ping,
    Pong,
    Progress,
    RaceList,
    RaceUpdate,
    Resign,
    ServerMessage,
    Watch,
    Welcome,
)
from solrace.server.websocket_session import WebSocketSession
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import create_race, start_race
from tests.integration.wsclient import Client
from tests.waiting import eventually

WAIT_S = 10.0

#: The most a test pushes at a server that should have stopped reading it.
FLOOD_LIMIT = 32 * 1024 * 1024


class RawClient:
    """A WebSocket client on a plain socket (websockets' sans-I/O protocol): the test decides
    when it writes and whether it reads, down to the byte."""

    def __init__(self, sock: socket.socket, port: int) -> None:
        self.sock = sock
        self.protocol = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/"), max_size=None)
        self.loop = asyncio.get_running_loop()
        self.events: list[Frame] = []

    @classmethod
    async def open(
        cls, port: int, receive_buffer: int = 4096, send_buffer: int | None = None
    ) -> RawClient:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A small receive buffer (before connecting, so the window is small from the start).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        if send_buffer is not None:  # else the kernel's, which grows to megabytes
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        client = cls(sock, port)
        client.protocol.send_request(client.protocol.connect())
        await client.flush()
        async with asyncio.timeout(WAIT_S):
            while not any(isinstance(e, Response) for e in await client.receive() or []):
                pass
        return client

    def frames_of(self, message: BaseModel) -> bytes:
        self.protocol.send_binary(encode(message))
        return self.pending()

    def pings(self, count: int) -> bytes:
        for n in range(count):
            self.protocol.send_ping(n.to_bytes(4, "big") * 31)  # 124 bytes: a control frame
        return self.pending()

    def pending(self) -> bytes:
        return b"".join(self.protocol.data_to_send())

    async def flush(self) -> None:
        await self.loop.sock_sendall(self.sock, self.pending())

    async def receive(self) -> list[object] | None:
        """One read's worth of events (maybe none: a part of a frame); None at the end of
        the stream."""
        data = await self.loop.sock_recv(self.sock, 65536)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        events: list[object] = list(self.protocol.events_received())
        self.events += [e for e in events if isinstance(e, Frame)]
        # Answer the server's keepalive pings (and its close).
        with contextlib.suppress(OSError):
            await self.flush()
        return events if data else None

    async def read_to_close(self) -> int | None:
        """Read everything until the server closes; its close code. Then close the socket
        (the server waits for the client to close it)."""
        async with asyncio.timeout(WAIT_S):
            with contextlib.suppress(ConnectionError):
                while await self.receive() is not None:
                    pass
        self.sock.close()
        close = self.protocol.close_rcvd
        return None if close is None else int(close.code)

    def messages(self) -> list[ServerMessage]:
        return [decode_server(bytes(e.data)) for e in self.events if e.opcode is Opcode.BINARY]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
async def raw_clients() -> AsyncIterator[list[RawClient]]:
    clients: list[RawClient] = []
    yield clients
    for each in clients:
        each.close()


def session_of(app: App, known: set[WebSocketSession]) -> WebSocketSession:
    [session] = app.transport.sessions - known
    return session


async def test_a_ping_flood_spends_the_rate_budget_and_is_closed_1008(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """Pings are answered with a pong each, so they cost a credit too; those past the
    budget are not answered."""
    app = await start_server(rate_capacity=50.0, rate_refill_per_s=0.001)
    flooder = await RawClient.open(app.port)
    raw_clients.append(flooder)
    await eventually(lambda: len(app.transport.sessions) == 1, within=WAIT_S)
    [session] = app.transport.sessions
    await flooder.loop.sock_sendall(flooder.sock, flooder.pings(200))
    await eventually(lambda: session.closing, within=WAIT_S, what="the flooder's close")
    assert await flooder.read_to_close() == CloseCode.POLICY_VIOLATION
    pongs = [e for e in flooder.events if e.opcode is Opcode.PONG]
    assert [bytes(p.data) for p in pongs] == [n.to_bytes(4, "big") * 31 for n in range(50)]
    assert app.metrics.rate_limit_closes._value.get() == 1
    await eventually(lambda: not app.transport.connections, within=WAIT_S)


async def test_pings_past_the_budget_in_the_same_read_get_no_pong(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """The websockets protocol queues a pong for every ping it parses, before the session
    charges them: 5,000 empty pings in one write got 5,000 pongs, then the 1008 (40,000 got
    a 64 KiB read's worth, 10,922). Now only the pings within the budget are answered."""
    app = await start_server(rate_capacity=100.0, rate_refill_per_s=0.001, ping_interval_s=None)
    flooder = await RawClient.open(app.port)
    raw_clients.append(flooder)
    for n in range(5000):
        flooder.protocol.send_ping(n.to_bytes(2, "big"))
    await flooder.flush()
    assert await flooder.read_to_close() == CloseCode.POLICY_VIOLATION
    pongs = [bytes(e.data) for e in flooder.events if e.opcode is Opcode.PONG]
    assert pongs == [n.to_bytes(2, "big") for n in range(100)]
    assert [e.opcode for e in flooder.events] == [Opcode.PONG] * 100 + [Opcode.CLOSE]


async def test_a_client_that_pings_and_never_reads_is_not_read_either(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """While its socket pushes back the server stops reading it: the pongs it owes cannot
    pile up in memory. Once the client reads again, it is served again."""
    app = await start_server(
        rate_capacity=1e9, rate_refill_per_s=1e9, send_buffer_bytes=4096, ping_interval_s=None
    )
    # A small send buffer: with the kernel's (~4 MB here) the flood left ~30,000 pings queued,
    # and answering them all once the client reads again took 2 s of CPU, 6 s on a loaded
    # machine and past the 10 s wait on a busier one. A few KB still fill up the same way.
    client = await RawClient.open(app.port, send_buffer=4096)
    raw_clients.append(client)
    await eventually(lambda: len(app.transport.sessions) == 1, within=WAIT_S)
    [session] = app.transport.sessions
    assert session.transport is not None
    chunk = client.pings(400)  # 52 KB
    unsent = b""
    sent = 0
    while not (session.writing_paused and session.reading_paused):
        assert sent < FLOOD_LIMIT, "the server kept reading a client that does not read"
        unsent = unsent or chunk
        with contextlib.suppress(BlockingIOError):
            written = client.sock.send(unsent)
            unsent, sent = unsent[written:], sent + written
        await asyncio.sleep(0)  # the server's turn
    buffered = session.transport.get_write_buffer_size()
    # The high-water mark, plus the pongs of the pings of the read that crossed it.
    assert buffered < 64 * 1024 + 256 * 1024 + 1024
    # More pings are not read (the kernel's buffers fill up, then take nothing more), so
    # nothing more is buffered for the client.
    for _ in range(200):
        unsent = unsent or chunk
        with contextlib.suppress(BlockingIOError):
            written = client.sock.send(unsent)
            unsent, sent = unsent[written:], sent + written
        await asyncio.sleep(0)
    assert session.transport.get_write_buffer_size() <= buffered
    assert session.reading_paused and not session.closing

    # The client reads again: the server writes, reads again, and answers.
    client.protocol.send_binary(encode(Ping(nonce=7)))
    rest = unsent + client.pending()
    sending = asyncio.create_task(client.loop.sock_sendall(client.sock, rest))
    async with asyncio.timeout(WAIT_S):
        while not any(isinstance(m, Pong) and m.nonce == 7 for m in client.messages()):
            assert await client.receive() is not None, "the server closed the connection"
        await sending
    assert not session.reading_paused and not session.closing


async def race_list_follower(app: App, raw_clients: list[RawClient]) -> RawClient:
    follower = await RawClient.open(app.port)
    raw_clients.append(follower)
    await follower.loop.sock_sendall(
        follower.sock,
        follower.frames_of(Hello(protocol=PROTOCOL_VERSION))
        + follower.frames_of(ListRaces(follow=True)),
    )
    async with asyncio.timeout(WAIT_S):
        while not any(isinstance(m, Welcome) for m in follower.messages()):
            await follower.receive()
    return follower


async def test_a_lobby_follower_that_stops_reading_is_skipped_then_gets_the_newest_list(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """Large frames (the whole race list at each change) to a follower that stopped reading:
    once its socket pushes back it is sent no more lists, so what the node holds for it stays
    within the transport's high-water mark and one list; when it reads again, the newest list
    comes. (Many such followers cost a list each, not a queue of them.)"""
    app = await start_server(send_buffer_bytes=4096, lobby_push_s=0.01, ping_interval_s=None)
    url = f"ws://127.0.0.1:{app.port}"
    creators = [await Client.open(url) for _ in range(20)]
    try:
        race_ids = []
        for number, creator in enumerate(creators):
            await creator.hello(f"creator{number}")
            for _ in range(3):  # a player's most open races
                race_ids.append(await create_race(creator, seats=16))
        known = set(app.transport.sessions)
        follower = await race_list_follower(app, raw_clients)
        session = session_of(app, known)
        assert session.transport is not None
        racer = creators[0]
        largest_frame = len(encode(await race_list(racer)))
        changes = 0

        async def change() -> None:
            nonlocal changes
            race_id = race_ids[-1]
            await racer.send(
                JoinRace(race_id=race_id) if changes % 2 == 0 else LeaveRace(race_id=race_id)
            )
            await racer.expect(RaceUpdate, lambda m, r=race_id: m.race_id == r)
            changes += 1

        while not session.writing_paused:  # the follower reads no more: its socket fills
            assert changes < 1000, "the socket never pushed back"
            await change()
        for _ in range(40):  # forty more lists it would have been sent
            await change()
        high_water = session.transport.get_write_buffer_limits()[1]
        assert session.transport.get_write_buffer_size() <= high_water + largest_frame
        assert not session.closing

        newest = await race_list(racer)  # it reads again: the newest list comes
        async with asyncio.timeout(WAIT_S):
            while newest not in follower.messages():
                assert await follower.receive() is not None, "the server closed it"
    finally:
        for creator in creators:
            await creator.close()


async def test_a_spectator_that_never_reads_is_closed_4005_by_the_bytes_it_holds(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """Boards pushed to a spectator that reads nothing: the cap on bytes (16 KiB here) closes
    it long before the cap on frames would, and the racers race on."""
    cap = 16 * 1024
    app = await start_server(
        send_buffer_bytes=4096,
        max_outgoing_bytes=cap,
        max_outgoing=100_000,  # so that the bytes close it, not the count of frames
        tick_s=0.005,
        spectator_batch_s=0.005,
        ping_interval_s=None,
    )
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = await Client.open(url), await Client.open(url)
    try:
        await alice.hello("alice")
        await bob.hello("bob")
        race_id = await start_race(alice, [bob], game_number="1002")
        known = set(app.transport.sessions)
        spectator = await RawClient.open(app.port)
        raw_clients.append(spectator)
        await spectator.loop.sock_sendall(
            spectator.sock,
            spectator.frames_of(Hello(protocol=PROTOCOL_VERSION))
            + spectator.frames_of(Watch(race_id=race_id)),
        )
        session = await _new_session(app, known)
        seq = 0
        deadline = asyncio.get_running_loop().time() + 3 * WAIT_S
        while not session.closing:  # boards change with every stock click
            assert asyncio.get_running_loop().time() < deadline, "the spectator stayed open"
            seq += 1
            await alice.send(MakeMove(race_id=race_id, seq=seq, move="deal"))
            await alice.expect(MoveAck, lambda m, s=seq: m.seq == s)
        assert await spectator.read_to_close() == CloseCode.TOO_SLOW
        assert app.metrics.slow_closes._value.get() == 1
        await alice.send(MakeMove(race_id=race_id, seq=seq + 1, move="deal"))
        await alice.expect(MoveAck, lambda m, s=seq + 1: m.seq == s)  # the race goes on
    finally:
        await alice.close()
        await bob.close()


async def _new_session(app: App, known: set[WebSocketSession]) -> WebSocketSession:
    await eventually(lambda: len(app.transport.sessions - known) == 1, within=WAIT_S)
    return session_of(app, known)


async def race_list(client: Client) -> RaceList:
    await client.send(ListRaces())
    return await client.expect(RaceList)


async def test_messages_read_within_the_budget_are_handled_before_the_1008(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """hello, three pings and a resign spend the five credits; one more ping closes the
    connection (1008). The five are still handled, and answered before the close."""
    app = await start_server(rate_capacity=5.0, rate_refill_per_s=0.001)
    url = f"ws://127.0.0.1:{app.port}"
    alice, bob = await Client.open(url), await Client.open(url)
    try:
        await alice.hello("alice")
        await bob.hello("bob")
        race_id = await start_race(alice, [bob])
        token = alice.welcome.token if alice.welcome else None
        assert token
        again = await RawClient.open(app.port)  # a fresh connection: a fresh budget
        raw_clients.append(again)
        frames = [
            Hello(protocol=PROTOCOL_VERSION, token=token),
            Ping(nonce=1),
            Ping(nonce=2),
            Ping(nonce=3),
            Resign(race_id=race_id),
            Ping(nonce=4),  # no credit left
        ]
        # One write: the server reads them together, the last one before the others are
        # handled.
        await again.loop.sock_sendall(again.sock, b"".join(again.frames_of(m) for m in frames))
        assert await again.read_to_close() == CloseCode.POLICY_VIOLATION
        kinds = [type(m).__name__ for m in again.messages()]
        assert kinds[0] == "Welcome"
        assert [m.nonce for m in again.messages() if isinstance(m, Pong)] == [1, 2, 3]
        assert any(
            isinstance(m, Progress) and m.progress.state == "resigned" for m in again.messages()
        )
        await bob.expect(
            Progress,
            lambda m: m.progress.player_id == alice.player_id and m.progress.state == "resigned",
        )
    finally:
        await alice.close()
        await bob.close()


async def test_every_fragment_costs_a_credit(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """Empty continuation frames used to cost nothing: one connection sent millions and held
    the loop. Each fragment now spends a credit (a flood of them closes 1008), and a message
    in a few fragments is still read."""
    app = await start_server(rate_capacity=30.0, rate_refill_per_s=0.001)
    polite = await RawClient.open(app.port)
    flooder = await RawClient.open(app.port)
    raw_clients += [polite, flooder]
    # A ping message in three fragments: three credits, one pong.
    frame = encode(Ping(nonce=9))
    polite.protocol.send_binary(frame[:2], fin=False)
    polite.protocol.send_continuation(frame[2:4], fin=False)
    polite.protocol.send_continuation(frame[4:], fin=True)
    await polite.flush()
    async with asyncio.timeout(WAIT_S):
        while not any(isinstance(m, Pong) and m.nonce == 9 for m in polite.messages()):
            assert await polite.receive() is not None, "the server closed the connection"

    flooder.protocol.send_binary(b"\x81", fin=False)
    for _ in range(100):
        flooder.protocol.send_continuation(b"", fin=False)
    await flooder.flush()
    assert await flooder.read_to_close() == CloseCode.POLICY_VIOLATION


async def test_a_message_in_more_than_64_fragments_closes_1009(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    app = await start_server(rate_capacity=1000.0, rate_refill_per_s=0.001)
    long = await RawClient.open(app.port)
    raw_clients.append(long)
    long.protocol.send_binary(b"\x81", fin=False)
    for _ in range(70):
        long.protocol.send_continuation(b"", fin=False)
    await long.flush()
    assert await long.read_to_close() == CloseCode.MESSAGE_TOO_BIG
    assert long.protocol.close_rcvd is not None
    assert long.protocol.close_rcvd.reason == "more than 64 fragments"


async def test_requests_of_a_client_that_does_not_read_wait_for_it_to_read(
    start_server: ServerFactory, raw_clients: list[RawClient]
) -> None:
    """Forty race lists asked for in one write by a client that reads nothing: the node
    answers while the socket takes them, then waits for the client to read before answering
    the next request (it used to answer them all, holding every list until the 4 MiB cap:
    1,000 such clients held 3 GB). Read again, every request is answered."""
    app = await start_server(send_buffer_bytes=4096, ping_interval_s=None)
    url = f"ws://127.0.0.1:{app.port}"
    creators = [await Client.open(url) for _ in range(20)]
    try:
        for number, creator in enumerate(creators):
            await creator.hello(f"creator{number}")
            for _ in range(3):
                await create_race(creator, seats=16)
        largest_frame = len(encode(await race_list(creators[0])))
        known = set(app.transport.sessions)
        asker = await RawClient.open(app.port)
        raw_clients.append(asker)
        asks = asker.frames_of(Hello(protocol=PROTOCOL_VERSION))
        for _ in range(40):
            asks += asker.frames_of(ListRaces())
        await asker.loop.sock_sendall(asker.sock, asks)
        session = await _new_session(app, known)
        assert session.transport is not None
        await eventually(lambda: session.writing_paused, within=WAIT_S, what="push back")
        await eventually(lambda: not session.inbox or session.worker is not None, within=WAIT_S)
        high_water = session.transport.get_write_buffer_limits()[1]
        assert session.transport.get_write_buffer_size() <= high_water + largest_frame
        assert session.inbox, "every request was answered into the buffer"
        assert not session.closing

        asker.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        async with asyncio.timeout(3 * WAIT_S):  # it reads: all forty lists come
            while sum(isinstance(m, RaceList) for m in asker.messages()) < 40:
                assert await asker.receive() is not None, "the server closed it"
        assert not session.closing
    finally:
        for creator in creators:
            await creator.close()
