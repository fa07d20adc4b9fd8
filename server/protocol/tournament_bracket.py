"""Single and double elimination brackets as a fixed graph of matches (pure, deterministic).

A bracket is built once from the seed count: every match takes its two players from a seed, or
from the winner or loser of an earlier match. Resolving the graph against the outcomes played so
far says, for every match, whether it was played, is ready to play, still waits for an earlier
match, is a walkover (one player present: a bye, or an opponent who dropped out) or is empty.
Byes fall on the top seeds because seat i of the first round meets seat N+1-i.

A tournament round plays every ready match of the lowest schedule step, where a match's step
is one more than that of the matches feeding it (winners-bracket round r is step r; in double
elimination, losers-bracket round m is step m + 1, the grand final comes after both finals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .ranking import competition_ranks
from .tournament_errors import MatchId, PlayerId
from .tournament_model import (
    Format,
    FormatRules,
    MatchOutcome,
    Pairing,
    PlayedRound,
    RoundPlan,
    Standing,
)

__all__ = [
    "BracketMatch",
    "MatchState",
    "bracket_order",
    "describe_bracket",
    "elimination_standings",
    "plan_elimination_round",
]

GRAND_FINAL = MatchId("GF")
BRACKET_RESET = MatchId("GF2")
THIRD_PLACE = MatchId("3P")
_NO_MATCH = MatchId("")


class MatchState(StrEnum):
    PLAYED = "played"
    READY = "ready"
    WAITING = "waiting"
    WALKOVER = "walkover"
    EMPTY = "empty"


@dataclass(frozen=True)
class _Source:
    kind: str  # "seed", "winner" or "loser"
    seed: int = 0
    match: MatchId = _NO_MATCH


@dataclass(frozen=True)
class _Node:
    match_id: MatchId
    sources: tuple[_Source, _Source]
    step: int


@dataclass(frozen=True)
class BracketMatch:
    """One match of the bracket as it stands (for drawing the tree)."""

    match_id: MatchId
    step: int
    state: MatchState
    players: tuple[PlayerId | None, PlayerId | None]
    winner: PlayerId | None
    loser: PlayerId | None


def bracket_order(size: int) -> list[int]:
    """Seeds (1-based) in seat order for a bracket of `size` (a power of two): 1, N, ..."""
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [x for s in order for x in (s, total - s)]
    return order


@dataclass
class _Graph:
    """The matches built so far, each after the matches that feed it (the order `_resolve`
    walks them in), and each one's schedule step."""

    nodes: list[_Node] = field(default_factory=list)
    steps: dict[MatchId, int] = field(default_factory=dict)

    def add(self, match_id: str, a: _Source, b: _Source) -> MatchId:
        """A match between `a` and `b`, one step after the later of the matches feeding it."""
        mid = MatchId(match_id)
        step = 1 + max(self.steps.get(src.match, 0) for src in (a, b))
        self.steps[mid] = step
        self.nodes.append(_Node(mid, (a, b), step))
        return mid


def _build(rules: FormatRules, count: int) -> list[_Node]:
    """Every match of the bracket for `count` seeds: the winners' bracket, then the third-place
    match (single elimination) or the losers' bracket and the grand final (double)."""
    if count < 1:
        return []  # not seeded yet
    depth = max(1, math.ceil(math.log2(count)))
    graph = _Graph()
    winners = _winners_bracket(graph, depth)
    final = winners[-1][0]

    if rules.format is Format.SINGLE_ELIMINATION:
        if rules.third_place_match and depth >= 2:
            semis = winners[-2]
            graph.add(
                THIRD_PLACE, _Source("loser", match=semis[0]), _Source("loser", match=semis[1])
            )
        return graph.nodes

    if depth == 1:
        lb_champion = _Source("loser", match=final)  # two players: no losers' bracket
    else:
        lb_champion = _Source("winner", match=_losers_bracket(graph, winners))
    graph.add(GRAND_FINAL, _Source("winner", match=final), lb_champion)
    if rules.bracket_reset:
        graph.add(
            BRACKET_RESET, _Source("winner", match=GRAND_FINAL), _Source("loser", match=GRAND_FINAL)
        )
    return graph.nodes


