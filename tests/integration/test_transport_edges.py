"""The transport's edges over real sockets: fragmented messages, maps keyed by numbers,
frames the WebSocket protocol refuses, keepalive pings, the opening and closing handshake
timeouts, a plain HTTP request, and shutdown (1012)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode, encode_raw
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.messages import PROTOCOL_VERSION, Error, Hello, Ping, Pong, Welcome
from solrace.server.websocket_session import WebSocketSession
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import Client
from tests.waiting import eventually

WAIT_S = 5.0


HANDSHAKE = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def read_to_eof(reader: asyncio.StreamReader, within: float = WAIT_S) -> bytes:
    """What the server sends until it closes the socket (a reset counts as closed)."""
    async with asyncio.timeout(within):
        try:
            return await reader.read()
        except ConnectionResetError:
            return b""


async def ping_pong(client: Client, nonce: int) -> None:
    await client.send(Ping(nonce=nonce))
    await client.expect(Pong, lambda m: m.nonce == nonce)


def only_session(app: App) -> WebSocketSession:
    [session] = app.transport.sessions
    return session


# --- fragmented messages -------------------------------------------------------------------


async def test_a_fragmented_message_is_reassembled(start_server: ServerFactory) -> None:
    app = await start_server()
    client = await Client.open(url_of(app))
    try:
        hello = encode(Hello(protocol=PROTOCOL_VERSION, name="fragments"))
        third = len(hello) // 3
        parts = [hello[:third], hello[third : 2 * third], hello[2 * third :]]
        assert all(parts) and b"".join(parts) == hello
        await client.connection.send(parts)  # an iterable: one message in three frames
        welcome = await client.expect(Welcome)
        assert welcome.player_id
        # The connection goes on as usual after it.
        await ping_pong(client, 7)
        assert client.connection.close_code is None
    finally:
        await client.close()


async def test_a_fragmented_message_over_the_size_cap_closes_1009(
    start_server: ServerFactory,
) -> None:
    app = await start_server(max_frame_bytes=1024)
    client = await Client.open(url_of(app))
    try:
        await client.hello("big")
        # Each frame is under the cap; the message they make is not.
        await client.connection.send([b"\x00" * 400] * 3)
        assert await client.closed(within=WAIT_S) == CloseCode.MESSAGE_TOO_BIG
        await eventually(lambda: not app.transport.sessions, within=WAIT_S)
    finally:
        await client.close()


async def test_a_frame_over_the_size_cap_closes_1009_and_is_counted(
    start_server: ServerFactory,
) -> None:
    """The one 1009 the protocol sends by itself (a single frame past the cap) is counted
    among the bad frames, as a message in too many fragments is."""
    app = await start_server(max_frame_bytes=1024)
    client = await Client.open(url_of(app))
    try:
        await client.hello("big")
        await client.connection.send(b"\x00" * 2000)
        assert await client.closed(within=WAIT_S) == CloseCode.MESSAGE_TOO_BIG
        counted = app.metrics.registry.get_sample_value(
            "solrace_bad_frames_total", {"kind": "too_big"}
        )
        assert counted == 1
    finally:
        await client.close()


async def test_maps_keyed_by_numbers_get_invalid_message_and_the_connection_stays_open(
    start_server: ServerFactory,
) -> None:
    app = await start_server()
    client = await Client.open(url_of(app))
    try:
        keys_must_be_strings = "a map's keys must be strings"
        for frame, reason in (
            (b"\x81\x01\x01", keys_must_be_strings),
            (b"\x83\xa4type\xa4ping\xa5nonce\x01\x02\x03", keys_must_be_strings),
            (encode_raw({b"type": b"ping", "nonce": 1}), keys_must_be_strings),  # binary keys
            (encode_raw({}), 'a message needs a "type"'),
        ):
            await client.send_raw(frame)
            error = await client.expect(Error)
            assert (error.code, error.message) == (ErrorCode.INVALID_MESSAGE.value, reason)
        await ping_pong(client, 3)
        assert client.connection.close_code is None
        # Too deep to decode at all: not one msgpack map (1007).
        await client.send_raw(b"\x82\xa4type\xa4ping\xa1x" + b"\x91" * 3000 + b"\xc0")
        assert await client.closed(within=WAIT_S) == CloseCode.INVALID_PAYLOAD
    finally:
        await client.close()


async def test_a_deeply_nested_type_gets_invalid_message_and_nothing_on_stderr(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type nested ~1,000 deep (before hello): pydantic failed to repr it and printed a
    RecursionError traceback ('Exception ignored in: ...') for every such frame."""
    reported: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reported.append(str(info.exc_type)))
    app = await start_server()
    client = await Client.open(url_of(app))
    try:
        for _ in range(3):
            await client.send_raw(b"\x81\xa4type" + b"\x91" * 1020 + b"\x01")
            error = await client.expect(Error)
            assert (error.code, error.request) == (ErrorCode.INVALID_MESSAGE.value, None)
            assert error.message.startswith("type: Input should be a message type")
        await ping_pong(client, 4)
        assert reported == []
    finally:
        await client.close()


