"""What the client assumes without `--server`, and the commands it tells the user to paste."""

from __future__ import annotations

from solrace.client.connection import Connection
from solrace.client.defaults import DEFAULT_SERVER_URL, tournament_command
from solrace.client.session import Session
from solrace.server.protocol.ids import RaceId


def test_a_tournament_command_names_the_server_unless_it_is_the_default() -> None:
    """A hint without `--server` sent the player of another server to the default one."""
    assert tournament_command(DEFAULT_SERVER_URL, "play t1") == "solrace tournament play t1"
    assert tournament_command(f"{DEFAULT_SERVER_URL}/", "play t1") == "solrace tournament play t1"
    assert (
        tournament_command("ws://127.0.0.1:9000", "leave t1")
        == "solrace tournament --server ws://127.0.0.1:9000 leave t1"
    )


def test_a_race_on_the_server_names_the_server_unless_it_is_the_default() -> None:
    # What the race screen and line mode paste after `solrace watch` / `solrace replay`.
    race = RaceId("r1")
    assert Session(Connection(DEFAULT_SERVER_URL)).race_on_server(race) == "r1"
    other = "ws://example.test:9000"
    assert Session(Connection(other)).race_on_server(race) == f"r1 --server {other}"
