"""Pairing, match scoring and standings for every tournament format (pure, deterministic).

Everything here is a function of the seeds (players in seed order, seed 1 first), the rounds
already played and the players who dropped out, so a tournament can be re-derived at any time,
for instance after an admin corrects a result.

Formats (`Format`):
- single elimination: bracket of the next power of two, seeded 1 vs N, 2 vs N-1, ... so seeds 1
  and 2 can only meet in the final; missing seats are byes, which therefore go to the top seeds;
  optional third-place match between the semi-final losers, played with the final.
- double elimination: the same winners bracket, a losers bracket (a player is out after a
  second loss) and a grand final; optional bracket reset (a second grand final when the
  losers-bracket champion wins the first one).
- Swiss: a fixed number of rounds (default ceil(log2 N)); round 1 pairs the top half of the seeds
  against the bottom half, later rounds pair neighbours in the standings with no rematch,
  looking ahead so the rounds left can be paired without one too (a rematch only when no
  rematch-free pairing is found, each search within a budget of work shared by the whole
  round); dropped players are not paired (the state machine drops a player who forfeits as
  a no-show); with an odd count of players still in, the
  lowest-ranked of them who has not had a bye gets one (a bye is worth a win). A field of
  over 32 players set to over 60% of its most rounds takes each round whole from the round
  robin's schedule instead (the unplayed one that best pairs equal points), rematch-free
  by construction.
  Standings: points (win 1, draw 1/2, bye 1, loss 0), then Buchholz (sum of the points of the
  opponents met), then total cards on foundations over all races, then seed.
- round robin: circle method (seed 1 fixed, the others rotate); with an odd count one player sits
  out each round (a bye, worth a win), as does the opponent of a player who dropped out (or
  was dropped as a no-show).
  Standings: points, then Sonneborn-Berger (points of beaten opponents plus half those of drawn
  ones), then cards on foundations, then seed.
- heats: N-player races; players are dealt into heats of at most `heat_size` by seed (snake
  order); the top `advance_per_heat` of each heat advance (at most heat size - 1, so every
  heat eliminates someone) until everyone left fits in one heat, the final. A player dealt
  into a heat alone (heats of two, an odd field) goes through on a bye.

Matches are best-of-N races (`FormatRules.best_of`): first to ceil(N/2) race wins. A race whose
winners tie gives nobody a win. After N races with wins level: a draw in Swiss and round robin;
in elimination formats up to two sudden-death races, then more cards on foundations over the
match, then the better seed. A heat plays exactly N races and ranks by the sum of finishing
places, then cards on foundations, then seed. Forfeits rank below everyone who played.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .ranking import competition_ranks
from .tournament_bracket import elimination_standings, plan_elimination_round
from .tournament_errors import MatchId, PairingError, PlayerId
from .tournament_model import (
    Format,
    FormatRules,
    MatchOutcome,
    Pairing,
    PlayedRound,
    RaceResult,
    RoundPlan,
    Standing,
)

__all__ = [
    "SUDDEN_DEATH_RACES",
    "Format",
    "FormatRules",
    "MatchOutcome",
    "Pairing",
    "PlayedRound",
    "RaceResult",
    "RoundPlan",
    "Standing",
    "compute_standings",
    "heat_advancers",
    "plan_round",
    "race_wins",
    "score_match",
    "swiss_round_count",
]

SUDDEN_DEATH_RACES = 2
"""Extra races an elimination match may play when wins are level after best-of-N."""

_SEARCH_BUDGET = 200_000
"""Work allowed to the search for a rematch-free Swiss pairing in standings order, for all
the candidates for the bye together. A step of the search spends `_STEP_COST` and one unit
per player it has left to pair (its cost grows with them), so the budgets bound a round's
planning in time whatever the field. The planning runs on the event loop, in the change
that ends the round before: with these budgets the worst round measured of the biggest
fields took ~70 ms of CPU (bench/README.md, "Planning a Swiss round"). They count work,
not time, so a round is planned the same on every node and at every try."""

_AHEAD_BUDGET = 200_000
"""Work allowed to looking ahead, for every pairing the search gives in a round together:
whether the rounds left after it can still be paired without a rematch (spent as the
search spends its budget)."""

_STEP_COST = 32
"""What a step of the search in standings order spends besides one per player left to pair
(a step with a few players left costs about as much as one with 32 more)."""

_HARDEST_FIRST_BUDGET = 600_000
"""Work allowed to the search that pairs the hardest player first, which `_plan_swiss`
runs when the search in standings order finds no rematch-free pairing, for all the
candidates for the bye together. A step spends the players it has left to pair times the
players of the round (it counts, for each of them, the opponents left to meet)."""

_SCHEDULE_MIN_PLAYERS = 33
"""A Swiss of at least this many players set to many rounds (`_SCHEDULE_MIN_SHARE`) takes
its rounds from the round robin's schedule (`_follows_schedule`). With random results the
search paired every smaller field measured without a rematch (10 to 20 Swisses each of 24,
28 and 32 players over N - 1 rounds)."""

_SCHEDULE_MIN_SHARE = 0.6
"""The share of its most rounds (N - 1, N when N is odd) past which such a Swiss does. Below
it the search paired 10 Swisses each of 48 players over 28 rounds and 64 over 37 without a
rematch; above it, 1 of 10 of 64 players over 48 rounds had rematches."""

_BYE_SEAT = PlayerId("")
"""The seat a Swiss player with a bye faces when looking ahead (no player id is empty)."""


# --- match scoring ---------------------------------------------------------------------------


def race_wins(players: Sequence[PlayerId], races: Iterable[RaceResult]) -> dict[PlayerId, int]:
    """Each player's race wins in a head-to-head match: a race whose best place is shared
    counts for nobody."""
    wins = {p: 0 for p in players}
    for race in races:
        winner = race.sole_winner
        if winner in wins:
            wins[winner] += 1
    return wins


def score_match(
    rules: FormatRules,
    match_id: MatchId,
    players: Sequence[PlayerId],
    races: Sequence[RaceResult],
    *,
    seeds: Sequence[PlayerId],
    forfeited: Iterable[PlayerId] = (),
) -> MatchOutcome | None:
    """The match's outcome, or None while it needs another race."""
    # Only the match's players' seeds (a view scores every match of the tournament: a map of
    # all the seeds per match made a 256-player Swiss's view cost ~100 ms).
    unseeded = len(seeds)
    seed_of = {p: seeds.index(p) if p in seeds else unseeded for p in players}
    gone = frozenset(forfeited) & set(players)
    playing = [p for p in players if p not in gone]
    cards = {p: sum(r.cards_of(p) for r in races) for p in players}
    quitters = sorted(gone, key=lambda p: seed_of[p])

    if not rules.is_head_to_head:
        if len(races) < rules.best_of and len(playing) > 1:
            return None
        places = {p: sum(r.place_of(p) for r in races) for p in playing}
        order = sorted(playing, key=lambda p: (places[p], -cards[p], seed_of[p]))
        return MatchOutcome(match_id, (*order, *quitters), False, gone, cards)

    wins = race_wins(players, races)
    if gone:
        return MatchOutcome(match_id, (*playing, *quitters), False, gone, cards, wins)

    def better_first(a: PlayerId, b: PlayerId) -> tuple[PlayerId, PlayerId]:
        key_a = (-wins[a], -cards[a], seed_of[a])
        key_b = (-wins[b], -cards[b], seed_of[b])
        return (a, b) if key_a <= key_b else (b, a)

    a, b = players
    first, second = better_first(a, b)
    if wins[first] >= rules.wins_needed:
        return MatchOutcome(match_id, (first, second), False, gone, cards, wins)
    if len(races) < rules.best_of:
        return None
    if wins[a] != wins[b]:
        return MatchOutcome(match_id, (first, second), False, gone, cards, wins)
    if rules.allows_draws:
        by_seed = tuple(sorted(players, key=lambda p: seed_of[p]))
        return MatchOutcome(match_id, by_seed, True, gone, cards, wins)
    if len(races) < rules.best_of + SUDDEN_DEATH_RACES:
        return None
    return MatchOutcome(match_id, (first, second), False, gone, cards, wins)


