"""A request the server refused, said the same way by every command (`solrace play`,
`solrace bot`, ...): the server's words, its code in brackets, then what to do about it."""

from __future__ import annotations

from typing import Final

from solrace.server.protocol.errors import ErrorCode
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.race import STATUS_PHRASES
from solrace.server.protocol.records import RaceStatus

from .defaults import server_option


def refusal_text(code: str, message: str) -> str:
    """`no live race 'r1' (unknown_race)`: the server's words, then its code."""
    return f"{message} ({code})"


#: How the server ends its `unknown_race` of a race finished long enough ago to be out of its
#: memory (`race_requests._not_held_text`): the protocol's request, not a command.
_REPLAY_THERE: Final = "its replay is there to fetch (get_replay)"


def join_refusal_message(code: str, message: str, race_id: RaceId, server: str) -> str:
    """The server's words for a join it refused; for a race past its start (`wrong_status`),
    what to do instead: watch it, or replay it once it has finished (a race just over: replay
    it; a cancelled one: nothing); for a race finished long ago (`unknown_race`, 'its replay
    is there to fetch (get_replay)'), the command that replays it."""
    where = f"{race_id}{server_option(server)}"
    if code == ErrorCode.UNKNOWN_RACE and message.endswith(_REPLAY_THERE):
        return f"{message.removesuffix(_REPLAY_THERE)}'solrace replay {where}' shows it"
    if code != ErrorCode.WRONG_STATUS:
        return message
    if message == STATUS_PHRASES[RaceStatus.FINISHED]:  # just over, still in memory
        return f"{message}: 'solrace replay {where}' shows it"
    if message == STATUS_PHRASES[RaceStatus.CANCELLED]:
        return message
    return (
        f"{message}: only a race not started yet can be joined (solrace watch {where} while it "
        f"runs, solrace replay {where} once it has finished)"
    )


def token_refused_text(where: str, name: str, refused: Exception) -> str:
    """A saved token the server refused (4001, e.g. after its secret changed), as `play` and
    `bot` say it: `the server at URL refused the token saved for 'ann' (...)`."""
    return f"{where} refused the token saved for {name!r} ({refused})"


def invite_hint(code: str, *, invite_given: bool) -> str:
    """What to do about a private race's refusal (`bad_invite`) of the race a command line
    joins: nothing for another refusal."""
    if code != ErrorCode.BAD_INVITE:
        return ""
    return "; check the --invite code" if invite_given else "; give it with --invite CODE"


__all__ = ["invite_hint", "join_refusal_message", "refusal_text", "token_refused_text"]
