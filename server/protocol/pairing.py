"""A tournament's next round, for every format (pure, deterministic).

Everything here is a function of the seeds (players in seed order, seed 1 first), the rounds
already played and the players who dropped out, so a tournament can be re-derived at any time,
for instance after an admin corrects a result.

Formats (`Format`), each planned by its own module:
- single elimination (`tournament_bracket`): bracket of the next power of two, seeded 1 vs N,
  2 vs N-1, ... so seeds 1 and 2 can only meet in the final; missing seats are byes, which
  therefore go to the top seeds; optional third-place match between the semi-final losers,
  played with the final.
- double elimination (`tournament_bracket`): the same winners bracket, a losers bracket (a
  player is out after a second loss) and a grand final; optional bracket reset (a second
  grand final when the losers-bracket champion wins the first one).
- Swiss: `swiss`, with its searches for a pairing without a rematch in `swiss_search`.
- round robin: `round_robin`.
- heats: `heats`.

A match is scored by `match_scoring`; the standings of every format are `standings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .heats import plan_heats
from .round_robin import plan_round_robin
from .swiss import plan_swiss
from .tournament_bracket import plan_elimination_round
from .tournament_errors import PairingError, PlayerId
from .tournament_model import Format, FormatRules, PlayedRound, RoundPlan

__all__ = ["plan_round"]


def plan_round(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: Iterable[PlayerId] = (),
) -> RoundPlan | None:
    """The next round given the rounds played so far, or None when the tournament is over.

    Every match of `history` must be decided. Dropped players are never paired again.
    """
    if len(set(seeds)) != len(seeds):
        raise PairingError("a player is seeded twice")
    if len(seeds) < 2:
        raise PairingError("a tournament needs at least two players")
    out = frozenset(dropped)
    if rules.format in (Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION):
        return plan_elimination_round(rules, seeds, history, out)
    if rules.format is Format.SWISS:
        return plan_swiss(rules, seeds, history, out)
    if rules.format is Format.ROUND_ROBIN:
        return plan_round_robin(seeds, history, out)
    return plan_heats(rules, seeds, history, out)
