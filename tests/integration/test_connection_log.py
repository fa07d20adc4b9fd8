"""The log tells each connection's story: one line when it opens (its id and address) and one
when it closes (who closed it, the code, the reason), the closes for a client's misdeeds as
WARNINGs (one a minute per address, then a count), and a flood of frames adds no line of its
own; refused new names are said with the address, once a minute."""

from __future__ import annotations

import logging
import re

import pytest

from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import Error, Hello, Ping
from solrace.server.protocol.tokens import sign_token
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import Client
from tests.waiting import eventually

WS_LOGGER = "solrace.server.websocket"


async def story_of(app: App, caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    """The (level, line) of every INFO-or-above line naming the one connection opened since
    `caplog` began (or was cleared), once the server has seen it close: found by the id its
    open line gives it."""
    await eventually(lambda: not app.transport.connections, what="the connection closed")
    opened = [
        m[1]
        for r in caplog.records
        if r.name == WS_LOGGER
        and (m := re.fullmatch(r"connection (\d+) from 127\.0\.0\.1 open", r.getMessage()))
    ]
    assert len(opened) == 1, opened
    prefix = f"connection {opened[0]} from 127.0.0.1 "
    return [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.levelno >= logging.INFO and r.getMessage().startswith(prefix)
    ]


async def test_a_forged_token_close_is_said_at_info_naming_the_connection_and_address(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server()
    caplog.set_level(logging.DEBUG, logger="solrace.server")
    forged = await Client.open(f"ws://127.0.0.1:{app.port}")
    await forged.send(
        Hello(protocol=1, token=sign_token(PlayerId("p0123456789abcdef"), b"not the secret"))
    )
    assert await forged.closed() == CloseCode.AUTH_FAILED
    story = await story_of(app, caplog)
    label = story[0][1].removesuffix(" open")
    assert story == [
        (logging.INFO, f"{label} open"),
        (logging.INFO, f"{label} closed by the server: 4001 bad token"),
    ]
    # The library's own lines for it stay at DEBUG.
    library = [
        r
        for r in caplog.records
        if r.name == WS_LOGGER and r.getMessage().endswith(": connection closed")
    ]
    assert library and all(r.levelno == logging.DEBUG for r in library)


async def test_a_flood_is_one_warning_at_its_close(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server(rate_capacity=5.0, rate_refill_per_s=0.01)
    caplog.set_level(logging.INFO, logger="solrace.server")
    flood = await Client.open(f"ws://127.0.0.1:{app.port}")
    for nonce in range(200):
        await flood.send(Ping(nonce=nonce))
    assert await flood.closed() == CloseCode.POLICY_VIOLATION
    story = await story_of(app, caplog)
    label = story[0][1].removesuffix(" open")
    assert story == [
        (logging.INFO, f"{label} open"),
        (logging.WARNING, f"{label} closed by the server: 1008 rate budget exceeded"),
    ]


async def test_garbage_and_a_goodbye_are_told_apart(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server()
    caplog.set_level(logging.INFO, logger="solrace.server")
    garbage = await Client.open(f"ws://127.0.0.1:{app.port}")
    await garbage.send_raw(b"\xc1")  # never a msgpack byte
    assert await garbage.closed() == CloseCode.INVALID_PAYLOAD
    [(_, opened), (level, closed)] = await story_of(app, caplog)
    assert level == logging.WARNING
    assert closed.startswith(opened.removesuffix(" open") + " closed by the server: 1007 ")
    caplog.clear()
    polite = await Client.open(f"ws://127.0.0.1:{app.port}")
    await polite.send_raw(encode_raw({"type": "ping", "nonce": 1}))
    await polite.connection.close(1000, "bye\nconnection 1 from 10.0.0.1 open")
    story = await story_of(app, caplog)
    label = story[0][1].removesuffix(" open")
    assert story == [
        (logging.INFO, f"{label} open"),
        (
            logging.INFO,
            f"{label} closed by the client: 1000 'bye\\nconnection 1 from 10.0.0.1 open'",
        ),
    ]


async def test_refused_new_names_are_said_once_a_minute_with_the_address(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server(register_burst=1, register_per_s=0.001)
    caplog.set_level(logging.INFO, logger="solrace.server")
    url = f"ws://127.0.0.1:{app.port}"
    first = await Client.open(url)
    await first.hello("ann")
    refused = [await Client.open(url) for _ in range(3)]
    for n, client in enumerate(refused):
        await client.send(Hello(protocol=1, name=f"bot{n}"))
        assert (await client.expect(Error)).code == "not_allowed"
    said = [
        r
        for r in caplog.records
        if r.name == "solrace.server.websocket_session" and "a new name refused" in r.getMessage()
    ]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert re.fullmatch(
        r"connection \d+ from 127\.0\.0\.1: a new name refused: too many new names from your "
        r"address \(said once a minute\)",
        said[0].getMessage(),
    )
    for client in (first, *refused):
        await client.close()


async def test_abuse_closes_from_one_address_are_one_warning_a_minute_then_a_count(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server()
    caplog.set_level(logging.INFO, logger="solrace.server")
    url = f"ws://127.0.0.1:{app.port}"

    async def garbage() -> None:
        client = await Client.open(url)
        await client.send_raw(b"\xc1")  # never a msgpack byte
        assert await client.closed() == CloseCode.INVALID_PAYLOAD
        await eventually(lambda: not app.transport.connections, what="the connection closed")

    def closes() -> list[tuple[int, str]]:
        return [
            (r.levelno, r.getMessage())
            for r in caplog.records
            if r.name == WS_LOGGER and "closed by the server: 1007" in r.getMessage()
        ]

    for _ in range(20):
        await garbage()
    said = closes()
    assert len(said) == 20
    assert [level for level, _ in said] == [logging.WARNING] + [logging.INFO] * 19
    # A minute on, the next is a WARNING again, counting the 19 said at INFO meanwhile.
    warnings = app.transport.close_warnings
    later = warnings.clock() + 61.0
    warnings.clock = lambda: later
    await garbage()
    level, line = closes()[-1]
    assert level == logging.WARNING
    assert line.endswith(
        " (19 more abuse closes from this address since its previous such warning, said at"
        " INFO; one warning a minute at most)"
    ), line
