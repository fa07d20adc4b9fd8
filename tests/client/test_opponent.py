"""The bot `solrace play` seats as an opponent (`resign_when_alone`): it stops once the person
it races is out, and its resign reaches the server even when its link drops on the way or the
store cannot take it at first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from solrace.client import bots
from solrace.client.bots import Bot, BotResult
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Resign
from solrace.server.protocol.records import MoveRecord, RaceRecord, RacerState
from solrace.server.store import StoreError, StoreUnavailableError
from tests.waiting import eventually

from .conftest import server_settings

#: Messages a connection may send (the refill is too slow to matter here). The bot's hello,
#: join and first move spend it all: its resign is the message over budget, which the server
#: does not read (it closes the link). On the new link: hello, resync and the resign again.
#: It counts what `Connection` and `Bot` send on their own (hello, join, a move): if they come
#: to send more (a ping, a sync) the budget must follow, or the test checks something else.
BUDGET = 3


@pytest.fixture
async def strict_server(tmp_path: Path) -> AsyncIterator[str]:
    app = App(server_settings(tmp_path / "server", rate_capacity=BUDGET, rate_refill_per_s=0.001))
    await app.start()
    try:
        yield f"ws://127.0.0.1:{app.port}"
    finally:
        await app.stop()


async def race_the_bot(person: Bot, bot: Bot) -> tuple[RaceId, asyncio.Task[BotResult]]:
    """The person creates a 2-seat race on deal 1, the bot joins it (full: it starts after
    the countdown) and plays it in a task: the race id and the task."""
    await person.connect()
    await bot.connect()
    race_id = await person.create("klondike", 2, 600, game_number="1")
    await bot.join(race_id)
    return race_id, asyncio.create_task(bot.play())


async def test_a_resign_the_server_refused_is_sent_again_after_the_reconnect(
    strict_server: str,
) -> None:
    person = Bot(strict_server, "person", make_strategy("greedy"))  # hello, create, resign
    bot = Bot(
        strict_server,
        "opponent",
        make_strategy("greedy", seed=1),
        delay_s=60.0,
        resign_when_alone=True,
    )
    try:
        race_id, task = await race_the_bot(person, bot)
        me = PlayerId(bot.state.player_id or "")
        # One move, acknowledged; the next would wait a minute.
        await eventually(lambda: bot.race is not None and bot.race.plies.get(me) == 1, what="move")
        await person.conn.send(Resign(race_id=race_id))
        # Alone, the bot resigns: one message over its budget, lost with the link it closes.
        try:
            result = await asyncio.wait_for(task, 20)
        except TimeoutError:
            race = bot.race
            seen = None if race is None else {p: r.state for p, r in race.racers.items()}
            raise AssertionError(
                f"the race did not end: racers {seen}, reconnects {bot.reconnects}"
            ) from None
        assert bot.reconnects == 1  # the link the lost resign went out on
        assert result.state == "resigned"
        assert result.reason == "every other racer is out"
        race = bot.race
        assert race is not None and race.results is not None
        assert {r.player_id: r.state for r in race.results} == {
            person.state.player_id: "resigned",
            me: "resigned",
        }
    finally:
        await person.close()
        await bot.close()


async def test_a_resign_the_store_could_not_take_is_sent_again(server_app: App) -> None:
    url = f"ws://127.0.0.1:{server_app.port}"
    person = Bot(url, "person", make_strategy("greedy"))
    strategy = make_strategy("greedy", seed=1)
    bot = Bot(url, "opponent", strategy, delay_s=60.0, resign_when_alone=True)
    store = server_app.hub.store
    save = store.save_race_if
    refused: list[RaceRecord] = []

    async def refuse_the_bot_s_first_resign(race: RaceRecord, expected: RaceRecord | None) -> bool:
        me = bot.state.player_id
        if not refused and any(
            r.player_id == me and r.state is RacerState.RESIGNED for r in race.racers
        ):
            refused.append(race)
            raise StoreError("the store is away")
        return await save(race, expected)

    store.save_race_if = refuse_the_bot_s_first_resign  # type: ignore[method-assign]
    try:
        race_id, task = await race_the_bot(person, bot)
        me = PlayerId(bot.state.player_id or "")
        await eventually(lambda: bot.race is not None and bot.race.plies.get(me) == 1, what="move")
        await person.conn.send(Resign(race_id=race_id))
        result = await asyncio.wait_for(task, 20)  # refused once (unavailable), then stored
        assert len(refused) == 1
        assert result.state == "resigned" and bot.reconnects == 0
        race = bot.race
        assert race is not None and race.results is not None
        assert {r.player_id: r.state for r in race.results}[me] == "resigned"
    finally:
        await person.close()
        await bot.close()


async def test_moves_the_store_could_not_take_are_played_again(
    server_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move refused as `unavailable` changed nothing: the bot plays on after a pause
    instead of counting it among the refusals that make it resign (three in a row)."""
    monkeypatch.setattr(bots, "RESIGN_RETRY_S", 0.01)
    url = f"ws://127.0.0.1:{server_app.port}"
    person = Bot(url, "person", make_strategy("greedy"))
    bot = Bot(url, "mover", make_strategy("greedy", seed=1, max_moves=20), delay_s=0.0)
    store = server_app.hub.store
    append = store.append_move
    refused: list[MoveRecord] = []

    async def refuse_the_bot_s_first_moves(move: MoveRecord) -> None:
        if move.player_id == bot.state.player_id and len(refused) < 4:
            refused.append(move)
            raise StoreUnavailableError("the store is away")
        await append(move)

    store.append_move = refuse_the_bot_s_first_moves  # type: ignore[method-assign]
    try:
        race_id, task = await race_the_bot(person, bot)
        await eventually(lambda: len(refused) == 4, what="the refusals")
        await person.conn.send(Resign(race_id=race_id))  # the bot plays alone to its cap
        result = await asyncio.wait_for(task, 20)
        assert result.reason == "move cap of 20 reached"  # not "moves refused: ..."
        assert result.state == "resigned" and result.moves == 16  # the 4 refused: not stored
    finally:
        await person.close()
        await bot.close()
