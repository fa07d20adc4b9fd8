"""`Session.running`: the start-up every entry point shares, against a real server."""

from __future__ import annotations

import asyncio

import pytest

from solrace.client.connection import Connection
from solrace.client.session import Session


def pump_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "solrace-pump"]


async def test_running_applies_the_welcome_and_reaps_its_pump(server_url: str) -> None:
    conn = Connection(server_url, name="ann")
    welcome = await conn.connect()
    try:
        async with Session.running(conn) as session:
            assert session.me == welcome.player_id and session.state.name == "ann"
            [pump] = pump_tasks()
            assert await session.list_races() == []  # answers arrive through the pump
        assert pump.cancelled()  # cancelled and awaited: done when the block ends
        assert not pump_tasks()
    finally:
        await conn.close()


async def test_the_welcome_is_taken_once(server_url: str) -> None:
    conn = Connection(server_url, name="bob")
    welcome = await conn.connect()
    try:
        assert conn.take_welcome() == welcome
        with pytest.raises(RuntimeError, match="welcome is not next"):
            conn.take_welcome()
    finally:
        await conn.close()