def _winners_bracket(graph: _Graph, depth: int) -> list[list[MatchId]]:
    """The `depth` rounds of the winners' bracket of ``2**depth`` seats, each round's matches
    top to bottom (``W<round>-<i>``): round 1 seats the seeds in `bracket_order`, and every
    later match takes the winners of two neighbouring matches of the round before."""
    seats = bracket_order(2**depth)
    first = [
        graph.add(f"W1-{i + 1}", _Source("seed", seats[2 * i]), _Source("seed", seats[2 * i + 1]))
        for i in range(2 ** (depth - 1))
    ]
    winners = [first]
    for r in range(2, depth + 1):
        winners.append(_pair_neighbours(graph, f"W{r}", "winner", winners[-1]))
    return winners


def _pair_neighbours(
    graph: _Graph, round_name: str, kind: str, feeders: Sequence[MatchId]
) -> list[MatchId]:
    """A round (``<round_name>-<i>``) whose every match takes the `kind` ("winner" or "loser")
    of two neighbouring `feeders`, top to bottom."""
    return [
        graph.add(
            f"{round_name}-{i + 1}",
            _Source(kind, match=feeders[2 * i]),
            _Source(kind, match=feeders[2 * i + 1]),
        )
        for i in range(len(feeders) // 2)
    ]


def _losers_bracket(graph: _Graph, winners: Sequence[Sequence[MatchId]]) -> MatchId:
    """The losers' bracket of a double elimination (two winners' rounds or more); returns its
    final, whose winner plays the grand final.

    Its round 1 pairs the losers of winners' round 1. Then, for each later winners' round, a
    round where that round's losers drop in, one against each survivor, followed (until the
    winners' final's loser has dropped in) by a round pairing the survivors. The losers of
    every other winners' round drop in mirrored, bottom match first, to delay rematches: a
    player dropping in then meets someone from the other half of the bracket, not from the
    part it came through. Unmirrored, the loser of W2-i would meet at once the winner of L1-i,
    who lost in winners' round 1 to one of the two players of W2-i: half the time, a rematch."""
    level = _pair_neighbours(graph, "L1", "loser", winners[0])
    m = 1
    depth = len(winners)
    for j in range(1, depth):
        dropping = winners[j]
        if j % 2:
            dropping = dropping[::-1]
        m += 1
        level = [
            graph.add(
                f"L{m}-{i + 1}",
                _Source("winner", match=level[i]),
                _Source("loser", match=dropping[i]),
            )
            for i in range(len(level))
        ]
        if j < depth - 1:
            m += 1
            level = _pair_neighbours(graph, f"L{m}", "winner", level)
    return level[0]


@dataclass(frozen=True)
class _Resolved:
    state: MatchState
    values: tuple[PlayerId | None, PlayerId | None]  # what each source delivered
    present: tuple[PlayerId, ...]
    winner: PlayerId | None = None
    loser: PlayerId | None = None


def _resolve(
    nodes: Sequence[_Node],
    seeds: Sequence[PlayerId],
    outcomes: Mapping[MatchId, MatchOutcome],
    dropped: frozenset[PlayerId],
) -> dict[MatchId, _Resolved]:
    seed_of = {p: i for i, p in enumerate(seeds)}
    done: dict[MatchId, _Resolved] = {}
    for node in nodes:
        values: list[PlayerId | None] = []
        waiting = False
        for src in node.sources:
            if src.kind == "seed":
                values.append(seeds[src.seed - 1] if src.seed <= len(seeds) else None)
                continue
            before = done[src.match]
            if before.state in (MatchState.READY, MatchState.WAITING):
                waiting = True
                values.append(None)
            else:
                values.append(before.winner if src.kind == "winner" else before.loser)
        pair = (values[0], values[1])
        outcome = outcomes.get(node.match_id)
        if outcome is not None:
            done[node.match_id] = _Resolved(
                MatchState.PLAYED, pair, outcome.ranking, outcome.winner, outcome.loser
            )
            continue
        if waiting:
            done[node.match_id] = _Resolved(MatchState.WAITING, pair, ())
            continue
        if node.match_id == BRACKET_RESET:
            final = done[GRAND_FINAL]
            if final.winner is None or final.winner != final.values[1] or final.loser is None:
                pair = (None, None)
        present = tuple(
            sorted((p for p in pair if p is not None and p not in dropped), key=seed_of.__getitem__)
        )
        if len(present) == 2:
            done[node.match_id] = _Resolved(MatchState.READY, pair, present)
        elif len(present) == 1:
            done[node.match_id] = _Resolved(MatchState.WALKOVER, pair, present, present[0])
        else:
            done[node.match_id] = _Resolved(MatchState.EMPTY, pair, ())
    return done


def _outcomes(history: Sequence[PlayedRound]) -> dict[MatchId, MatchOutcome]:
    return {mid: o for played in history for mid, o in played.outcomes.items()}


def plan_elimination_round(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> RoundPlan | None:
    nodes = _build(rules, len(seeds))
    done = _resolve(nodes, seeds, _outcomes(history), dropped)
    pending = [n for n in nodes if done[n.match_id].state in (MatchState.READY, MatchState.WAITING)]
    if not pending:
        return None
    step = min(n.step for n in pending)
    ready = [n for n in pending if n.step == step and done[n.match_id].state is MatchState.READY]
    return RoundPlan(tuple(Pairing(n.match_id, done[n.match_id].present) for n in ready))


def describe_bracket(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId] = frozenset(),
) -> list[BracketMatch]:
    """Every match of the bracket with its current state, in schedule order (for the tree view);
    empty without seeds."""
    nodes = _build(rules, len(seeds))
    done = _resolve(nodes, seeds, _outcomes(history), dropped)
    return [
        BracketMatch(
            n.match_id,
            n.step,
            done[n.match_id].state,
            done[n.match_id].values,
            done[n.match_id].winner,
            done[n.match_id].loser,
        )
        for n in nodes
    ]


def _champion(nodes: Sequence[_Node], done: Mapping[MatchId, _Resolved]) -> PlayerId | None:
    if any(r.state in (MatchState.READY, MatchState.WAITING) for r in done.values()):
        return None
    last = [n for n in nodes if n.match_id != THIRD_PLACE]
    for node in reversed(last):
        resolved = done[node.match_id]
        if resolved.state is not MatchState.EMPTY:
            return resolved.winner
    return None


def elimination_standings(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> list[Standing]:
    """Alive players first; then by how late a player went out; players out together share
    a rank (listed by seed). The third-place match separates its two players."""
    nodes = _build(rules, len(seeds))
    outcomes = _outcomes(history)
    done = _resolve(nodes, seeds, outcomes, dropped)
    champion = _champion(nodes, done)
    alive: set[PlayerId] = set()
    exit_at = {p: 0.0 for p in seeds}
    wins = {p: 0 for p in seeds}
    losses = {p: 0 for p in seeds}
    cards = {p: 0 for p in seeds}
    for node in nodes:
        resolved = done[node.match_id]
        if resolved.state is MatchState.READY:
            alive.update(resolved.present)
        elif resolved.state is MatchState.WAITING:
            alive.update(p for p in resolved.values if p is not None and p not in dropped)
        elif resolved.state in (MatchState.PLAYED, MatchState.WALKOVER):
            for player in resolved.present:
                won = player == resolved.winner
                value = float(node.step)
                if node.match_id == THIRD_PLACE:
                    value -= 0.25 if won else 0.5
                exit_at[player] = value
                if resolved.state is MatchState.PLAYED:
                    wins[player] += won
                    losses[player] += not won
                    cards[player] += outcomes[node.match_id].cards.get(player, 0)
    if champion is not None:
        alive.add(champion)
    alive -= dropped
    seed_of = {p: i for i, p in enumerate(seeds)}

    def key(p: PlayerId) -> tuple[int, float]:
        return (0, 0.0) if p in alive else (1, -exit_at[p])

    order = sorted(seeds, key=lambda p: (*key(p), seed_of[p]))
    ranks = competition_ranks([key(p) for p in order])  # the seed orders ties, breaks none
    return [
        Standing(
            rank,
            player,
            points=float(wins[player]),
            cards=cards[player],
            wins=wins[player],
            losses=losses[player],
            is_eliminated=player not in alive,
            is_dropped=player in dropped,
        )
        for player, rank in zip(order, ranks, strict=True)
    ]
