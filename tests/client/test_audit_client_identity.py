"""A `--server` with a mistyped path: a solrace server answers on every path, so the same
server comes under another identity key, where the player's own name is `name_taken`."""

from __future__ import annotations

import pytest

from solrace.client.identity import IdentityError, connect_player, identity_file

from .test_identity import player_of


async def test_name_taken_under_another_url_of_the_server_names_the_url_with_the_token(
    server_url: str,
) -> None:
    """It said only that `identity.json` has no token for the name there, as if someone else
    had taken it. (A mistyped path is refused by the server itself now, with a 404; a query
    the server ignores still reaches it under another URL.)"""
    await player_of(server_url, "alice")
    typo = f"{server_url}/?room=1"
    with pytest.raises(IdentityError) as refused:
        await connect_player(typo, typo, "alice")
    assert str(refused.value) == (
        f"name_taken: 'alice' belongs to someone else on the server at {typo} and "
        f"{identity_file()} has no token for it (it has one for 'alice' at {server_url}: is "
        "--server mistyped?); choose another --name"
    )


async def test_name_taken_with_no_token_at_that_host_and_port_has_no_such_hint(
    server_url: str,
) -> None:
    await player_of(server_url, "alice")
    other = server_url.replace("127.0.0.1", "localhost")  # another host: no hint
    with pytest.raises(IdentityError) as refused:
        await connect_player(other, other, "alice")
    assert "mistyped" not in str(refused.value)
    assert str(refused.value).endswith("has no token for it; choose another --name")
