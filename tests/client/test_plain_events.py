"""What `solrace play --plain` says as things happen, against a real server (in a child
process or in this process): the link going down and back once per reason, a move answered
after its wait said once when the answer comes, and the server's strings printed without
their control characters."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from solrace.client.connection import Connection
from solrace.client.link_status import LinkStatus, StatusChange
from solrace.client.plain import PlainMode
from solrace.client.session import Session
from solrace.client.wire_text import printable
from solrace.server.app import App
from solrace.server.protocol.codec import decode_client, encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    CreateRace,
    Error,
    Hello,
    ListRaces,
    MoveAck,
    RaceInfo,
    RaceList,
    RacerInfo,
    Welcome,
)
from solrace.server.protocol.records import MoveRecord
from tests.waiting import eventually

from .conftest import server_settings
from .process import Child
from .test_plain import Opponent


async def test_a_server_restart_is_said_as_one(tmp_path: Path) -> None:
    """The server restarts (it closes every link with 1012): the line says so, not `link lost
    (1012)`, and the client comes back (same store and secret: the same player)."""
    data = tmp_path / "node"
    settings = server_settings(data, store=f"sqlite:{data / 'db.sqlite3'}")
    app = App(settings)
    await app.start()
    port = app.port
    player = await Child.start(
        tmp_path, "play", "--plain", "--server", f"ws://127.0.0.1:{port}", "--name", "pat"
    )
    try:
        await player.expect("connected to")
        await app.stop()
        app = App(settings.model_copy(update={"port": port}))
        await app.start()
        line = await player.expect("reconnecting…")
        assert line == "reconnecting… (the server is restarting (1012))"
        await player.expect("reconnected")
        assert await player.finish() == 0
    finally:
        await player.kill()
        await app.stop()


async def test_a_server_down_for_many_tries_is_said_once_per_reason(tmp_path: Path) -> None:
    """Each failed try printed its line: a server down for a minute filled the screen with a
    dozen `reconnecting… (cannot reach ...)` lines. A reason is said once, until it changes."""
    data = tmp_path / "node"
    settings = server_settings(data, store=f"sqlite:{data / 'db.sqlite3'}")
    app = App(settings)
    await app.start()
    port = app.port
    conn = Connection(f"ws://127.0.0.1:{port}", name="pat", backoff_s=(0.01, 0.02))
    await conn.connect()
    conn.recv_nowait()
    session = Session(conn)
    pump = asyncio.create_task(session.pump())
    out = io.StringIO()
    PlainMode(session, out)
    tries: list[str] = []
    session.listeners.append(
        lambda incoming: (
            tries.append(incoming.detail)
            if isinstance(incoming, StatusChange) and incoming.status is LinkStatus.RECONNECTING
            else None
        )
    )
    try:
        await app.stop()
        await eventually(lambda: len(tries) >= 5, what="several failed tries")
        app = App(settings.model_copy(update={"port": port}))
        await app.start()
        await eventually(lambda: "reconnected" in out.getvalue(), what="the link back")
    finally:
        pump.cancel()
        await conn.close()
        await app.stop()
    url = f"ws://127.0.0.1:{port}"
    assert out.getvalue().splitlines() == [
        "reconnecting… (the server is restarting (1012))",
        f"reconnecting… (cannot reach {url}: connection refused (no server is listening there))",
        "reconnected",
    ]


async def test_a_move_answered_after_its_wait_is_reported_when_the_answer_comes(
    server_app: App, server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move whose answer is late (the link was down, the store slow) is not said to have
    gone unanswered for good: a player told so would play it again."""
    racer = await Opponent.open(server_url, "erin")
    rival = await Opponent.open(server_url, "finn")
    out = io.StringIO()
    mode = PlainMode(racer.session, out)
    mode.MOVE_WAIT_S = 0.2
    stored = asyncio.Event()
    append = server_app.store.append_move

    async def slow_append(record: MoveRecord) -> None:
        await stored.wait()
        await append(record)

    try:
        await mode.command("create klondike 2 60")
        assert mode.race_id is not None
        await rival.session.join_race(mode.race_id)
        assert await mode.wait_start()
        monkeypatch.setattr(server_app.store, "append_move", slow_append)
        await mode.command("deal")
        assert "no answer yet to deal: it is sent again until the server answers" in (
            out.getvalue()
        )
        assert "ok deal" not in out.getvalue()
        stored.set()
        await eventually(lambda: "ok deal (answered late)" in out.getvalue(), what="late ok")
    finally:
        stored.set()
        await racer.close()
        await rival.close()


