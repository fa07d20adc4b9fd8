"""What the program's end does to the races a player still holds (`solrace play` in its
line mode and on its screen, a tournament's play): one line per race, saying when its seat
is given up or the race forfeited, and how the player comes back to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from solrace.server.protocol.ids import PlayerId, RaceId

from .defaults import tournament_command
from .session import Session
from .state import RaceState

#: A live race's status as a sentence says it ("while it is counting down").
STATUS_WORDS: Final = {"countdown": "counting down"}


def line_mode_back(race_id: RaceId) -> str:
    """How a player of `solrace play --plain` comes back to a race it left."""
    return f"come back with 'join {race_id}' (or --race {race_id})"


def play_screen_back(race_id: RaceId) -> str:
    """How a player of `solrace play`'s screen comes back to a race it left."""
    return f"come back with solrace play (Ctrl+R resumes {race_id})"


def tournament_back(tournament_id: str, server: str) -> Callable[[RaceId], str]:
    """How a player of tournament `tournament_id` on `server` comes back to its race, from
    either mode."""

    def back(race_id: RaceId) -> str:
        return f"come back with '{tournament_command(server, 'play ' + tournament_id)}'"

    return back


def leaving_line(
    me: PlayerId | None, race: RaceState, back: Callable[[RaceId], str] = line_mode_back
) -> str | None:
    """What the program's end does to `race` for player `me` (the line mode's `quit`, the
    play screen's), or None if `me` holds no seat in it; `back` says how to come back."""
    if not race.is_live or me is None or me not in race.racers:
        return None
    if race.racers[me].state not in ("joined", "playing"):
        return None
    how_back = back(race.race_id)
    grace = "its grace period" if race.info is None else f"{race.info.grace_ms / 1000:g} s"
    if race.status == "open":
        return (
            f"leaving race {race.race_id} before its start: your seat is given up after "
            f"{grace} away unless you {how_back}"
        )
    status = STATUS_WORDS.get(race.status, race.status)
    return (
        f"leaving race {race.race_id} while it is {status}: you forfeit (gone) after "
        f"{grace} away unless you {how_back}"
    )


def held_race_lines(session: Session, back: Callable[[RaceId], str]) -> list[str]:
    """`leaving_line` of every live race the session's player still holds."""
    me = session.me
    lines = (leaving_line(me, race, back) for race in session.state.races.values())
    return [line for line in lines if line is not None]


__all__ = [
    "STATUS_WORDS",
    "held_race_lines",
    "leaving_line",
    "line_mode_back",
    "play_screen_back",
    "tournament_back",
]
