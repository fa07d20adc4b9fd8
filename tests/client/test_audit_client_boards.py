"""Boards from the server that are no board of their game (an unknown game, a pile the game
does not have, a card that does not parse), whole or as a move's changed piles: the client
ignores them, keeps the board it had and says so, on the play screen and in the line mode.
Such a board crashed the play screen (a traceback) and such an ack stopped the session's
reader (the screen froze)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.screens import RaceScreen
from solrace.client.session import Session
from solrace.client.state import ClientState
from solrace.client.strategy import make_strategy
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.engine import BoardView, deal, view
from solrace.server.protocol.codec import encode_raw, unpack_map
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board, MoveAck, PileModel
from solrace.server.protocol.views import board_model
from solrace.tasks import cancel_and_wait
from tests.waiting import eventually

from .conftest import widget
from .process import Child

Frame = dict[str, Any]
#: Changes one frame from the server into a hostile one, or None to pass it on as it is.
Tamper = Callable[[Frame], Frame | None]

ME = PlayerId("palice0000000")
RACE = RaceId("r0000000001")


def a_board(**changes: Any) -> Board:
    """alice's board of a klondike deal, its `BoardModel` fields changed by `changes`."""
    board = view(deal("klondike", "1"), "player")
    assert isinstance(board, BoardView)
    model = board_model(board)
    return Board(
        race_id=RACE,
        player_id=ME,
        ply=0,
        delayed_ms=0,
        board=model.model_copy(update=changes),
    )


def bad_piles(kind: str) -> list[PileModel]:
    """Piles that make a klondike board none: a pile it lacks, or a card that does not parse."""
    if kind == "pile":
        return [PileModel(name="tableau[9]", down=0, cards=["AS"])]
    return [PileModel(name="tableau[0]", down=0, cards=["XX"])]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"game": "nosuchgame"}, "unknown game 'nosuchgame'"),
        ({"piles": bad_piles("pile")}, "klondike has no pile 'tableau[9]'"),
        ({"piles": bad_piles("card")}, "'XX'"),
    ],
    ids=["game", "pile", "card"],
)
def test_a_board_of_no_game_is_ignored_and_the_board_kept(
    changes: dict[str, Any], said: str
) -> None:
    state = ClientState(player_id=ME)
    state.apply(a_board())
    kept = state.my_board(RACE)
    state.apply(a_board(**changes))
    race = state.races[RACE]
    assert state.my_board(RACE) is kept
    assert race.unusable is not None
    assert race.unusable.startswith(f"ignored a board of {ME} from the server: ")
    assert said in race.unusable
    state.apply(a_board())  # a board that can be used: old news
    assert race.unusable is None


@pytest.mark.parametrize("kind", ["pile", "card"])
def test_an_ack_whose_piles_make_no_board_is_ignored_and_the_board_kept(kind: str) -> None:
    state = ClientState(player_id=ME)
    state.apply(a_board())
    kept = state.my_board(RACE)
    ack = MoveAck(
        race_id=RACE,
        seq=1,
        ply=0,
        move="deal",
        at_ms=0,
        piles=bad_piles(kind),
        on_foundations=0,
        total=52,
        won=False,
        stuck=False,
    )
    state.apply(ack)
    race = state.races[RACE]
    assert state.my_board(RACE) is kept
    assert race.plies[ME] == 0
    assert race.unusable is not None
    assert race.unusable.startswith("ignored the ack of deal from the server: ")


# --- against the real server, through a relay that spoils one frame ------------------------


