"""Error codes carried by `error` and `move_rejected` replies, and the exceptions behind them.

Every refusal the server sends names one `ErrorCode`; the message next to it is for people.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Machine-readable reason of an `error` or `move_rejected` reply."""

    INVALID_MESSAGE = "invalid_message"
    HELLO_REQUIRED = "hello_required"
    ALREADY_IDENTIFIED = "already_identified"
    NAME_TAKEN = "name_taken"
    NAME_MISMATCH = "name_mismatch"
    IDENTITY_REQUIRED = "identity_required"
    UNKNOWN_RACE = "unknown_race"
    UNKNOWN_GAME = "unknown_game"
    INVALID_GAME_NUMBER = "invalid_game_number"
    INVALID_SETTINGS = "invalid_settings"
    BAD_INVITE = "bad_invite"
    RACE_FULL = "race_full"
    ALREADY_JOINED = "already_joined"
    WRONG_STATUS = "wrong_status"
    NOT_CREATOR = "not_creator"
    NOT_ENOUGH_PLAYERS = "not_enough_players"
    NOT_IN_RACE = "not_in_race"
    NOT_PLAYING = "not_playing"
    TIME_UP = "time_up"
    INVALID_MOVE = "invalid_move"
    ILLEGAL_MOVE = "illegal_move"
    SEQ_REUSED = "seq_reused"
    NOT_FINISHED = "not_finished"
    NOT_ALLOWED = "not_allowed"
    UNAVAILABLE = "unavailable"
    NOT_ADMIN = "not_admin"
    TOO_MANY_GUESSES = "too_many_guesses"
    UNKNOWN_TOURNAMENT = "unknown_tournament"
    UNKNOWN_PLAYER = "unknown_player"
    UNKNOWN_MATCH = "unknown_match"
    INVALID_RESULT = "invalid_result"
    CORRECTION_REFUSED = "correction_refused"


class ProtocolError(Exception):
    """Base of every error the sans-I/O layer raises."""


class DecodeError(ProtocolError):
    """A frame is not one msgpack map (answered by closing with 1007)."""


class SchemaError(ProtocolError):
    """A msgpack map that is not a valid message (answered by an `error` reply)."""

    def __init__(
        self, message: str, request_type: str | None = None, race_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.request_type = request_type
        #: The race the map names, when its `race_id` is a valid one (the reply names it too).
        self.race_id = race_id


class RaceError(ProtocolError):
    """A request the server refuses, answered by an `error` reply with `code`; nothing
    changed. Named for where it began (the race state machine), it is every service's
    refusal: races, identities, tournaments, ratings, and a store too far away to answer
    (`UNAVAILABLE`: the request may be sent again)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
