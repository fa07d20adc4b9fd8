"""Bots in tournaments: join (and check in), then play every race the server seats the bot in
until the tournament is over. Used by `solrace tournament bots` and the end-to-end tests.

The bot reads the tournament's phase from its state (every pushed view is folded in, also the
ones that arrive while it plays a race), watches the tournament again after every reconnect
(a new session on the server has no subscription), and asks for the view again when nothing
has come for `refresh_s` seconds, so a push it missed (another node, a lost link) cannot leave
it waiting for ever."""

from __future__ import annotations

import asyncio

from solrace.server.protocol.messages import Error, Sync
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    TournamentModel,
    WatchTournament,
)

from .bots import Bot, BotError
from .tournament_render import must_check_in

REFRESH_S = 10.0


def _race_to_play(bot: Bot, played: set[str]) -> str | None:
    me = bot.state.player_id
    for race_id, race in bot.state.races.items():
        if race_id in played or me is None or me not in race.racers or race.is_finished:
            continue
        return race_id
    return None


async def play_tournament(
    bot: Bot, tournament_id: str, *, join: bool = True, refresh_s: float = REFRESH_S
) -> TournamentModel:
    """Run one (connected) bot through a tournament; returns its final view."""
    if join:
        await bot.conn.send(JoinTournament(tournament_id=tournament_id))
    await bot.conn.send(WatchTournament(tournament_id=tournament_id))
    for active in bot.state.active_races:  # back after a restart or a lost link
        await bot.conn.send(Sync(race_id=active))
    me = bot.state.player_id
    checked_in = False
    played: set[str] = set()
    loop = asyncio.get_running_loop()
    reconnects = bot.reconnects
    last_view = loop.time()
    seen_version = -1
    while True:
        view = bot.state.tournaments.get(tournament_id)
        if view is not None and view.version != seen_version:
            seen_version = view.version
            last_view = loop.time()
            if must_check_in(view, me) and not checked_in:
                checked_in = True
                await bot.conn.send(CheckIn(tournament_id=tournament_id))
        if view is not None and view.phase == "finished":
            return view
        if bot.reconnects != reconnects:  # the link came back during a race: watch again
            reconnects = bot.reconnects
            await bot.conn.send(WatchTournament(tournament_id=tournament_id))
        race_id = _race_to_play(bot, played)
        if race_id is not None:
            played.add(race_id)
            bot.follow(race_id)
            await bot.play()
            continue
        wait = last_view + refresh_s - loop.time()
        if wait <= 0:  # nothing for a while: ask again (a missed push)
            last_view = loop.time()
            await bot.conn.send(WatchTournament(tournament_id=tournament_id))
            continue
        incoming = await bot.next_message(wait)  # views are read from the state at the top
        if isinstance(incoming, Error) and incoming.request in ("join_tournament", "check_in"):
            raise BotError(f"{bot.name}: {incoming.code}: {incoming.message}")
