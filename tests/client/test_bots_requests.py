"""A bot's requests against a real server on loopback: the answer it waits for is the one to
its own request, not some other message about a race it knew already."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

import pytest

from solrace.client.bots import Bot, BotRefusedError, first_open_race
from solrace.client.connection import Connection
from solrace.client.session import Session
from solrace.client.strategy import make_strategy
from solrace.server.app import App
from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Error, RaceStarted, Resign, ServerMessage, Sync

#: Makes one message about the bot's finished race `race_id` be on its way to the bot.
LateMessage = Callable[[Bot, RaceId], Awaitable[None]]


async def move_sent_as_the_race_ended(bot: Bot, race_id: RaceId) -> None:
    # A move in flight when the race ended (by its clock, say): its refusal comes after the end.
    await bot.conn.send_move(race_id, "deal")


async def resync(bot: Bot, race_id: RaceId) -> None:
    # A resync of the race (a link back after a drop): the answer is the race's snapshot.
    await bot.conn.send(Sync(race_id=race_id))


async def resign_sent_again(bot: Bot, race_id: RaceId) -> None:
    # A resign sent again (the first went out on a link that dropped): refused, the race is
    # over. An error, but not the create's: the create goes on.
    await bot.conn.send(Resign(race_id=race_id))


@contextlib.asynccontextmanager
async def bot_and_rival(url: str, max_moves: int) -> AsyncIterator[tuple[Bot, Session]]:
    """A bot allowed `max_moves` a race, and a rival player's running session, both said
    hello on the server at `url`."""
    bot = Bot(url, "maker", make_strategy("greedy", max_moves=max_moves), delay_s=0)
    rival_conn = Connection(url, name="rival")
    await bot.connect()
    await rival_conn.connect()
    try:
        async with Session.running(rival_conn) as rival:
            yield bot, rival
    finally:
        await bot.close()
        await rival_conn.close()


async def race_started_against(bot: Bot, rival: Session, **options: object) -> RaceId:
    """A 2-seat Klondike race the bot creates and the rival joins: started."""
    race_id = await bot.create("klondike", 2, 600, **options)
    started = rival.expect(partial(is_start_of, race_id))
    await rival.join_race(race_id)  # the last seat: the race starts
    await started
    return race_id


def is_start_of(race_id: RaceId, message: object) -> bool:
    return isinstance(message, RaceStarted) and message.race_id == race_id


@pytest.mark.parametrize("late", [move_sent_as_the_race_ended, resync, resign_sent_again])
async def test_a_bot_creating_its_next_race_ends_up_in_that_race(
    server_app: App, server_url: str, late: LateMessage
) -> None:
    """A bot plays races back to back: one it created and finished, then a new one. A message
    about the old race (which names this bot its creator) that arrives before the server's
    answer to the new create was taken for that answer: the bot went back to its old race."""
    async with bot_and_rival(server_url, max_moves=0) as (bot, rival):
        old = await race_started_against(bot, rival)
        await rival.resign(old)
        result = await bot.play()  # no move allowed: the bot resigns, the race ends
        assert result.race_id == old and result.state == "resigned", result
        assert bot.race is not None and bot.race.status == "finished"

        await late(bot, old)
        new = await bot.create("klondike", 2, 600)

        assert new != old
        assert bot.race_id == new
        record = server_app.hub.races[new].race
        assert record.creator == bot.state.player_id
        assert bot.state.player_id in record.racers


async def test_a_bots_refused_requests_say_the_code(server_url: str) -> None:
    """The server's error for the request itself is the answer: a create refused raises with
    its code; leaving a race the bot does not sit in is no seat to leave."""
    bot = Bot(server_url, "maker", make_strategy("greedy"))
    other = Bot(server_url, "other", make_strategy("greedy"))
    await bot.connect()
    await other.connect()
    try:
        with pytest.raises(BotRefusedError, match=r"^maker: .+ \(invalid_settings\)$") as refused:
            await bot.create("klondike", 99, 600)
        assert refused.value.code == "invalid_settings"
        assert await bot.created_race(0.5) is None  # refused: no race was made
        race_id = await other.create("klondike", 2, 600)
        assert await bot.leave(race_id) is False
        assert await first_open_race(bot) == race_id
        assert await bot.created_race(0.5) is None  # another's race is not this bot's
    finally:
        await bot.close()
        await other.close()


async def test_a_bot_joining_a_race_it_sits_in_takes_its_seat_back(
    server_app: App, server_url: str
) -> None:
    """A join the server refuses as `already_joined` (the seat of an earlier run, say) is a
    resume: the bot syncs the race and follows it. Any other refusal still raises."""
    bot = Bot(server_url, "joiner", make_strategy("greedy"))
    other = Bot(server_url, "other", make_strategy("greedy"))
    await bot.connect()
    await other.connect()
    errors: list[str] = []

    def note(message: ServerMessage) -> None:
        if isinstance(message, Error):
            errors.append(message.code)

    bot.on_message = note
    try:
        race_id = await other.create("klondike", 3, 600)
        await bot.join(race_id)
        bot.race_id = None  # as a new run of the bot, which follows no race yet
        await bot.join(race_id)  # already seated: taken back, not refused
        assert errors == [ErrorCode.ALREADY_JOINED.value]
        assert bot.race_id == race_id
        assert bot.race is not None and bot.state.player_id in bot.race.racers
        assert len(server_app.hub.races[race_id].race.racers) == 2
        said = r"^joiner: no live race 'rgone' \(unknown_race\)$"
        with pytest.raises(BotRefusedError, match=said) as refused:
            await bot.join(RaceId("rgone"))
        assert refused.value.code == ErrorCode.UNKNOWN_RACE
    finally:
        await bot.close()
        await other.close()


async def test_a_bot_s_move_cap_and_memory_count_per_race(server_url: str) -> None:
    """A bot playing races back to back (a tournament's, say) starts each with its whole move
    cap and no positions seen: it used to carry them over, so a bot that had used its cap
    resigned every later race at once."""
    async with bot_and_rival(server_url, max_moves=3) as (bot, rival):
        results = []
        for _ in range(2):
            race_id = await race_started_against(bot, rival, game_number="7")
            await rival.resign(race_id)
            async with asyncio.timeout(30):  # it used to wait for good on the second
                results.append(await bot.play())  # 3 moves, then the cap: it resigns
    assert [(r.moves, r.reason) for r in results] == [(3, "move cap of 3 reached")] * 2
