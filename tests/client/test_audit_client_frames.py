"""The connection against WebSocket servers that do not behave as a solrace server: frames it
cannot read before and after the welcome, a welcome of another protocol version, a frame over
the client's size limit. Each is said in words, none ends in a traceback or a hang."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import MAX_FRAME, Connection
from solrace.client.link_status import LinkStatus, StatusChange
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.messages import PROTOCOL_VERSION, Error

Handler = Callable[[ServerConnection], Awaitable[None]]


@asynccontextmanager
async def fake_server(handler: Handler) -> AsyncIterator[str]:
    """A WebSocket server on a loopback port from the OS running `handler`; its URL."""
    async with serve(handler, "127.0.0.1", 0, max_size=None, compression=None) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def welcome(**fields: Any) -> bytes:
    """A welcome frame (its fields as a solrace server sends them, `fields` changing some)."""
    frame: dict[str, Any] = {
        "type": "welcome",
        "protocol": PROTOCOL_VERSION,
        "player_id": "p0123456789ab",
        "name": "carol",
        "token": "a-token",
        "ratings": {},
        "active_races": [],
        "server_time_ms": time.time_ns() // 1_000_000,
    }
    frame.update(fields)
    return encode_raw(frame)


async def test_a_server_that_keeps_sending_frames_but_no_welcome_is_given_up_on() -> None:
    """A WebSocket server that sends text every 50 ms (a ticker, not solrace) held the hello
    open for good: each frame started the hello's wait again."""

    async def ticker(ws: ServerConnection) -> None:
        await ws.recv()
        while True:
            await ws.send("tick")
            await asyncio.sleep(0.05)

    async with fake_server(ticker) as url:
        conn = Connection(url, name="carol", open_timeout_s=0.5)
        with pytest.raises(ConnectionFailedError) as failed:
            async with asyncio.timeout(10):  # the old client waited here for good
                await conn.connect()
    assert str(failed.value) == (
        f"{url} did not answer the hello within 0.5 s (is it a solrace server?)"
    )


async def test_a_welcome_of_another_protocol_version_is_refused_saying_both_versions() -> None:
    """A server that welcomes in protocol 2 was taken as one that speaks this client's."""

    async def newer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(welcome(protocol=PROTOCOL_VERSION + 1))
        await ws.wait_closed()

    async with fake_server(newer) as url:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="carol", open_timeout_s=5).connect()
    assert failed.value.fatal
    assert str(failed.value) == (
        f"{url} speaks protocol {PROTOCOL_VERSION + 1}, this client protocol "
        f"{PROTOCOL_VERSION}: play there with a solrace of the server's version"
    )


async def test_a_welcome_this_client_cannot_read_is_said_at_once() -> None:
    """A welcome with a field this client does not know (a newer server's) was dropped as
    unreadable, and the hello ended in `did not answer the hello`, as if no one answered."""

    async def newer(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(welcome(season=3))
        await ws.wait_closed()

    async with fake_server(newer) as url:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="carol", open_timeout_s=1).connect()
    assert failed.value.fatal
    assert str(failed.value) == (
        f"{url} answered the hello with a welcome this client cannot read (welcome.season: "
        "Extra inputs are not permitted): is it a solrace server of another version?"
    )


@pytest.mark.parametrize(
    ("frame", "text", "said"),
    [
        (
            b"\x00" * (MAX_FRAME + 1),
            False,
            "the server sent a frame too big for this client "
            f"(1009: frame with {MAX_FRAME + 1} bytes exceeds limit of {MAX_FRAME} bytes)",
        ),
        (
            b"\xff\xfe",
            True,
            "the server sent a text frame that is not UTF-8 "
            "(1007: invalid start byte at position 0)",
        ),
    ],
    ids=["too-big", "not-utf-8"],
)
async def test_a_frame_the_client_fails_the_link_over_is_said_as_such(
    frame: bytes, text: bool, said: str
) -> None:
    """The client fails a link whose server sends a frame over `MAX_FRAME`, or a text frame
    that is not UTF-8; that was said as `the link dropped (1006)`, as if the network had
    failed."""

    async def bad(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(welcome())
        await ws.send(frame, text=text)
        await ws.wait_closed()

    async with fake_server(bad) as url:
        conn = Connection(url, name="carol", backoff_s=(30.0, 30.0))
        await conn.connect()
        try:
            assert conn.recv_nowait() is not None  # the welcome
            change = await asyncio.wait_for(conn.recv(), 10)
        finally:
            await conn.close()
    assert isinstance(change, StatusChange)
    assert change.status is LinkStatus.RECONNECTING
    assert change.detail == said


async def test_frames_the_client_cannot_read_are_logged_and_the_next_ones_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An unknown message type, a message missing a field and a text frame after the welcome
    are skipped (a newer server may send what this client does not know), each logged in
    words (`client.log`); they went unsaid anywhere. The message after them arrives."""

    async def odd(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(welcome())
        await ws.send(encode_raw({"type": "frobnicate", "x": 1}))
        await ws.send(encode_raw({"type": "error", "message": "no code"}))
        await ws.send("hello there")
        await ws.send(encode_raw({"type": "error", "code": "after", "message": "read"}))
        await ws.wait_closed()

    caplog.set_level(logging.WARNING, logger="solrace.client.connection")
    async with fake_server(odd) as url:
        conn = Connection(url, name="carol")
        await conn.connect()
        try:
            assert conn.recv_nowait() is not None  # the welcome
            message = await asyncio.wait_for(conn.recv(), 10)
        finally:
            await conn.close()
    assert isinstance(message, Error) and message.code == "after"
    said = [r.getMessage() for r in caplog.records if r.name == "solrace.client.connection"]
    assert len(said) == 3
    assert all(
        s.startswith(f"ignored a frame from {url} that this client cannot read: ") for s in said
    )
    assert "'frobnicate'" in said[0]
    assert "code" in said[1]
    assert said[2].endswith("a text frame (11 characters): the protocol is binary")


async def test_a_server_sending_unreadable_frames_without_end_fills_no_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first frames that cannot be read are logged, then one line says the rest are not."""

    async def flood(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(welcome())
        for _ in range(50):
            await ws.send("noise")
        await ws.send(encode_raw({"type": "error", "code": "after", "message": "read"}))
        await ws.wait_closed()

    caplog.set_level(logging.WARNING, logger="solrace.client.connection")
    async with fake_server(flood) as url:
        conn = Connection(url, name="carol")
        await conn.connect()
        try:
            assert conn.recv_nowait() is not None
            assert isinstance(await asyncio.wait_for(conn.recv(), 10), Error)
        finally:
            await conn.close()
    said = [r.getMessage() for r in caplog.records if r.name == "solrace.client.connection"]
    assert len(said) == 11
    assert said[-1] == f"further frames from {url} that cannot be read are not logged"
