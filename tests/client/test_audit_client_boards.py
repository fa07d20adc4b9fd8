"""Boards from the server that are no board of their game (an unknown game, a pile the game
does not have, a card that does not parse), whole or as a move's changed piles: the client
ignores them, keeps the board it had and says so, on the play screen and in the line mode.
Such a board crashed the play screen (a traceback) and such an ack stopped the session's
reader (the screen froze)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from solrace.client.state import ClientState
from solrace.client.tui import PlayApp
from solrace.client.widgets import BoardWidget
from solrace.engine import BoardView, deal, view
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board, MoveAck, PileModel
from solrace.server.protocol.views import board_model
from tests.waiting import eventually

from .conftest import race_on_screen, widget
from .process import Child
from .spoiling import Player, Relay, Tamper, junk_ack, junk_board

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


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (junk_board, "ignored a board of alice from the server: klondike has no pile 'zz'"),
        (junk_ack, "ignored the ack of deal from the server: klondike has no pile 't0'"),
    ],
    ids=["board", "ack"],
)
async def test_the_play_screen_says_a_board_it_ignored_and_plays_on(
    server_url: str, tamper: Tamper, said: str
) -> None:
    """The screen keeps the board it had (none yet, for the first board) and says what it
    ignored; once the sync it sends then brings the server's board again (held back by the
    relay until the screen has been looked at), moves go on."""
    relay = Relay(server_url, tamper, held=asyncio.Event())
    async with relay.running() as url, Player.racing(url, server_url) as (player, bot):
        session = player.session
        app = PlayApp(session)
        async with app.run_test(size=(100, 30)) as pilot:
            race_id, screen = await race_on_screen(app, [bot])
            message = await widget(screen, "#message", Static)
            race = session.state.races[race_id]
            me = PlayerId(session.me or "")
            board = await widget(screen, "#board", BoardWidget)
            if tamper is junk_ack:
                await eventually(lambda: "t6" in board.text, what="the deal drawn")
                await pilot.press("d")
            await eventually(lambda: str(message.render()) == said, what="the board ignored")
            assert race.plies.get(me, 0) == 0  # the board as it was
            assert relay.held is not None
            relay.held.set()  # the sync sent for the board ignored brings the board
            plies = 0 if tamper is junk_board else 1
            await eventually(lambda: race.plies.get(me) == plies, what="the board synced")
            await eventually(lambda: "t6" in board.text, what="the synced deal drawn")
            await pilot.press("d")
            await eventually(lambda: race.plies[me] == plies + 1, what="a deal after it")
            assert not player.pump.done()
    assert relay.spoiled
    assert app.return_code in (None, 0)


async def test_the_line_mode_says_an_ack_it_ignored(server_url: str, tmp_path: Path) -> None:
    relay = Relay(server_url, junk_ack)
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
