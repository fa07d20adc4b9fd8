"""Hostile bytes against the real server on loopback (property tests): a handshake and the
frames written with it, cut into writes at any points; masked frames with any mask and any
payload, fragmented, with control frames between the fragments; and any bytes at all after a
handshake. Each gets its documented answer (the replies, or a close code from the table and
the socket closed), never an exception logged, never a hang. Every example is derandomized:
the same bytes on every run."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.streams import StreamReader
from websockets.uri import parse_uri

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.messages import Ping, Pong
from tests.integration.conftest import ServerFactory
from tests.integration.frames import LINE_END_MASKS, client_frame
from tests.integration.wsclient import Client
from tests.waiting import eventually

WAIT_S = 10.0

#: Derandomized (the same examples on every run, in CI too), few of them: each is a
#: connection to a real server. `function_scoped_fixture`: one server serves every example.
EXAMPLES = settings(
    derandomize=True,
    database=None,
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

MASKS = st.binary(min_size=4, max_size=4)
#: Mask bytes the head reader must not mistake for the end of a line: drawn often.
NASTY_MASKS = st.sampled_from(LINE_END_MASKS) | MASKS


def test_client_frame_is_a_frame_websockets_reads() -> None:
    """The frames these tests write are what websockets' own parser reads."""
    for size in (0, 5, 125, 126, 65535, 65536):
        payload = bytes(i % 251 for i in range(size))
        reader = StreamReader()
        reader.feed_data(client_frame(Opcode.CONT, payload, b"\n\r\x00\xff", fin=False))
        parser = Frame.parse(reader.read_exact, mask=True, max_size=None, extensions=[])
        with pytest.raises(StopIteration) as parsed:
            next(parser)
        frame = parsed.value.value
        assert (frame.opcode, frame.data, frame.fin) == (Opcode.CONT, payload, False)
        assert not reader.buffer  # nothing left over