async def test_a_second_answer_to_a_move_resent_is_not_said_as_a_late_one(
    server_url: str,
) -> None:
    """A move whose ack was slower than the resend (2.5 s) is answered twice (the second
    `duplicate`); the first settled its wait, and the second was said as `ok deal (answered
    late)`: a script read one move more than was played."""
    racer = await Opponent.open(server_url, "gail")
    rival = await Opponent.open(server_url, "hank")
    out = io.StringIO()
    mode = PlainMode(racer.session, out)
    acks: list[MoveAck] = []
    racer.session.listeners.append(lambda m: acks.append(m) if isinstance(m, MoveAck) else None)
    try:
        await mode.command("create klondike 2 60")
        assert mode.race_id is not None
        await rival.session.join_race(mode.race_id)
        assert await mode.wait_start()
        await mode.command("deal")
        assert "ok deal" in out.getvalue()
        (ack,) = acks
        racer.session.dispatch(ack.model_copy(update={"duplicate": True}))  # the resend's
        assert "answered late" not in out.getvalue()
    finally:
        await racer.close()
        await rival.close()


#: What a hostile server puts in its strings: an OSC that sets the window title, a colour
#: CSI, a bare C1 CSI, a carriage return, a newline, a bell and a direction override.
HOSTILE = "\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\x9b2J\rX\ny\u202e"


async def hostile_handler(ws: ServerConnection) -> None:
    """Welcomes with a hostile name, lists one race full of them, refuses with one."""
    async for data in ws:
        assert isinstance(data, bytes)
        message = decode_client(data)
        if isinstance(message, Hello):
            await ws.send(
                encode(
                    Welcome(
                        protocol=PROTOCOL_VERSION,
                        player_id=PlayerId("p1"),
                        name=HOSTILE,
                        token="t",
                        ratings={},
                        active_races=[],
                        server_time_ms=0,
                    )
                )
            )
        elif isinstance(message, ListRaces):
            racer = RacerInfo(
                player_id=PlayerId("p2"), name=HOSTILE, state="joined", connected=True
            )
            race = RaceInfo(
                race_id=RaceId("r" + HOSTILE),
                game="klondike",
                seats=2,
                time_limit_s=60,
                rated=False,
                private=False,
                status="open",
                creator=PlayerId("p2"),
                racers=[racer],
                created_at_ms=0,
                start_at_ms=None,
                ends_at_ms=None,
                spectator_delay_ms=0,
                grace_ms=60_000,
            )
            await ws.send(encode(RaceList(races=[race])))
        elif isinstance(message, CreateRace):
            error = Error(code="not_allowed", message=HOSTILE, request="create_race")
            await ws.send(encode(error))


async def test_the_servers_strings_reach_the_terminal_without_their_controls(
    tmp_path: Path,
) -> None:
    async with serve(hostile_handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        player = await Child.start(
            tmp_path, "play", "--plain", "--server", f"ws://127.0.0.1:{port}", "--name", "pat"
        )
        try:
            await player.expect("connected to")
            await player.send("list")
            await player.expect("klondike")
            await player.send("create klondike 2 60")
            await player.expect("refused")
            await player.send("quit")
            await player.finish()
        finally:
            await player.kill()
    shown = printable(HOSTILE)
    assert shown == "\\x1b]0;PWNED\\x07\\x1b[31mRED\\x1b[0m\\x9b2J\\x0dX\ny\\u202e"
    assert shown.split("\n")[0] in player.output  # the name as the client shows it
    for control in ("\x1b", "\x07", "\x9b", "\r", "\u202e"):
        assert control not in player.output, player.output


async def test_an_opponent_s_progress_counts_its_moves_in_good_english(
    server_url: str, tmp_path: Path
) -> None:
    """`progress olga 0/52 resigned (1 moves)`: one move is `1 move`."""
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    opponent: Opponent | None = None
    try:
        await player.expect("connected to")
        await player.send("create klondike 2 120")
        race_id = RaceId((await player.expect("created")).split()[1])
        opponent = await Opponent.open(server_url, "olga")
        await opponent.session.join_race(race_id)
        await player.expect("race started")
        assert (await opponent.session.move(race_id, "deal")).ok
        await opponent.session.resign(race_id)  # a line comes when the state changes
        assert await player.expect("progress olga") == "progress olga 0/52 playing (0 moves)"
        assert await player.expect("progress olga") == "progress olga 0/52 resigned (1 move)"
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
        if opponent is not None:
            await opponent.close()
