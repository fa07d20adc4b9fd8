"""The connection against a real server: hello and token, seq acks, resend, reconnect, resync."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from solrace.client.connect_failures import ConnectionFailedError
from solrace.client.connection import Connection, PendingMove
from solrace.client.link_status import LinkStatus, StatusChange
from solrace.client.session import Session
from solrace.server.app import App
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
