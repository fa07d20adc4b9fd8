"""The connection against a real server: hello and token, seq acks, resend, reconnect, resync."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Response

from solrace.client.connection import (
    CLOSE_MEANINGS,
    Connection,
    ConnectionFailedError,
    LinkStatus,
    PendingMove,
    StatusChange,
    _refusal_text,
    close_text,
)
from solrace.client.session import Session
from solrace.server.app import App
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board, MoveAck, Welcome
from tests.waiting import eventually

from .conftest import server_settings


async def session_for(url: str, name: str | None = None, token: str | None = None) -> Session:
    conn = Connection(url, name=name, token=token, resend_after_s=0.3, backoff_s=(0.05, 0.5))
    await conn.connect()
    conn.recv_nowait()
    return Session(conn)


async def test_hello_gives_a_token_that_proves_the_same_player_later(server_url: str) -> None:
    first = await session_for(server_url, "alice")
    token, player = first.conn.token, first.me
    await first.conn.close()
    assert token and player
    again = await session_for(server_url, token=token)
    assert again.me == player and again.state.name == "alice"
    await again.conn.close()


async def test_a_forged_token_fails_for_good(server_url: str) -> None:
    conn = Connection(server_url, token="v1.pnobody.forged")
    try:
        await conn.connect()
    except ConnectionFailedError as exc:
        assert exc.fatal
    else:
        raise AssertionError("a forged token was accepted")


async def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    app = App(server_settings(tmp_path))
    await app.start()
    port = app.port
    await app.stop()
    try:
        await Connection(f"ws://127.0.0.1:{port}", name="x", open_timeout_s=2).connect()
    except ConnectionFailedError as exc:
        assert "cannot reach" in str(exc) or "closed" in str(exc)
    else:
        raise AssertionError("connected to a stopped server")


async def race_with_two(
    url: str, game: str = "klondike"
) -> tuple[Session, Session, RaceId, list[asyncio.Task[None]]]:
    alice = await session_for(url, "alice")
    bob = await session_for(url, "bob")
    pumps = [asyncio.create_task(s.pump()) for s in (alice, bob)]
    race_id = await alice.create_race(game, 2, 120)
    await bob.join_race(race_id)
    await eventually(lambda: alice.state.my_board(race_id) is not None, what="alice's deal")
    return alice, bob, race_id, pumps


async def test_moves_are_acked_by_seq_and_refusals_change_nothing(server_url: str) -> None:
    alice, bob, race_id, pumps = await race_with_two(server_url)
    before = alice.state.my_board(race_id)
    outcome = await alice.move(race_id, "t0-t0")
    assert not outcome.ok and outcome.reason
    assert alice.state.my_board(race_id) == before
    outcome = await alice.move(race_id, "deal")
    assert outcome.ok and outcome.ack is not None
    assert alice.state.races[race_id].plies[PlayerId(alice.me or "")] == 1
    assert not alice.conn.pending
    for task in pumps:
        task.cancel()
    await alice.conn.close()
    await bob.conn.close()


async def test_an_ack_that_comes_while_its_move_is_still_being_sent_is_not_missed(
    server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Session.move` waited for the ack only once the send returned; a send that drained (a
    full socket buffer) while the ack came missed it, and the move waited 30 s for nothing."""
    alice, bob, race_id, pumps = await race_with_two(server_url)
    acked = asyncio.Event()
    alice.listeners.append(lambda m: acked.set() if isinstance(m, MoveAck) else None)
    send_move = alice.conn.send_move

    async def draining(race: RaceId, move: str) -> int:
        seq = await send_move(race, move)
        await acked.wait()  # still draining when the ack is read
        return seq

    monkeypatch.setattr(alice.conn, "send_move", draining)
    try:
        outcome = await alice.move(race_id, "deal", timeout_s=10)
        assert outcome.ok and outcome.ack is not None
    finally:
        for task in pumps:
            task.cancel()
        await alice.conn.close()
        await bob.conn.close()


async def test_a_lost_link_reconnects_resyncs_and_resends_pending_moves(server_url: str) -> None:
    alice, bob, race_id, pumps = await race_with_two(server_url)
    statuses: list[LinkStatus] = []
    alice.listeners.append(
        lambda m: statuses.append(m.status) if isinstance(m, StatusChange) else None
    )
    boards: list[Board] = []
    alice.listeners.append(lambda m: boards.append(m) if isinstance(m, Board) else None)
    ws = alice.conn._ws
    assert ws is not None
    await ws.close(code=1011)  # the link drops (as far as this client can tell)
    await eventually(lambda: LinkStatus.RECONNECTING in statuses, what="reconnecting")
    seq = await alice.conn.send_move(race_id, "deal")  # sent while the link is down
    await eventually(lambda: LinkStatus.CONNECTED in statuses, what="reconnected")
    await eventually(lambda: bool(boards), what="the board again after Sync")
    await eventually(lambda: seq not in alice.conn.pending, what="the pending move acked")
    await eventually(
        lambda: alice.state.races[race_id].plies.get(PlayerId(alice.me or "")) == 1, what="ply 1"
    )
    for task in pumps:
        task.cancel()
    await alice.conn.close()
    await bob.conn.close()