async def test_too_many_fields_get_invalid_message_naming_the_type_unless_not_one_map(
    start_server: ServerFactory,
) -> None:
    """A map of 18 fields is refused by count, naming its type; the same map cut short or
    followed by a byte is not one msgpack map: 1007, as with 17 fields."""
    app = await start_server()
    pairs = [("type", "ping"), ("nonce", 1), *((f"x{n}", n) for n in range(16))]
    whole = b"\xde\x00\x12" + b"".join(encode_raw(k) + encode_raw(v) for k, v in pairs)
    client = await Client.open(url_of(app))
    try:
        await client.send_raw(whole)
        error = await client.expect(Error)
        assert (error.code, error.request) == (ErrorCode.INVALID_MESSAGE.value, "ping")
        assert error.message == "a message has at most 17 fields, not 18"
        await ping_pong(client, 5)
    finally:
        await client.close()
    for frame in (whole + b"\xc1", whole[: len(whole) // 2 + 4]):
        client = await Client.open(url_of(app))
        try:
            await client.send_raw(frame)
            assert await client.closed(within=WAIT_S) == CloseCode.INVALID_PAYLOAD
        finally:
            await client.close()


# --- frames the WebSocket protocol refuses ---------------------------------------------------

PING = encode(Ping(nonce=1))


def client_frame(opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0) -> bytes:
    """A masked client frame (mask 0: the payload as it is), right or wrong as asked."""
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    size = len(payload)
    length = bytes([0x80 | size]) if size < 126 else b"\xfe" + size.to_bytes(2, "big")
    return head + length + bytes(4) + payload


def unmasked(frame: bytes) -> bytes:
    return frame[:1] + bytes([frame[1] & 0x7F]) + frame[6:]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (client_frame(0x0, PING), CloseCode.PROTOCOL_ERROR),  # a continuation first
        (unmasked(client_frame(0x2, PING)), CloseCode.PROTOCOL_ERROR),
        (client_frame(0x2, PING, rsv=4), CloseCode.PROTOCOL_ERROR),  # RSV1
        (client_frame(0x3, PING), CloseCode.PROTOCOL_ERROR),  # a reserved opcode
        (client_frame(0x9, bytes(126)), CloseCode.PROTOCOL_ERROR),  # a ping over 125 bytes
        (client_frame(0x9, b"p", fin=False), CloseCode.PROTOCOL_ERROR),  # a fragmented ping
        (client_frame(0x8, (999).to_bytes(2, "big")), CloseCode.PROTOCOL_ERROR),
        (client_frame(0x8, (1005).to_bytes(2, "big")), CloseCode.PROTOCOL_ERROR),
        (client_frame(0x8, (1000).to_bytes(2, "big") + b"\xff"), CloseCode.INVALID_PAYLOAD),
    ],
    ids=[
        "continuation",
        "unmasked",
        "rsv1",
        "opcode3",
        "long-ping",
        "fragmented-ping",
        "close-999",
        "close-1005",
        "close-reason-not-utf8",
    ],
)
async def test_frames_the_websocket_protocol_refuses_close_with_a_code_of_the_table(
    start_server: ServerFactory, frame: bytes, code: CloseCode
) -> None:
    """The websockets protocol closes these itself (1002, or 1007 for a close reason that is
    not UTF-8): codes the close-code table must list (1002 was missing)."""
    app = await start_server()
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        writer.write(HANDSHAKE)
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 ")
        writer.write(frame)
        await writer.drain()
        frames = await read_to_eof(reader)
        # One close frame (unmasked, server to client) and nothing before it.
        assert frames[0] == 0x88 and frames[1] == len(frames) - 2
        assert int.from_bytes(frames[2:4], "big") == code
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


