"""The searches for a Swiss round's pairing without a rematch (pure, deterministic).

The search in standings order (`rematch_free_pairings`) gives every rematch-free pairing, best
first; looking ahead (`can_finish`) says whether the rounds left can still be paired without a
rematch after one. When the search in standings order finds none, a search that pairs the
hardest player first tries, else a pairing with few rematches is taken (`pair_at_last`). Each
search spends a budget of work for the whole round, so a round's planning is bounded whatever
the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from .tournament_errors import PlayerId

__all__ = [
    "AHEAD_BUDGET",
    "SEARCH_BUDGET",
    "can_finish",
    "pair_at_last",
    "pair_plainly",
    "rematch_free_pairings",
]

SEARCH_BUDGET = 200_000
"""Work allowed to the search for a rematch-free Swiss pairing in standings order, for all
the candidates for the bye together. A step of the search spends `_STEP_COST` and one unit
per player it has left to pair (its cost grows with them), so the budgets bound a round's
planning in time whatever the field. The planning runs on the event loop, in the change
that ends the round before: with these budgets the worst round measured of the biggest
fields took ~70 ms of CPU (bench/README.md, "Planning a Swiss round"). They count work,
not time, so a round is planned the same on every node and at every try."""

AHEAD_BUDGET = 200_000
"""Work allowed to looking ahead, for every pairing the search gives in a round together:
whether the rounds left after it can still be paired without a rematch (spent as the
search spends its budget)."""

_STEP_COST = 32
"""What a step of the search in standings order spends besides one per player left to pair
(a step with a few players left costs about as much as one with 32 more)."""

_HARDEST_FIRST_BUDGET = 600_000
"""Work allowed to the search that pairs the hardest player first, which `plan_swiss`
runs when the search in standings order finds no rematch-free pairing, for all the
candidates for the bye together. A step spends the players it has left to pair times the
players of the round (it counts, for each of them, the opponents left to meet)."""


def pair_at_last(
    order: Sequence[PlayerId], candidates: Sequence[PlayerId | None], met: set[frozenset[PlayerId]]
) -> tuple[list[tuple[PlayerId, PlayerId]], PlayerId | None]:
    """A pairing of `order` (best first) when the search in standings order found none
    without a rematch: a search that pairs first the player with the fewest opponents left
    to meet (often finding one where the other gave up), else few rematches (each player
    in turn meets the nearest he has not met, the nearest if none). The bye
    (odd count) to the first of `candidates` that leaves a rematch-free pairing, else the
    first. The searches of all the candidates share `_HARDEST_FIRST_BUDGET`."""
    budget = [_HARDEST_FIRST_BUDGET]
    free = _unmet(order, met)
    for candidate in candidates:
        if budget[0] < 0:
            break
        rest = [p for p in order if p != candidate]
        found = _pair_hardest_first(rest, free, budget)
        if found is not None:
            return found, candidate
    rest = [p for p in order if p != candidates[0]]
    pairs: list[tuple[PlayerId, PlayerId]] = []
    while rest:
        one = rest.pop(0)
        other = next((p for p in rest if frozenset((one, p)) not in met), rest[0])
        rest.remove(other)
        pairs.append((one, other))
    return pairs, candidates[0]


def _unmet(
    order: Sequence[PlayerId], met: set[frozenset[PlayerId]]
) -> dict[PlayerId, set[PlayerId]]:
    """Each player of `order` with the others of `order` he has not met."""
    seen: dict[PlayerId, set[PlayerId]] = {p: {p} for p in order}
    for pair in met:
        for player in pair:
            if player in seen:
                seen[player] |= pair
    everyone = set(order)
    return {p: everyone - seen[p] for p in order}


def _pair_hardest_first(
    order: Sequence[PlayerId], free: Mapping[PlayerId, set[PlayerId]], budget: list[int]
) -> list[tuple[PlayerId, PlayerId]] | None:
    """A pairing of `order` (best first) in which each player meets one of his `free` (the
    players he has not met), or None: the player with the fewest of them left to pair (the
    best-ranked on a tie) meets the nearest of those, backtracking on dead ends, while
    `budget` lasts (each step spends the players left to pair times the players of
    `order`: it counts, for each of them, the opponents left to meet)."""
    size = len(order)

    def pair(left: list[PlayerId]) -> list[tuple[PlayerId, PlayerId]] | None:
        if not left:
            return []
        budget[0] -= len(left) * size
        if budget[0] < 0:
            return None
        here = {p: i for i, p in enumerate(left)}
        one = min(left, key=lambda p: len(free[p] & here.keys()))
        mine = here[one]
        for other in sorted(free[one] & here.keys(), key=lambda q: (abs(here[q] - mine), here[q])):
            tail = pair([p for p in left if p not in (one, other)])
            if tail is not None:
                return [(one, other), *tail]
            if budget[0] < 0:
                return None
        return None

    return pair(list(order))


def pair_plainly(
    order: Sequence[PlayerId], met: set[frozenset[PlayerId]], had_bye: set[PlayerId]
) -> tuple[list[tuple[PlayerId, PlayerId]], PlayerId | None]:
    """`order` (best first) paired as a Swiss round without looking ahead: the bye (odd
    count) to the lowest-ranked player without one (of all, when everyone has had one),
    passed up when the others cannot be paired without a rematch (`pair_at_last` when
    none is found)."""
    candidates: list[PlayerId | None] = [None]
    if len(order) % 2:
        candidates = [p for p in reversed(order) if p not in had_bye] or [*reversed(order)]
    search = [SEARCH_BUDGET]  # for every candidate together
    for candidate in candidates:
        rest = [p for p in order if p != candidate]
        for option in rematch_free_pairings(rest, met, search):
            return option, candidate
    return pair_at_last(order, candidates, met)


def rematch_free_pairings(
    order: Sequence[PlayerId], met: set[frozenset[PlayerId]], budget: list[int]
) -> Iterator[list[tuple[PlayerId, PlayerId]]]:
    """Every pairing of `order` without a pair in `met`, best first: the best remaining
    player meets the nearest one he has not met, backtracking on dead ends. Each step spends
    `_STEP_COST` of `budget` and one more per player it has left to pair; none is given
    once it has run out."""
    if not order:
        yield []
        return
    budget[0] -= _STEP_COST + len(order)
    if budget[0] < 0:
        return
    first = order[0]
    for i in range(1, len(order)):
        other = order[i]
        if frozenset((first, other)) in met:
            continue
        rest = [*order[1:i], *order[i + 1 :]]
        for tail in rematch_free_pairings(rest, met, budget):
            yield [(first, other), *tail]
        if budget[0] < 0:  # out: the other partners would each be one more step refused
            return


def can_finish(
    seats: Sequence[PlayerId], met: set[frozenset[PlayerId]], rounds: int, budget: list[int]
) -> bool | None:
    """Whether `rounds` more rounds can pair `seats` without a pair in `met` or met in one of
    them; None when `budget` ran out before the search could tell."""
    if rounds <= 0:
        return True
    for pairs in rematch_free_pairings(seats, met, budget):
        found = can_finish(seats, met | {frozenset(pair) for pair in pairs}, rounds - 1, budget)
        if found is not False:
            return found
    return None if budget[0] < 0 else False