async def test_unacknowledged_moves_are_resent_with_the_same_seq(server_url: str) -> None:
    alice, bob, race_id, pumps = await race_with_two(server_url)
    acks: list[MoveAck] = []
    alice.listeners.append(lambda m: acks.append(m) if isinstance(m, MoveAck) else None)
    seq = await alice.conn.send_move(race_id, "deal")
    await eventually(lambda: bool(acks), what="first ack")
    # Pretend the ack was lost: the move is pending again and goes out again, same seq.
    alice.conn.pending[seq] = PendingMove(race_id, seq, "deal", sent_at=0.0)
    await eventually(lambda: len(acks) >= 2, what="the resend's ack")
    assert acks[1].seq == seq and acks[1].duplicate
    assert alice.state.races[race_id].plies[PlayerId(alice.me or "")] == 1  # applied once
    for task in pumps:
        task.cancel()
    await alice.conn.close()
    await bob.conn.close()


async def test_server_restart_keeps_identity_and_race(tmp_path: Path) -> None:
    data = tmp_path / "node"
    settings = server_settings(data, store=f"sqlite:{data / 'db.sqlite3'}", secret=None)
    app = App(settings)
    await app.start()
    port = app.port
    url = f"ws://127.0.0.1:{port}"
    alice, bob, race_id, pumps = await race_with_two(url)
    assert (await alice.move(race_id, "deal")).ok
    welcomes: list[Welcome] = []
    alice.listeners.append(lambda m: welcomes.append(m) if isinstance(m, Welcome) else None)
    await app.stop()
    app = App(settings.model_copy(update={"port": port}))
    await app.start()
    try:
        await eventually(
            lambda: bool(welcomes), within=30, what="a welcome from the restarted server"
        )
        assert welcomes[-1].player_id == alice.me
        await eventually(lambda: alice.conn.status is LinkStatus.CONNECTED, what="connected")
        outcome = await alice.move(race_id, "deal")
        assert outcome.ok and outcome.ack is not None and outcome.ack.ply == 1
    finally:
        for task in pumps:
            task.cancel()
        await alice.conn.close()
        await bob.conn.close()
        await app.stop()


async def test_a_reconnect_the_server_refuses_waits_as_long_as_its_retry_after(
    tmp_path: Path,
) -> None:
    """One handshake per 2.5 s from this address (Retry-After 3): the reconnect right after a
    drop is refused (429), and the next try waits for the Retry-After instead of the backoff's
    fraction of a second, so it is let in and nothing is refused twice."""
    app = App(server_settings(tmp_path, connect_burst=1, connect_per_s=0.4))
    await app.start()
    conn = Connection(f"ws://127.0.0.1:{app.port}", name="ann", backoff_s=(0.2, 0.4))
    try:
        await conn.connect()
        assert isinstance(conn.recv_nowait(), Welcome)
        (session,) = app.transport.sessions
        session.close(CloseCode.SERVICE_RESTART, "restart")  # the client comes back
        changes: list[StatusChange] = []
        async with asyncio.timeout(20):
            while not changes or changes[-1].status is not LinkStatus.CONNECTED:
                item = await conn.recv()
                if isinstance(item, StatusChange):
                    changes.append(item)
        refused = [c.detail for c in changes if "refused" in c.detail]
        assert refused == [
            f"ws://127.0.0.1:{app.port} refused the connection: HTTP 429: connecting too "
            "often from your address: wait a moment"
        ]
        value = app.metrics.registry.get_sample_value(
            "solrace_connections_refused_total", {"reason": "too_often"}
        )
        assert value == 1
    finally:
        await conn.close()
        await app.stop()


def test_a_proxy_s_html_refusal_is_said_in_its_words() -> None:
    """HAProxy's 503 page with no node up was shown raw in the reconnect line."""
    page = (
        b"<html><body><h1>503 Service Unavailable</h1>\n"
        b"No server is available to handle this request.\n</body></html>\n"
    )
    response = Response(503, "Service Unavailable", Headers(), page)
    assert _refusal_text(response) == (
        "HTTP 503: 503 Service Unavailable No server is available to handle this request."
    )
    plain = Response(429, "Too Many Requests", Headers(), b"connecting too often\n")
    assert _refusal_text(plain) == "HTTP 429: connecting too often"


