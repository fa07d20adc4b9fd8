"""The engine's exceptions: one small hierarchy, every message actionable by a player."""

from __future__ import annotations


class EngineError(ValueError):
    """Base class of every error the rules engine raises."""


class UnknownGameError(EngineError):
    """The game id is not in the registry."""


class InvalidGameNumberError(EngineError):
    """The game number is not one PySolFC accepts."""


class InvalidCardError(EngineError):
    """A card text does not parse (expected rank then suit, e.g. ``TD``)."""


class InvalidPositionError(EngineError):
    """A position given as pile texts (``Game.from_piles``) is not a board of its game: a pile
    the game does not have, or face-down cards lying over face-up ones."""


class InvalidMoveError(EngineError):
    """A move text does not parse; nothing about the position is implied."""


class IllegalMoveError(EngineError):
    """A well-formed move that the rules refuse in this position."""


class NothingToUndoError(EngineError):
    """``undo()`` was called on a board with no move played."""
