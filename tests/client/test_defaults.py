"""What the client assumes without `--server`, and the commands it tells the user to paste."""

from __future__ import annotations

from solrace.client.defaults import DEFAULT_SERVER_URL, tournament_command


def test_a_tournament_command_names_the_server_unless_it_is_the_default() -> None:
    """A hint without `--server` sent the player of another server to the default one."""
    assert tournament_command(DEFAULT_SERVER_URL, "play t1") == "solrace tournament play t1"
    assert tournament_command(f"{DEFAULT_SERVER_URL}/", "play t1") == "solrace tournament play t1"
    assert (
        tournament_command("ws://127.0.0.1:9000", "leave t1")
        == "solrace tournament --server ws://127.0.0.1:9000 leave t1"
    )