# --- keepalive -----------------------------------------------------------------------------


async def test_a_client_that_stops_reading_is_closed_1011_after_the_ping_timeout(
    start_server: ServerFactory,
) -> None:
    app = await start_server(ping_interval_s=0.2, ping_timeout_s=0.3)
    stuck = await Client.open(url_of(app))
    try:
        await stuck.hello("stuck")
        session = only_session(app)
        stuck.connection.transport.pause_reading()  # our pings now go unanswered
        await eventually(lambda: session.closing, within=WAIT_S)
        # The server has sent its close frame and waits for the client's answer.
        assert session in app.transport.connections
        stuck.connection.transport.resume_reading()
        assert await stuck.closed(within=WAIT_S) == CloseCode.INTERNAL_ERROR
        assert stuck.connection.close_reason == "keepalive ping timeout"
        await eventually(lambda: session not in app.transport.connections, within=WAIT_S)
        assert session not in app.transport.sessions
    finally:
        await stuck.close()


async def test_a_client_that_answers_pings_stays_open_across_ping_intervals(
    start_server: ServerFactory,
) -> None:
    app = await start_server(ping_interval_s=0.2, ping_timeout_s=0.5)
    client = await Client.open(url_of(app))  # websockets answers pings by itself
    try:
        await client.hello("awake")
        session = only_session(app)
        # A new ping goes out only once the last one was answered: six distinct ping times
        # mean five pongs, over a second, longer than the ping timeout.
        pings = {session.last_ping_at}

        def pinged_often() -> bool:
            pings.add(session.last_ping_at)
            return len(pings) >= 6

        await eventually(pinged_often, within=WAIT_S)
        assert not session.closing
        assert session in app.transport.sessions
        assert client.connection.close_code is None
        await ping_pong(client, 1)
    finally:
        await client.close()


