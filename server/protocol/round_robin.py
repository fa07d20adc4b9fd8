"""Planning a round-robin round (pure, deterministic).

Circle method (seed 1 fixed, the others rotate); with an odd count one player sits out each
round (a bye, worth a win), as does the opponent of a player who dropped out (or was dropped
as a no-show). A Swiss of a big field set to many rounds takes its rounds from the same
schedule (`circle_round`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .tournament_errors import MatchId, PlayerId
from .tournament_model import Pairing, PlayedRound, RoundPlan

__all__ = ["circle_round", "plan_round_robin"]


def circle_round(
    seeds: Sequence[PlayerId], index: int
) -> list[tuple[PlayerId | None, PlayerId | None]]:
    """Round `index` (from 0) of the circle method over `seeds`: seed 1 stays, the others
    rotate one seat per round; with an odd count a dummy seat (None) makes one player sit
    out. Its len(seeds) - 1 rounds (len(seeds) if odd) pair everyone with everyone once."""
    circle: list[PlayerId | None] = [*seeds]
    if len(circle) % 2:
        circle.append(None)
    size = len(circle)
    rotating = circle[1:]
    shift = index % len(rotating)
    turned = [circle[0], *rotating[len(rotating) - shift :], *rotating[: len(rotating) - shift]]
    return [(turned[i], turned[size - 1 - i]) for i in range(size // 2)]


def plan_round_robin(
    seeds: Sequence[PlayerId], history: Sequence[PlayedRound], dropped: frozenset[PlayerId]
) -> RoundPlan | None:
    index = len(history)
    if index >= len(seeds) - 1 + len(seeds) % 2 or sum(p not in dropped for p in seeds) < 2:
        return None
    seed_of = {p: i for i, p in enumerate(seeds)}
    pairings: list[Pairing] = []
    byes: list[PlayerId] = []
    for a, b in circle_round(seeds, index):
        present = [p for p in (a, b) if p is not None and p not in dropped]
        if len(present) == 2:
            match_id = MatchId(f"R{index + 1}-{len(pairings) + 1}")
            pairings.append(Pairing(match_id, tuple(sorted(present, key=seed_of.__getitem__))))
        elif len(present) == 1:
            byes.append(present[0])
    return RoundPlan(tuple(pairings), tuple(sorted(byes, key=seed_of.__getitem__)))
