"""Planning a round of heats, and who goes through from one (pure, deterministic).

N-player races; players are dealt into heats of at most `heat_size` by seed (snake order); the
top `advance_per_heat` of each heat advance (at most heat size - 1, so every heat eliminates
someone) until everyone left fits in one heat, the final. A player dealt into a heat alone
(heats of two, an odd field) goes through on a bye.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .tournament_errors import MatchId, PlayerId
from .tournament_model import FormatRules, Pairing, PlayedRound, RoundPlan

__all__ = ["heat_advancers", "is_final", "plan_heats"]


def plan_heats(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> RoundPlan | None:
    if history:
        last = history[-1]
        if is_final(last):
            return None
        survivors = set(heat_advancers(rules, last)) - dropped
    else:
        survivors = set(seeds) - dropped
    field_ = [p for p in seeds if p in survivors]
    if len(field_) < 2:
        return None
    number = len(history) + 1
    if len(field_) <= rules.heat_size:
        return RoundPlan((Pairing(MatchId(f"R{number}-F"), tuple(field_)),))
    count = math.ceil(len(field_) / rules.heat_size)
    heats: list[list[PlayerId]] = [[] for _ in range(count)]
    for i, player in enumerate(field_):
        row, col = divmod(i, count)
        heats[col if row % 2 == 0 else count - 1 - col].append(player)
    # Heats of two and an odd field leave the first heat (the top seed's) with one player,
    # who has nobody to race: he goes through on a bye.
    raced = [h for h in heats if len(h) > 1]
    return RoundPlan(
        tuple(Pairing(MatchId(f"R{number}-H{i + 1}"), tuple(h)) for i, h in enumerate(raced)),
        tuple(h[0] for h in heats if len(h) == 1),
    )


def is_final(played: PlayedRound) -> bool:
    """Whether a round of heats was the final: one heat, everyone left in it."""
    return len(played.plan.pairings) == 1 and not played.plan.byes


def heat_advancers(rules: FormatRules, played: PlayedRound) -> list[PlayerId]:
    """Who goes through from a round of heats: the round's byes and the top k of each heat
    (never a whole heat)."""
    out: list[PlayerId] = list(played.plan.byes)
    for pairing in played.plan.pairings:
        outcome = played.outcomes[pairing.match_id]
        k = min(rules.advance_per_heat, len(pairing.players) - 1)
        out.extend(p for p in outcome.ranking[:k] if p not in outcome.forfeited)
    return out