async def test_a_url_that_is_no_websocket_url_is_said_so_at_once() -> None:
    """`--server 127.0.0.1:8765` (no scheme) said `cannot reach`, as if it had been tried; a
    port that is no port (`:99999`, `:8765 x`) ended in a traceback."""
    for url in (
        "127.0.0.1:8765",
        "http://127.0.0.1:8765",
        "ws://127.0.0.1:99999",
        "ws://127.0.0.1:8765 x",
    ):
        with pytest.raises(ConnectionFailedError, match="is not a WebSocket URL") as refused:
            await Connection(url).connect()
        assert refused.value.fatal


async def answering(reply: bytes) -> asyncio.Server:
    """A TCP server on a loopback port from the OS that answers any request with `reply`."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


def url_of_server(server: asyncio.Server) -> str:
    return f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "is not a solrace server: its answer is no WebSocket handshake (HTTP 200: hello)",
        ),
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
            "is not a solrace server: its answer is no WebSocket handshake (HTTP 404: not found)",
        ),
        (
            b"HTTP/1.0 200 OK\r\n\r\n<html>index</html>",
            "is not a solrace server: its answer is no WebSocket handshake (unsupported "
            "protocol; expected HTTP/1.1: HTTP/1.0 200 OK)",
        ),
    ],
    ids=["http-200", "http-404", "http-1.0"],
)
async def test_a_server_that_is_no_websocket_server_is_said_so(reply: bytes, said: str) -> None:
    """A plain web server at the URL was `refused the connection: HTTP 200: hello`, or `cannot
    reach URL: did not receive a valid HTTP response`."""
    server = await answering(reply)
    url = url_of_server(server)
    try:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
        assert str(failed.value) == f"{url} {said}"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_solrace_refusal_is_still_a_refusal() -> None:
    """Statuses a solrace server (or a proxy before it) refuses with keep their wording."""
    server = await answering(
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 4\r\n\r\nbusy"
    )
    url = url_of_server(server)
    try:
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=5).connect()
        assert str(failed.value) == f"{url} refused the connection: HTTP 503: busy"
        assert failed.value.retry_after_s == 2.0
    finally:
        server.close()
        await server.wait_closed()


async def test_a_websocket_server_that_does_not_answer_the_hello_is_named() -> None:
    """A WebSocket server that is not solrace (here one that reads and never answers) left
    `no answer to hello`, without the URL."""

    async def silent(ws: ServerConnection) -> None:
        async for _ in ws:
            pass

    async with serve(silent, "127.0.0.1", 0) as server:
        url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(ConnectionFailedError) as failed:
            await Connection(url, name="x", open_timeout_s=0.5).connect()
    assert (
        str(failed.value)
        == f"{url} did not answer the hello within 0.5 s (is it a solrace server?)"
    )


async def test_a_port_nobody_listens_on_is_said_plainly() -> None:
    """It was `cannot reach URL: [Errno 111] Connect call failed ('127.0.0.1', PORT)`."""
    server = await answering(b"")
    url = url_of_server(server)
    server.close()
    await server.wait_closed()  # the port the OS gave is free again: nothing listens there
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    assert (
        str(failed.value)
        == f"cannot reach {url}: connection refused (no server is listening there)"
    )


async def test_wss_to_a_server_without_tls_says_to_try_ws(server_url: str) -> None:
    url = server_url.replace("ws://", "wss://")
    with pytest.raises(ConnectionFailedError) as failed:
        await Connection(url, name="x", open_timeout_s=5).connect()
    text = str(failed.value)
    assert text.startswith(f"cannot reach {url}: "), text
    assert text.endswith("(a server without TLS: try ws://)"), text


def test_a_close_is_said_by_what_it_means() -> None:
    """A close is named by what it means, its code in brackets (a restarting server's 1012 was
    `link lost (1012)`), with the server's reason when it gave one; every code of the server's
    table has a meaning."""
    assert close_text(1012) == "the server is restarting (1012)"
    assert close_text(1001) == "going away: a proxy between (or the server) closed the link (1001)"
    assert close_text(1011) == "a server error (or the link stopped answering its keepalive) (1011)"
    assert (
        close_text(4001, "bad token") == "the server refused this player's token (4001: bad token)"
    )
    assert close_text(4999) == "link lost (4999)"
    assert close_text(None) == "link lost"
    assert all(code in CLOSE_MEANINGS for code in CloseCode)
