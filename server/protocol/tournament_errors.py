"""Ids and the one error hierarchy of tournaments, pairing and ratings.

Every error is a `ValueError` whose message says what a tournament admin (or player) can do
about it; a refused request changes nothing.
"""

from __future__ import annotations

from typing import NewType

from .ids import PlayerId  # re-exported (see `__all__`): its home was here

MatchId = NewType("MatchId", str)
"""A match inside one tournament, e.g. ``W1-3`` or ``R2-1``; stable across restarts."""

TournamentId = NewType("TournamentId", str)


class TournamentError(ValueError):
    """Base of every refusal by the tournament, pairing and rating modules."""


class InvalidSettingsError(TournamentError):
    """The tournament settings cannot work (e.g. a heat size smaller than two)."""


class WrongPhaseError(TournamentError):
    """The request does not fit the tournament's current phase (e.g. joining after the start)."""


class NotAdminError(TournamentError):
    """Only the tournament's admin may do this."""


class UnknownPlayerError(TournamentError):
    """The player is not registered in this tournament (or already dropped out)."""


class UnknownMatchError(TournamentError):
    """No such match, or no such race in the match."""


class InvalidResultError(TournamentError):
    """A race result that does not list exactly the match's players, or has bad card counts."""


class CorrectionRefusedError(TournamentError):
    """A result correction that would rewrite a round on which later rounds already depend."""


class PairingError(TournamentError):
    """Pairing cannot be made with these players (e.g. fewer than two)."""


class RatingError(TournamentError):
    """A rated result that cannot be applied (e.g. a player listed twice)."""


__all__ = [
    "CorrectionRefusedError",
    "InvalidResultError",
    "InvalidSettingsError",
    "MatchId",
    "NotAdminError",
    "PairingError",
    "PlayerId",
    "RatingError",
    "TournamentError",
    "TournamentId",
    "UnknownMatchError",
    "UnknownPlayerError",
    "WrongPhaseError",
]