# --- planning rounds -------------------------------------------------------------------------


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
        return _plan_swiss(rules, seeds, history, out)
    if rules.format is Format.ROUND_ROBIN:
        return _plan_round_robin(seeds, history, out)
    return _plan_heats(rules, seeds, history, out)


def swiss_round_count(rules: FormatRules, player_count: int) -> int:
    """Rounds of a Swiss: as set, else ceil(log2 N); never more than a rematch-free schedule."""
    wanted = rules.swiss_rounds or max(1, math.ceil(math.log2(player_count)))
    most = player_count if player_count % 2 else player_count - 1
    return max(1, min(wanted, most))


def _plan_swiss(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> RoundPlan | None:
    if len(history) >= swiss_round_count(rules, len(seeds)):
        return None
    active = [p for p in seeds if p not in dropped]
    if len(active) < 2:
        return None
    number = len(history) + 1
    tally = _tally(seeds, history)
    if not history:
        order = list(active)
    else:
        order = [
            s.player for s in _rank_scored(tally, seeds, dropped, _buchholz) if s.player in active
        ]
    met = {frozenset((a, b)) for a in seeds for b in tally[a].opponents}
    had_bye = {p for p in seeds if tally[p].byes}
    if _follows_schedule(rules, len(seeds)):
        scheduled, sits_out = _pair_by_schedule(
            seeds, order, tally, met, had_bye, first=not history
        )
        return _swiss_plan(number, seeds, scheduled, sits_out)

    candidates: list[PlayerId | None] = [None]
    if len(order) % 2:
        fresh = [p for p in reversed(order) if p not in had_bye]
        candidates = list(fresh) or [order[-1]]
    # The bye is a seat too: meeting it twice is a second bye.
    met |= {frozenset((p, _BYE_SEAT)) for p in had_bye}
    seats = [*order, _BYE_SEAT] if len(order) % 2 else order
    rounds_left = swiss_round_count(rules, len(seeds)) - number
    ahead = [_AHEAD_BUDGET]  # for every look ahead of this round together
    search = [_SEARCH_BUDGET]  # for every candidate for the bye together
    pairs: list[tuple[PlayerId, PlayerId]] | None = None
    bye: PlayerId | None = None
    first: tuple[PlayerId | None, list[tuple[PlayerId, PlayerId]]] | None = None
    for candidate in candidates:
        rest = [p for p in order if p != candidate]
        if not history:  # a folded first round leaves a rematch-free schedule possible
            pairs, bye = _fold(rest), candidate
            break
        for option in _rematch_free_pairings(rest, met, search):
            first = first or (candidate, option)
            taken = {frozenset(pair) for pair in option}
            if candidate is not None:
                taken.add(frozenset((candidate, _BYE_SEAT)))
            # Pairing neighbours greedily can leave the players who have not met unpairable
            # a few rounds on (six players, four rounds: a fifth of the time): take the best
            # pairing after which the rounds left can still be played without a rematch.
            if _can_finish(seats, met | taken, rounds_left, ahead) is not False:
                pairs, bye = option, candidate
                break
        if pairs is not None:
            break
    if pairs is None and first is not None:  # none leaves a way to the end without a rematch
        bye, pairs = first
    if pairs is None:  # none found in standings order: the hardest to pair first, or rematches
        pairs, bye = _pair_at_last(order, candidates, met)
    return _swiss_plan(number, seeds, pairs, bye)


def _pair_at_last(
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


def _swiss_plan(
    number: int,
    seeds: Sequence[PlayerId],
    pairs: Sequence[tuple[PlayerId, PlayerId]],
    bye: PlayerId | None,
) -> RoundPlan:
    seed_of = {p: i for i, p in enumerate(seeds)}
    pairings = tuple(
        Pairing(MatchId(f"R{number}-{i + 1}"), tuple(sorted(pair, key=seed_of.__getitem__)))
        for i, pair in enumerate(pairs)
    )
    return RoundPlan(pairings, () if bye is None else (bye,))


def _follows_schedule(rules: FormatRules, player_count: int) -> bool:
    """Whether a Swiss takes its rounds from the circle method's schedule: a field of at
    least `_SCHEDULE_MIN_PLAYERS` set to more rounds than `_SCHEDULE_MIN_SHARE` of the most
    it can play. There the search, bounded, can leave the last rounds with no rematch-free
    pairing, while any order of the schedule's rounds is rematch-free to the last one."""
    most = player_count if player_count % 2 else player_count - 1
    rounds = swiss_round_count(rules, player_count)
    return player_count >= _SCHEDULE_MIN_PLAYERS and rounds > most * _SCHEDULE_MIN_SHARE


def _pair_by_schedule(
    seeds: Sequence[PlayerId],
    order: Sequence[PlayerId],
    tally: Mapping[PlayerId, _Tally],
    met: set[frozenset[PlayerId]],
    had_bye: set[PlayerId],
    *,
    first: bool,
) -> tuple[list[tuple[PlayerId, PlayerId]], PlayerId | None]:
    """A Swiss round taken whole from the round robin's schedule (`_circle_round`): of its
    rounds not yet played, the one that best pairs players of equal points (the least
    points apart in all, then the nearest in the standings; in round 1, nearest to the top
    half against the bottom half), the bye (odd count) going to its dummy seat's partner.
    Since no two of the schedule's rounds share a pair, the rounds so taken never make a
    rematch nor a second bye.

    Players the chosen round cannot seat (their partner in it dropped out, or they have met
    since, or the bye would be a second one) are paired among themselves as an ordinary
    Swiss round would be; that only happens after a drop-out (or when earlier rounds were
    not paired from the schedule: a Swiss started by an older version)."""
    rank = {p: i for i, p in enumerate(order)}
    lowest = min((tally[p].points for p in order), default=0.0)
    half = len(order) // 2
    rounds = len(seeds) - 1 + len(seeds) % 2
    best: tuple[tuple[int, float, int, int], list[tuple[PlayerId | None, PlayerId | None]]]
    best = ((len(seeds), 0.0, 0, 0), [])
    for index in range(rounds):
        schedule = _circle_round(seeds, index)
        clashes, apart, distance = 0, 0.0, 0
        for a, b in schedule:
            if a is not None and b is not None and a in rank and b in rank:
                clashes += frozenset((a, b)) in met
                apart += abs(tally[a].points - tally[b].points)
                gap = abs(rank[a] - rank[b])
                distance += abs(gap - half) if first else gap
            elif (a is None) != (b is None) and (alone := a or b) in rank:
                assert alone is not None
                clashes += alone in had_bye
                apart += tally[alone].points - lowest
                distance += len(order) - 1 - rank[alone]
        key = (clashes, apart, distance, index)
        if index == 0 or key < best[0]:
            best = (key, schedule)
    pairs: list[tuple[PlayerId, PlayerId]] = []
    bye: PlayerId | None = None
    left: list[PlayerId] = []
    for a, b in best[1]:
        seated = [p for p in (a, b) if p is not None and p in rank]
        if len(seated) == 2 and frozenset(seated) not in met:
            pairs.append((seated[0], seated[1]))
        elif len(seated) == 1 and None in (a, b) and seated[0] not in had_bye:
            bye = seated[0]
        else:
            left.extend(seated)
    if len(left) % 2 and bye is not None:
        left.append(bye)
        bye = None
    if left:
        rest, extra = _pair_plainly(sorted(left, key=rank.__getitem__), met, had_bye)
        pairs += rest
        bye = bye if extra is None else extra
    return pairs, bye


def _pair_plainly(
    order: Sequence[PlayerId], met: set[frozenset[PlayerId]], had_bye: set[PlayerId]
) -> tuple[list[tuple[PlayerId, PlayerId]], PlayerId | None]:
    """`order` (best first) paired as a Swiss round without looking ahead: the bye (odd
    count) to the lowest-ranked player without one, passed up when the others cannot be
    paired without a rematch (`_pair_at_last` when none is found)."""
    candidates: list[PlayerId | None] = [None]
    if len(order) % 2:
        candidates = [p for p in reversed(order) if p not in had_bye] or [order[-1]]
    search = [_SEARCH_BUDGET]  # for every candidate together
    for candidate in candidates:
        rest = [p for p in order if p != candidate]
        for option in _rematch_free_pairings(rest, met, search):
            return option, candidate
    return _pair_at_last(order, candidates, met)


def _fold(order: Sequence[PlayerId]) -> list[tuple[PlayerId, PlayerId]]:
    half = len(order) // 2
    return [(order[i], order[i + half]) for i in range(half)]


def _rematch_free_pairings(
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
        for tail in _rematch_free_pairings(rest, met, budget):
            yield [(first, other), *tail]
        if budget[0] < 0:  # out: the other partners would each be one more step refused
            return


def _can_finish(
    seats: Sequence[PlayerId], met: set[frozenset[PlayerId]], rounds: int, budget: list[int]
) -> bool | None:
    """Whether `rounds` more rounds can pair `seats` without a pair in `met` or met in one of
    them; None when `budget` ran out before the search could tell."""
    if rounds <= 0:
        return True
    for pairs in _rematch_free_pairings(seats, met, budget):
        found = _can_finish(seats, met | {frozenset(pair) for pair in pairs}, rounds - 1, budget)
        if found is not False:
            return found
    return None if budget[0] < 0 else False


def _circle_round(
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


def _plan_round_robin(
    seeds: Sequence[PlayerId], history: Sequence[PlayedRound], dropped: frozenset[PlayerId]
) -> RoundPlan | None:
    index = len(history)
    if index >= len(seeds) - 1 + len(seeds) % 2 or sum(p not in dropped for p in seeds) < 2:
        return None
    seed_of = {p: i for i, p in enumerate(seeds)}
    pairings: list[Pairing] = []
    byes: list[PlayerId] = []
    for a, b in _circle_round(seeds, index):
        present = [p for p in (a, b) if p is not None and p not in dropped]
        if len(present) == 2:
            match_id = MatchId(f"R{index + 1}-{len(pairings) + 1}")
            pairings.append(Pairing(match_id, tuple(sorted(present, key=seed_of.__getitem__))))
        elif len(present) == 1:
            byes.append(present[0])
    return RoundPlan(tuple(pairings), tuple(sorted(byes, key=seed_of.__getitem__)))


def _plan_heats(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> RoundPlan | None:
    if history:
        last = history[-1]
        if _is_final(last):
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


def _is_final(played: PlayedRound) -> bool:
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


# --- standings -------------------------------------------------------------------------------


@dataclass
class _Tally:
    points: float = 0.0
    cards: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    byes: int = 0
    opponents: list[PlayerId] = field(default_factory=list)
    results: list[float] = field(default_factory=list)


def _tally(seeds: Sequence[PlayerId], history: Sequence[PlayedRound]) -> dict[PlayerId, _Tally]:
    tally = {p: _Tally() for p in seeds}
    for played in history:
        for player in played.plan.byes:
            tally[player].points += 1.0
            tally[player].byes += 1
        for pairing in played.plan.pairings:
            outcome = played.outcomes[pairing.match_id]
            for player in pairing.players:
                line = tally[player]
                score = outcome.points_of(player)
                line.points += score
                line.cards += outcome.cards.get(player, 0)
                line.wins += score == 1.0
                line.draws += score == 0.5
                line.losses += score == 0.0
                for other in pairing.players:
                    if other != player:
                        line.opponents.append(other)
                        line.results.append(score)
    return tally


def _buchholz(tally: Mapping[PlayerId, _Tally], player: PlayerId) -> float:
    return sum(tally[o].points for o in tally[player].opponents)


def _sonneborn_berger(tally: Mapping[PlayerId, _Tally], player: PlayerId) -> float:
    line = tally[player]
    return sum(tally[o].points * r for o, r in zip(line.opponents, line.results, strict=True))


def _rank_scored(
    tally: Mapping[PlayerId, _Tally],
    seeds: Sequence[PlayerId],
    dropped: frozenset[PlayerId],
    tiebreak: Callable[[Mapping[PlayerId, _Tally], PlayerId], float],
) -> list[Standing]:
    lines = [
        Standing(
            rank=0,
            player=p,
            points=tally[p].points,
            tiebreak=tiebreak(tally, p),
            cards=tally[p].cards,
            wins=tally[p].wins,
            draws=tally[p].draws,
            losses=tally[p].losses,
            is_dropped=p in dropped,
        )
        for p in seeds
    ]
    seed_of = {p: i for i, p in enumerate(seeds)}
    lines.sort(key=lambda s: (-s.points, -s.tiebreak, -s.cards, seed_of[s.player]))
    return [_with_rank(s, i + 1) for i, s in enumerate(lines)]


def _with_rank(line: Standing, rank: int) -> Standing:
    return Standing(
        rank,
        line.player,
        line.points,
        line.tiebreak,
        line.cards,
        line.wins,
        line.draws,
        line.losses,
        line.is_eliminated,
        line.is_dropped,
    )


def compute_standings(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: Iterable[PlayerId] = (),
) -> list[Standing]:
    """Live standings, best first; once the tournament is over the first line still in (not
    dropped, not eliminated) is the champion (`Tournament.champion`)."""
    out = frozenset(dropped)
    if rules.format in (Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION):
        return elimination_standings(rules, seeds, history, out)
    if rules.format is Format.HEATS:
        return _heat_standings(rules, seeds, history, out)
    tiebreak = _buchholz if rules.format is Format.SWISS else _sonneborn_berger
    return _rank_scored(_tally(seeds, history), seeds, out, tiebreak)


def _heat_standings(
    rules: FormatRules,
    seeds: Sequence[PlayerId],
    history: Sequence[PlayedRound],
    dropped: frozenset[PlayerId],
) -> list[Standing]:
    reached = {p: (0, 0) for p in seeds}  # (rounds raced, place in the last heat raced)
    alive = set(seeds)
    cards = {p: 0 for p in seeds}
    for number, played in enumerate(history, start=1):
        for player in played.plan.byes:
            reached[player] = (number, 1)
        for pairing in played.plan.pairings:
            outcome = played.outcomes[pairing.match_id]
            for place, player in enumerate(outcome.ranking, start=1):
                reached[player] = (number, place)
                cards[player] += outcome.cards.get(player, 0)
        alive = set() if _is_final(played) else set(heat_advancers(rules, played))
    if history and _is_final(history[-1]):
        final = history[-1].outcomes[history[-1].plan.pairings[0].match_id]
        alive = {final.ranking[0]} - final.forfeited
    seed_of = {p: i for i, p in enumerate(seeds)}
    finished = plan_round(rules, seeds, history, dropped) is None

    def key(p: PlayerId) -> tuple[int, int, int, int]:
        rounds, place = reached[p]
        survivor = p in alive and p not in dropped
        return (0 if survivor else 1, -rounds, place if finished or not survivor else 0, seed_of[p])

    order = sorted(seeds, key=key)
    ranks = competition_ranks([key(p)[:3] for p in order])  # the seed orders ties, breaks none
    return [
        Standing(
            rank,
            player,
            cards=cards[player],
            is_eliminated=player not in alive or player in dropped,
            is_dropped=player in dropped,
        )
        for player, rank in zip(order, ranks, strict=True)
    ]
