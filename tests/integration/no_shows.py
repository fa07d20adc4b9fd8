"""The set-up of the no-show tests on a real node (test_round_robin_no_show.py,
test_swiss_no_show.py): a tournament whose player `GHOST` joins and goes before the start."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    TournamentView,
    WatchTournament,
)
from tests.integration.conftest import ServerFactory
from tests.integration.test_tournaments import FAST, admin_act, connect, create
from tests.integration.wsclient import Client

GHOST = "ghost"


class Started(NamedTuple):
    """The director watching, each player's client and id by name, and the director's first
    view with a round in it."""

    admin: Client
    clients: dict[str, Client]
    ids: dict[str, PlayerId]
    running: TournamentView


@asynccontextmanager
async def started_without_the_ghost(
    start_server: ServerFactory, fmt: str, names: Sequence[str], **options: Any
) -> AsyncIterator[Started]:
    """A node (`FAST`); a tournament of `fmt` (`options` for its creation) that a client for
    each of `names` joins in that order (seeded so); `GHOST`, one of them, closes his
    connection; then the director starts it. Every client is closed after the block."""
    assert GHOST in names
    app = await start_server(**FAST)
    admin = await connect(app, "director")
    clients = {name: await connect(app, name) for name in names}
    ids = {name: client.player_id for name, client in clients.items()}
    try:
        view = await create(admin, fmt, **options)
        tid = view.tournament_id
        await admin.send(WatchTournament(tournament_id=tid))
        await admin.expect(TournamentView)
        for name in names:
            await clients[name].send(JoinTournament(tournament_id=tid))
            await clients[name].expect(TournamentView)
        await clients[GHOST].close()
        await admin.send(admin_act(tid, "start"))
        running = await admin.expect(TournamentView, lambda m: m.tournament.rounds)
        yield Started(admin, clients, ids, running)
    finally:
        for client in (admin, *clients.values()):
            await client.close()
