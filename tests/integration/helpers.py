"""Shared steps of the integration tests: create a race, seat players, play moves."""

from __future__ import annotations

import asyncio

from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    Board,
    CreateRace,
    JoinRace,
    MakeMove,
    MoveAck,
    MoveRejected,
    RaceStarted,
    RaceUpdate,
)
from tests.integration.wsclient import Client


async def create_race(
    creator: Client,
    *,
    game: str = "klondike",
    seats: int = 2,
    time_limit_s: int = 600,
    game_number: str | None = "1",
    rated: bool = False,
    invite_code: str | None = None,
) -> RaceId:
    await creator.send(
        CreateRace(
            game=game,
            seats=seats,
            time_limit_s=time_limit_s,
            rated=rated,
            game_number=game_number,
            invite_code=invite_code,
        )
    )
    update = await creator.expect(
        RaceUpdate, lambda m: m.race.creator == creator.player_id and m.version == 1
    )
    return update.race_id


async def seat_and_start(race_id: str, joiners: list[Client], everyone: list[Client]) -> None:
    """Join until the race is full; it starts by itself (countdown 0 in tests)."""
    for joiner in joiners:
        await joiner.send(JoinRace(race_id=race_id))
    for each in everyone:
        await each.expect(RaceStarted, lambda m: m.race_id == race_id)
        await each.expect(
            Board, lambda m, c=each: m.race_id == race_id and m.player_id == c.player_id
        )


async def start_race(creator: Client, joiners: list[Client], **options: object) -> RaceId:
    race_id = await create_race(creator, seats=1 + len(joiners), **options)  # type: ignore[arg-type]
    await seat_and_start(race_id, joiners, [creator, *joiners])
    return race_id


async def play(client: Client, race_id: str, moves: list[str], first_seq: int = 1) -> list[MoveAck]:
    """Play moves one by one, each acknowledged before the next."""
    acks = []
    for offset, move in enumerate(moves):
        seq = first_seq + offset
        await client.send(MakeMove(race_id=race_id, seq=seq, move=move))
        acks.append(
            await client.expect(MoveAck, lambda m, s=seq: m.seq == s and m.race_id == race_id)
        )
    return acks


async def refused(client: Client, race_id: str, seq: int, move: str) -> MoveRejected:
    await client.send(MakeMove(race_id=race_id, seq=seq, move=move))
    return await client.expect(MoveRejected, lambda m: m.seq == seq and m.race_id == race_id)


async def http_get(port: int, path: str) -> bytes:
    """The server's whole answer to a plain `GET path` on the WebSocket port (healthz,
    metrics), read until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    async with asyncio.timeout(10):
        raw = await reader.read()
    writer.close()
    await writer.wait_closed()
    return raw
