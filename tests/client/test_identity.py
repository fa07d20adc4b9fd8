"""The identity kept in the config folder: a token per server, reused after a restart."""

from __future__ import annotations

from solrace.client.identity import (
    Identity,
    connect_player,
    default_name,
    load_identity,
    save_identity,
)


def test_save_and_load_round_trip() -> None:
    assert load_identity("ws://x") is None
    save_identity("ws://x", Identity("alice", "tok"))
    save_identity("ws://y", Identity("bob"))
    assert load_identity("ws://x") == Identity("alice", "tok")
    assert load_identity("ws://y") == Identity("bob", None)


def test_default_name_follows_the_server_rules() -> None:
    name = default_name()
    assert 1 <= len(name) <= 24
    assert all(c.isalnum() or c in "_.-" for c in name)


async def test_the_token_survives_a_client_restart(server_url: str) -> None:
    first = await connect_player(server_url, server_url, "alice")
    player = first.welcome.player_id if first.welcome else None
    await first.close()
    stored = load_identity(server_url)
    assert stored is not None and stored.token
    again = await connect_player(server_url, server_url, None)
    assert again.welcome is not None and again.welcome.player_id == player
    await again.close()


async def test_a_stale_token_falls_back_to_the_name(server_url: str) -> None:
    save_identity(server_url, Identity("zed", "v1.pgone.forged"))
    conn = await connect_player(server_url, server_url, None)
    assert conn.welcome is not None and conn.welcome.name == "zed"
    stored = load_identity(server_url)
    assert stored is not None and stored.token != "v1.pgone.forged"
    await conn.close()
