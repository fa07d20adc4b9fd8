"""Race ids and invite codes a person types that the protocol does not take (too long, empty,
all blanks): refused in words, before connecting for an option, as the server's refusal of
the request once connected. They ended in a pydantic traceback (`play --race`, `bot --race`,
`join` in the line mode, Join in the lobby) or in pydantic's own lines (`replay`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Button, Input

from solrace.client.app import build_play_parser, build_watch_parser
from solrace.client.bot_args import build_parser as build_bot_parser
from solrace.client.lobby_screen import LobbyScreen
from solrace.client.session import RequestError, Session
from solrace.client.tui import PlayApp
from solrace.server.protocol.ids import RaceId
from tests.waiting import eventually

from .process import Child

LONG_ID = "r" * 33
LONG_CODE = "i" * 65
URL = "ws://127.0.0.1:1"


@pytest.mark.parametrize(
    ("parser", "argv", "said"),
    [
        (build_play_parser, ["--server", URL, "--race", LONG_ID], "argument --race: "),
        (build_play_parser, ["--server", URL, "--race", ""], "argument --race: "),
        (build_bot_parser, ["--server", URL, "--race", LONG_ID], "argument --race: "),
        (build_watch_parser, ["--server", URL, LONG_ID], "argument race: "),
        (
            build_play_parser,
            ["--server", URL, "--create", "klondike", "--invite", LONG_CODE],
            "argument --invite: ",
        ),
        (build_bot_parser, ["--server", URL, "--create", "klondike", "--invite", "  "], ""),
    ],
    ids=["play-long", "play-empty", "bot-long", "watch-long", "play-invite", "bot-invite"],
)
def test_an_option_the_protocol_does_not_take_is_refused_by_the_command_line(
    parser: Callable[[], argparse.ArgumentParser],
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert said in error
    expected = {
        LONG_ID: f"{LONG_ID!r} is no race id: at most 32 characters",
        "": "'' is no race id: at least 1 character",
        LONG_CODE: f"{LONG_CODE!r} is no invite code: at most 64 characters",
        "  ": "'  ' is no invite code: an invite code must not be empty or only spaces (or other"
        " characters drawn as nothing)",
    }[argv[-1]]
    assert error.endswith(expected)


async def test_a_session_refuses_a_race_id_too_long_as_the_server_would(alice: Session) -> None:
    with pytest.raises(RequestError) as refused:
        await alice.join_race(RaceId(LONG_ID))
    assert refused.value.code == "invalid_message"
    assert refused.value.message == "race id: at most 32 characters"
    with pytest.raises(RequestError) as refused:
        await alice.create_race("klondike", 2, 300, invite_code=LONG_CODE)
    assert refused.value.message == "invite code: at most 64 characters"
    with pytest.raises(RequestError) as refused:
        await alice.watch(RaceId(LONG_ID))
    assert refused.value.message == "race id: at most 32 characters"
    assert alice.closed is None and await alice.list_races() is not None  # the link is fine


async def test_the_line_mode_refuses_a_join_of_an_id_too_long_and_goes_on(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    try:
        await player.expect("connected to")
        await player.send(f"join {LONG_ID}")
        await player.expect("refused join: race id: at most 32 characters (invalid_message)")
        await player.send(f"join r1 {LONG_CODE}")
        await player.expect("refused join: invite code: at most 64 characters (invalid_message)")
        await player.send("list")
        await player.expect("no live races")
        await player.send("quit")
        assert await player.finish() == 0
        assert "Traceback" not in player.output
    finally:
        await player.kill()


async def test_the_lobby_refuses_a_join_of_an_id_too_long_and_goes_on(alice: Session) -> None:
    app = PlayApp(alice)

    def said(text: str) -> bool:
        return any(text in note.message for note in app._notifications)

    async with app.run_test(size=(100, 30)):
        await eventually(lambda: isinstance(app.screen, LobbyScreen), what="lobby")
        lobby = app.screen
        lobby.query_one("#join-id", Input).value = LONG_ID
        lobby.query_one("#join", Button).press()
        await eventually(
            lambda: said("race id: at most 32 characters"),
            what=f"the refusal in {[n.message for n in app._notifications]}",
        )
        assert app.race_id is None and isinstance(app.screen, LobbyScreen)
    assert app.return_code in (None, 0)


HUGE = 10**27  # more than a msgpack frame's 64 bits hold


async def test_a_number_too_big_for_a_frame_is_refused_not_a_traceback(alice: Session) -> None:
    """Seats or seconds typed as 28 digits ended in msgpack's `OverflowError` traceback."""
    with pytest.raises(RequestError) as refused:
        await alice.create_race("klondike", HUGE, 300)
    assert refused.value.message == f"seats: {HUGE} is too big to send"
    with pytest.raises(RequestError) as refused:
        await alice.create_race("klondike", 2, HUGE)
    assert refused.value.message == f"seconds: {HUGE} is too big to send"
    assert alice.closed is None and await alice.list_races() is not None


async def test_the_line_mode_and_a_bot_refuse_seats_too_big_for_a_frame(
    server_url: str, tmp_path: Path
) -> None:
    player = await Child.start(tmp_path, "play", "--plain", "--server", server_url, "--name", "pat")
    try:
        await player.expect("connected to")
        await player.send(f"create klondike {HUGE}")
        await player.expect(f"refused create: seats: {HUGE} is too big to send (invalid_message)")
        await player.send("quit")
        assert await player.finish() == 0
    finally:
        await player.kill()
    argv = ["bot", "--server", server_url, "--create", "klondike", "--time-limit", str(HUGE)]
    bot = await Child.start(tmp_path, *argv)
    try:
        assert await bot.finish() == 1
        assert f"seconds: {HUGE} is too big to send (invalid_message)" in bot.output
        assert "Traceback" not in bot.output
    finally:
        await bot.kill()