async def test_a_failing_watchdog_round_is_logged_and_the_pings_go_on(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One exception in the watchdog (here a session's keepalive, made to fail once: nothing
    real fails on demand) is logged and the next rounds come: it ended the idle timeouts and
    the keepalive of every connection on the node."""
    app = await start_server(ping_interval_s=0.2, ping_timeout_s=0.5)
    client = await Client.open(url_of(app))
    try:
        await client.hello("watched")
        session = only_session(app)
        keepalive = session.keepalive
        failed = False

        def fails_once(now: float, interval: float, timeout: float | None) -> None:
            nonlocal failed
            if not failed:
                failed = True
                raise RuntimeError("a bug in one round")
            keepalive(now, interval, timeout)

        monkeypatch.setattr(session, "keepalive", fails_once)
        pinged = session.last_ping_at
        with caplog.at_level(logging.ERROR, logger="solrace.server.transport"):
            await eventually(lambda: failed, within=WAIT_S, what="the failing round")
            await eventually(
                lambda: session.last_ping_at > pinged, within=WAIT_S, what="a ping after it"
            )
        assert [r.getMessage() for r in caplog.records] == ["watching the connections failed"]
        await ping_pong(client, 1)
    finally:
        await client.close()


# --- handshake timeouts --------------------------------------------------------------------


async def test_a_socket_that_never_completes_the_handshake_is_closed_after_open_timeout(
    start_server: ServerFactory,
) -> None:
    app = await start_server(open_timeout_s=0.3)
    # Connected (and past its handshake) before the silent sockets: still open after their
    # timeouts, so a completed handshake cancels its timer.
    good = await Client.open(url_of(app))
    try:
        await good.hello("patient")
        started = time.monotonic()
        silent_reader, silent_writer = await asyncio.open_connection("127.0.0.1", app.port)
        half_reader, half_writer = await asyncio.open_connection("127.0.0.1", app.port)
        half_writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")
        await half_writer.drain()
        closed = asyncio.gather(read_to_eof(silent_reader), read_to_eof(half_reader))
        # The server keeps serving the good client while the two wait for their timeout.
        exchanges = 0
        while True:
            await ping_pong(good, exchanges)
            exchanges += 1
            if closed.done():
                break
            await asyncio.wait([closed], timeout=0.05)
        assert list(await closed) == [b"", b""]
        assert time.monotonic() - started >= 0.3 - 0.05
        await eventually(lambda: app.transport.connections == app.transport.sessions, within=WAIT_S)
        assert len(app.transport.connections) == 1
        assert good.connection.close_code is None
        await ping_pong(good, -1)
        for writer in (silent_writer, half_writer):
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    finally:
        await good.close()


async def test_a_client_that_never_answers_our_close_is_dropped_after_close_timeout(
    start_server: ServerFactory,
) -> None:
    app = await start_server(ping_interval_s=0.2, ping_timeout_s=0.3, close_timeout_s=0.3)
    stuck = await Client.open(url_of(app))
    try:
        await stuck.hello("stuck")
        session = only_session(app)
        stuck.connection.transport.pause_reading()
        await eventually(lambda: session.closing, within=WAIT_S)
        # The client never reads our close frame: the socket is aborted, the session gone.
        await eventually(lambda: session not in app.transport.connections, within=WAIT_S)
        await asyncio.wait_for(session.lost, WAIT_S)
        assert session not in app.transport.sessions
    finally:
        with contextlib.suppress(Exception):
            stuck.connection.transport.resume_reading()
        await stuck.close()


# --- plain HTTP ----------------------------------------------------------------------------


async def test_a_plain_http_get_is_answered_426_and_closed(start_server: ServerFactory) -> None:
    app = await start_server()
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        # HTTP/1.1 keeps connections open by default: the server closes this one itself.
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        raw = await read_to_eof(reader)
        head, _, body = raw.decode().partition("\r\n\r\n")
        status_line, *header_lines = head.split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
        assert int(status_line.split()[1]) == 426
        assert headers["upgrade"] == "websocket"
        assert "WebSocket" in body
        assert not app.transport.sessions
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    await eventually(lambda: not app.transport.connections, within=WAIT_S)


async def test_a_handshake_and_bad_bytes_in_one_write_get_the_101_then_a_1002_close(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The request is answered before the bytes after it are read (they cannot fail the
    stream before the answer is written); then those bytes close the connection 1002.
    Nothing is written after our end of stream, no error is logged, and the server goes on
    serving."""
    app = await start_server()
    for junk in (b"\x82\x05hello", b"\xff" * 64):  # an unmasked frame; bytes of no frame
        reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
        try:
            writer.write(HANDSHAKE + junk)
            await writer.drain()
            raw = await read_to_eof(reader)
            head, _, frames = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101 ")
            # One close frame (unmasked, server to client): 1002, protocol error.
            assert frames[0] == 0x88 and frames[1] == len(frames) - 2
            assert int.from_bytes(frames[2:4], "big") == 1002
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    client = await Client.open(url_of(app))
    try:
        await client.hello("after")
        await ping_pong(client, 7)
    finally:
        await client.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- shutdown ------------------------------------------------------------------------------


async def test_stop_closes_clients_1012_and_drops_unfinished_handshakes(
    start_server: ServerFactory,
) -> None:
    app = await start_server()
    racer = await Client.open(url_of(app))
    try:
        await racer.hello("leaving")
        reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
        await eventually(lambda: len(app.transport.connections) == 2, within=WAIT_S)
        # The default close timeout is 10 s: a client that answers does not wait it out.
        async with asyncio.timeout(WAIT_S):
            await app.stop()
        assert await racer.closed(within=WAIT_S) == CloseCode.SERVICE_RESTART
        assert await read_to_eof(reader) == b""
        assert not app.transport.connections and not app.transport.sessions
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    finally:
        await racer.close()


async def test_stop_drops_a_client_that_never_answers_after_close_timeout(
    start_server: ServerFactory,
) -> None:
    app = await start_server(close_timeout_s=0.3)
    stuck = await Client.open(url_of(app))
    try:
        await stuck.hello("stuck")
        stuck.connection.transport.pause_reading()
        async with asyncio.timeout(WAIT_S):
            await app.stop()
        assert not app.transport.connections and not app.transport.sessions
    finally:
        with contextlib.suppress(Exception):
            stuck.connection.transport.resume_reading()
        await stuck.close()