@dataclass
class SpoilingRelay:
    """Passes frames between clients and the real server at `upstream`, but the first frame
    from the server that `tamper` changes goes on changed (once for all connections). With
    `held`, the client's frames from its first `sync` after that on wait until it is set."""

    upstream: str
    tamper: Tamper
    spoiled: list[Frame] = field(default_factory=list)
    held: asyncio.Event | None = None

    def _down(self, data: bytes | str) -> bytes | str:
        if self.spoiled or isinstance(data, str):
            return data
        changed = self.tamper(unpack_map(data))
        if changed is None:
            return data
        self.spoiled.append(changed)
        return encode_raw(changed)

    def _holds(self, data: bytes | str) -> bool:
        """Does the client's frame `data` wait for `held`?"""
        if self.held is None or self.held.is_set() or not self.spoiled:
            return False
        return isinstance(data, bytes) and unpack_map(data).get("type") == "sync"

    async def _relay(self, ws: ServerConnection) -> None:
        async with connect(self.upstream, max_size=None, compression=None) as up:

            async def down() -> None:
                async for data in up:
                    await ws.send(self._down(data))

            async def upward() -> None:
                async for data in ws:
                    if self._holds(data):
                        assert self.held is not None
                        await self.held.wait()
                    await up.send(data)

            tasks = [asyncio.create_task(down()), asyncio.create_task(upward())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            except ConnectionClosed:
                pass
            finally:
                await cancel_and_wait(tasks)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on a loopback port from the OS; its URL."""
        async with serve(self._relay, "127.0.0.1", 0, max_size=None, compression=None) as server:
            yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def junk_first_board(frame: Frame) -> Frame | None:
    """The first `board`, its piles one klondike does not have."""
    if frame.get("type") != "board":
        return None
    board = {**frame["board"], "piles": [{"name": "zz", "down": 0, "cards": ["??"]}]}
    return {**frame, "board": board}


def junk_first_ack(frame: Frame) -> Frame | None:
    """The first `move_ack`, its changed piles one klondike does not have."""
    if frame.get("type") != "move_ack":
        return None
    return {**frame, "piles": [{"name": "t0", "down": 0, "cards": ["AS"]}]}


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (junk_first_board, "ignored a board of alice from the server: klondike has no pile 'zz'"),
        (junk_first_ack, "ignored the ack of deal from the server: klondike has no pile 't0'"),
    ],
    ids=["board", "ack"],
)
async def test_the_play_screen_says_a_board_it_ignored_and_plays_on(
    server_url: str, tamper: Tamper, said: str
) -> None:
    """The screen keeps the board it had (none yet, for the first board) and says what it
    ignored; once the sync it sends then brings the server's board again (held back by the
    relay until the screen has been looked at), moves go on."""
    relay = SpoilingRelay(server_url, tamper, held=asyncio.Event())
    async with relay.running() as url:
        conn = Connection(url, name="alice", backoff_s=(0.05, 0.1))
        await conn.connect()
        conn.recv_nowait()
        session = Session(conn)
        pump = asyncio.create_task(session.pump())
        bot = Bot(server_url, "bob", make_strategy("greedy", seed=3), delay_s=5)
        await bot.connect()
        app = PlayApp(session)
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                app.create_race("klondike", 2, 600)
                await eventually(lambda: app.race_id is not None, what="race created")
                race_id = RaceId(app.race_id or "")
                await bot.join(race_id)
                await eventually(lambda: isinstance(app.screen, RaceScreen), what="race screen")
                screen = app.screen
                assert isinstance(screen, RaceScreen)
                message = await widget(screen, "#message", Static)
                race = session.state.races[race_id]
                me = PlayerId(session.me or "")
                board = await widget(screen, "#board", BoardWidget)
                if tamper is junk_first_ack:
                    await eventually(lambda: "t6" in board.text, what="the deal drawn")
                    await pilot.press("d")
                await eventually(lambda: str(message.render()) == said, what="the board ignored")
                assert race.plies.get(me, 0) == 0  # the board as it was
                assert relay.held is not None
                relay.held.set()  # the sync sent for the board ignored brings the board
                plies = 0 if tamper is junk_first_board else 1
                await eventually(lambda: race.plies.get(me) == plies, what="the board synced")
                await eventually(lambda: "t6" in board.text, what="the synced deal drawn")
                await pilot.press("d")
                await eventually(lambda: race.plies[me] == plies + 1, what="a deal after it")
                assert not pump.done()
        finally:
            await bot.close()
            await cancel_and_wait([pump])
            await conn.close()
    assert relay.spoiled
    assert app.return_code in (None, 0)


async def test_the_line_mode_says_an_ack_it_ignored(server_url: str, tmp_path: Path) -> None:
    relay = SpoilingRelay(server_url, junk_first_ack)
    async with relay.running() as url:
        player = await Child.start(tmp_path, "play", "--plain", "--server", url, "--name", "pat")
        bot: Child | None = None
        try:
            await player.expect("connected to")
            await player.send("create klondike 2 120")
            race_id = (await player.expect("created")).split()[1]
            bot = await Child.start(
                tmp_path, "bot", "--server", server_url, "--race", race_id, "--delay", "5"
            )
            await player.send("deal")
            await player.expect(
                "error: ignored the ack of deal from the server: klondike has no pile 't0'"
            )
            await player.send("deal")
            await player.expect("ok deal")
            await player.send("quit")
            assert await player.finish() == 0
        finally:
            await player.kill()
            if bot is not None:
                await bot.kill()
