"""Bots in tournaments: join (and check in), then play every race the server seats the bot in
until the tournament is over. Used by `solrace tournament bots` and the end-to-end tests."""

from __future__ import annotations

import asyncio

from solrace.server.protocol.messages import Error, Sync
from solrace.server.protocol.tournament_messages import (
    CheckIn,
    JoinTournament,
    TournamentModel,
    TournamentView,
    WatchTournament,
)

from .bots import Bot, BotError
from .connection import LinkStatus, StatusChange

IDLE_TIMEOUT_S = 120.0


def _race_to_play(bot: Bot, played: set[str]) -> str | None:
    me = bot.state.player_id
    for race_id, race in bot.state.races.items():
        if race_id in played or me is None or me not in race.racers or race.is_finished:
            continue
        return race_id
    return None


async def play_tournament(
    bot: Bot, tournament_id: str, *, join: bool = True, idle_timeout_s: float = IDLE_TIMEOUT_S
) -> TournamentModel:
    """Run one (connected) bot through a tournament; returns its final view."""
    if join:
        await bot.conn.send(JoinTournament(tournament_id=tournament_id))
    await bot.conn.send(WatchTournament(tournament_id=tournament_id))
    for active in bot.state.active_races:  # back after a restart or a lost link
        await bot.conn.send(Sync(race_id=active))
    me = bot.state.player_id
    view: TournamentModel | None = None
    checked_in = False
    played: set[str] = set()
    while True:
        race_id = _race_to_play(bot, played)
        if race_id is not None:
            played.add(race_id)
            bot.follow(race_id)
            await bot.play()
            continue
        if view is not None and view.phase == "finished":
            return view
        try:
            incoming = await asyncio.wait_for(bot.conn.recv(), idle_timeout_s)
        except TimeoutError:
            raise BotError(f"{bot.name}: nothing from tournament {tournament_id}") from None
        if isinstance(incoming, StatusChange):
            if incoming.status is LinkStatus.CLOSED:
                raise BotError(f"{bot.name}: connection closed ({incoming.detail})")
            if incoming.status is LinkStatus.CONNECTED:  # a new session: watch again
                await bot.conn.send(WatchTournament(tournament_id=tournament_id))
            continue
        bot.state.apply(incoming)
        if isinstance(incoming, Error) and incoming.request in ("join_tournament", "check_in"):
            raise BotError(f"{bot.name}: {incoming.code}: {incoming.message}")
        if isinstance(incoming, TournamentView) and incoming.tournament.tournament_id == (
            tournament_id
        ):
            view = incoming.tournament
            wants_check_in = view.phase == "check_in" and me not in view.checked_in
            if wants_check_in and not checked_in:
                checked_in = True
                await bot.conn.send(CheckIn(tournament_id=tournament_id))
