"""How this server sets a race up, as plain functions of its `Settings`: the checks of what a
client asks for (a game it runs, a time limit, seats, a deal it may name), the game number a
new race plays, and the record of a new open race (its countdown, grace and spectator delay,
and the commitment to its deal).

The hub uses them for `create_race`, the tournament service for a round's races.
"""

from __future__ import annotations

import random
import secrets

from solrace.engine import (
    GAME_IDS,
    InvalidGameNumberError,
    deal,
    parse_game_number,
    random_ranked_number,
)
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import CreateRace
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.settings import Settings


def check_race_settings(settings: Settings, game: str, time_limit_s: int) -> None:
    """Refuse a game this server does not run or a time limit outside its range."""
    if game not in GAME_IDS:
        raise RaceError(ErrorCode.UNKNOWN_GAME, f"games: {', '.join(GAME_IDS)}")
    low, high = settings.min_time_limit_s, settings.max_time_limit_s
    if not low <= time_limit_s <= high:
        raise RaceError(ErrorCode.INVALID_SETTINGS, f"time limit: {low}..{high} s")


def check_create_race(settings: Settings, message: CreateRace) -> None:
    """Refuse a `create_race` whose race this server does not set up: its game or time limit
    (`check_race_settings`), seats outside 2..`max_seats`, or a rated race with a named deal.
    The game number itself is read later (`game_number_of`)."""
    check_race_settings(settings, message.game, message.time_limit_s)
    if not 2 <= message.seats <= settings.max_seats:
        raise RaceError(ErrorCode.INVALID_SETTINGS, f"seats: 2..{settings.max_seats}")
    if message.rated and message.game_number is not None:
        raise RaceError(ErrorCode.INVALID_SETTINGS, "a rated race's deal is always secret")


def game_number_of(message: CreateRace, rng: random.Random) -> str:
    """The game number a `create_race` plays: a random ranked one (drawn from `rng`), or the
    one it names as one writes it (`-5` is deal 5, as in PySolFC), which is what everyone is
    shown; `RaceError(INVALID_GAME_NUMBER)` for a number the game does not deal."""
    if message.game_number is None:
        return random_ranked_number(rng)
    try:
        deal(message.game, message.game_number)
        return parse_game_number(message.game_number).canonical
    except InvalidGameNumberError as exc:
        raise RaceError(ErrorCode.INVALID_GAME_NUMBER, str(exc)) from None


def new_race_record(
    settings: Settings,
    race_id: RaceId,
    *,
    game: str,
    game_number: str,
    seats: int,
    time_limit_s: int,
    rated: bool,
    invite_code: str | None,
    creator: PlayerId,
    now_ms: int,
    deal_held: bool = False,
    deal_chosen: bool = False,
) -> RaceRecord:
    """An open race's record as `settings` set races up: its countdown, grace and spectator
    delay (rated or casual), and a fresh salt for the commitment to its game number
    (`deal_held`: a tournament round's deal; `deal_chosen`: the creator named it)."""
    salt = secrets.token_hex(16)
    delay = settings.spectator_delay_rated_s if rated else settings.spectator_delay_casual_s
    return RaceRecord(
        race_id=race_id,
        game=game,
        seats=seats,
        time_limit_s=time_limit_s,
        rated=rated,
        invite_code=invite_code,
        game_number=game_number,
        salt=salt,
        commitment=commit(game, game_number, salt),
        creator=creator,
        status=RaceStatus.OPEN,
        created_at_ms=now_ms,
        countdown_ms=round(settings.countdown_s * 1000),
        grace_ms=round(settings.grace_s * 1000),
        spectator_delay_ms=round(delay * 1000),
        deal_held=deal_held,
        deal_chosen=deal_chosen,
    )


__all__ = ["check_create_race", "check_race_settings", "game_number_of", "new_race_record"]