@dataclass(frozen=True)
class Message:
    """A ping message (its nonce) written in `len(masks)` frames, `controls[i]` (control
    frames: a ping or an unsolicited pong, its payload and mask) written after frame i."""

    nonce: int
    masks: tuple[bytes, ...]
    controls: tuple[tuple[tuple[Opcode, bytes, bytes], ...], ...]

    def frames(self) -> bytes:
        data = encode(Ping(nonce=self.nonce))
        count = len(self.masks)
        step = -(-len(data) // count)
        pieces = [data[i * step : (i + 1) * step] for i in range(count)]
        out = b""
        for index, (piece, mask) in enumerate(zip(pieces, self.masks, strict=True)):
            opcode = Opcode.BINARY if index == 0 else Opcode.CONT
            out += client_frame(opcode, piece, mask, fin=index == count - 1)
            for control, payload, control_mask in self.controls[index]:
                out += client_frame(control, payload, control_mask)
        return out

    @property
    def pings(self) -> list[bytes]:
        """The payloads of its pings, which the server's pongs echo."""
        return [p for after in self.controls for op, p, _ in after if op is Opcode.PING]


CONTROLS = st.lists(
    st.tuples(st.sampled_from([Opcode.PING, Opcode.PONG]), st.binary(max_size=125), NASTY_MASKS),
    max_size=2,
).map(tuple)


@st.composite
def messages(draw: st.DrawFn, nonce: int) -> Message:
    count = draw(st.integers(1, 4))
    masks = tuple(draw(st.lists(NASTY_MASKS, min_size=count, max_size=count)))
    controls = tuple(draw(st.lists(CONTROLS, min_size=count, max_size=count)))
    return Message(nonce, masks, controls)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    # More than the frames read ahead of the hub (INBOX_LIMIT) at times: reading pauses.
    count = draw(st.integers(1, 6) | st.integers(17, 40))
    return [draw(messages(nonce)) for nonce in range(1, count + 1)]


def handshake() -> tuple[ClientProtocol, bytes]:
    """A client protocol that has sent its opening handshake, and the handshake's bytes."""
    protocol = ClientProtocol(parse_uri("ws://127.0.0.1/"))
    protocol.send_request(protocol.connect())
    [head] = protocol.data_to_send()
    return protocol, head


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = [0, *sorted({p % (len(data) + 1) for p in points}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if data[a:b]]


async def converse(port: int, pieces: list[bytes], *, eof: bool = False) -> bytes:
    """Write `pieces` one write each (and end the stream if `eof`); everything the server
    answers until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
        if eof:
            writer.write_eof()
        async with asyncio.timeout(WAIT_S):
            try:
                return await reader.read()
            except ConnectionResetError:
                return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def server_events(protocol: ClientProtocol, answer: bytes) -> tuple[Response, list[Frame]]:
    protocol.receive_data(answer)
    protocol.receive_eof()
    events = protocol.events_received()
    response = events[0]
    assert isinstance(response, Response)
    return response, [event for event in events[1:] if isinstance(event, Frame)]


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    """One server for every example of a test: past the pace of handshakes one address may
    make (an example or two each, hundreds while hypothesis shrinks a failure), and no
    keepalive pings of its own among the frames a test counts."""
    return await start_server(connect_burst=1e6, ping_interval_s=None)


def no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


async def read_until(
    reader: asyncio.StreamReader, protocol: ClientProtocol, done: Callable[[list[Frame]], bool]
) -> list[Response | Frame]:
    """What the server sends (its answer to the handshake, frames), read until `done(frames)`
    holds or the server closes the connection."""
    events: list[Response | Frame] = []
    async with asyncio.timeout(WAIT_S):
        while True:
            if done([event for event in events if isinstance(event, Frame)]):
                break
            chunk = await reader.read(65536)
            if not chunk:
                protocol.receive_eof()
            else:
                protocol.receive_data(chunk)
            events += cast(list[Response | Frame], protocol.events_received())
            if not chunk:
                break
    return events


@EXAMPLES
@given(conversation=conversations(), points=st.lists(st.integers(0, 10_000), max_size=8))
async def test_a_handshake_and_its_frames_are_answered_however_the_writes_cut_them(
    app: App, caplog: pytest.LogCaptureFixture, conversation: list[Message], points: list[int]
) -> None:
    """A handshake, then ping messages (each in 1-4 frames, any mask, pings between the
    fragments), written in pieces cut anywhere (in the head, in a frame's header, its mask,
    its payload): every ping is answered with its pong, every message with its reply, in
    order; then a close is answered with 1000 and the connection closed."""
    protocol, head = handshake()
    data = head + b"".join(message.frames() for message in conversation)
    pings = [ping for message in conversation for ping in message.pings]
    reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
    try:
        for piece in cut(data, points):
            writer.write(piece)
            await writer.drain()

        def answered(frames: list[Frame]) -> bool:
            binary = [f for f in frames if f.opcode is Opcode.BINARY]
            pongs = [f for f in frames if f.opcode is Opcode.PONG]
            return len(binary) >= len(conversation) and len(pongs) >= len(pings)

        response, *events = await read_until(reader, protocol, answered)
        assert isinstance(response, Response) and response.status_code == 101
        frames = [event for event in events if isinstance(event, Frame)]
        replies = [decode_server(bytes(f.data)) for f in frames if f.opcode is Opcode.BINARY]
        assert [r.nonce for r in replies if isinstance(r, Pong)] == [m.nonce for m in conversation]
        assert len(replies) == len(conversation)
        assert [f.data for f in frames if f.opcode is Opcode.PONG] == pings
        writer.write(client_frame(Opcode.CLOSE, struct.pack("!H", 1000), b"\n\n\r\n"))
        events = await read_until(reader, protocol, lambda frames: False)
        closing = [(f.opcode, f.data) for f in events if isinstance(f, Frame)]
        assert closing == [(Opcode.CLOSE, struct.pack("!H", 1000))]
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    await eventually(lambda: not app.transport.connections, within=WAIT_S)
    no_errors_logged(caplog)


#: The close codes a connection may end with when the bytes after its handshake are
#: anything at all (the table's codes the protocol sends by itself, and the server's own).
ANY_BYTES_CODES = {
    CloseCode.NORMAL,
    CloseCode.PROTOCOL_ERROR,
    CloseCode.UNSUPPORTED_DATA,
    CloseCode.INVALID_PAYLOAD,
    CloseCode.MESSAGE_TOO_BIG,
}


@EXAMPLES
@given(
    after=st.binary(max_size=300)
    | st.lists(st.binary(max_size=30).flatmap(lambda p: NASTY_MASKS.map(lambda m: (p, m))))
    .map(lambda frames: b"".join(client_frame(Opcode.BINARY, p, m) for p, m in frames))
    .flatmap(lambda framed: st.binary(max_size=20).map(lambda junk: framed + junk)),
    points=st.lists(st.integers(0, 10_000), max_size=4),
)
async def test_any_bytes_after_a_handshake_end_in_a_close_code_from_the_table(
    app: App, caplog: pytest.LogCaptureFixture, after: bytes, points: list[int]
) -> None:
    """Whatever follows the handshake (garbage, unmasked or reserved frames, frames cut
    short, valid frames and garbage after), the server answers the handshake, then closes
    with a code from the table or, the stream ended mid-frame, closes the socket; the
    connection is gone, nothing is logged as an error, and the next client is served."""
    protocol, head = handshake()
    answer = await converse(app.port, cut(head + after, points), eof=True)
    response, frames = server_events(protocol, answer)
    assert response.status_code == 101
    closes = [f for f in frames if f.opcode is Opcode.CLOSE]
    if closes:
        [close] = closes
        code = struct.unpack("!H", close.data[:2])[0] if close.data else None
        assert code in ANY_BYTES_CODES, close
    await eventually(lambda: not app.transport.connections, within=WAIT_S)
    no_errors_logged(caplog)
    client = await Client.open(f"ws://127.0.0.1:{app.port}")
    try:
        await client.send(Ping(nonce=9))
        await client.expect(Pong, lambda pong: pong.nonce == 9, within=WAIT_S)
    finally:
        await client.close()
