"""Standard competition ranking ("1, 2, 2, 4"), shared by race results and tournament standings.

Tied entries share the best of the places they cover, and the entry after them is placed as if
they had not tied: its rank is one more than the number of entries ahead of it. Races, heats and
brackets all rank this way, so a player placed third is always behind exactly two others.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["competition_ranks"]


def competition_ranks(keys: Sequence[object]) -> list[int]:
    """The rank of each entry, given the keys that order them, listed best first (as sorted):
    an entry whose key equals the one before it ties with it and shares its rank; any other
    entry's rank is its position counting from 1 (``[5, 7, 7, 9]`` -> ``[1, 2, 2, 4]``)."""
    ranks: list[int] = []
    for position, key in enumerate(keys):
        ranks.append(ranks[-1] if position and keys[position - 1] == key else position + 1)
    return ranks
