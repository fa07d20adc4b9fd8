"""A tournament as clients see it: `Tournament` state -> `TournamentModel` (pure).

Deals stay hidden until their round ends; everything else (registrations, rounds, races,
standings, bracket, live matches with their race ids, audit log) is public.

The view is sent whole, after a change (a burst of them as one), to every watcher, so its
size bounds a tournament's field: `largest_field` is how many players a format can take
before its final view would outgrow `VIEW_BUDGET_BYTES` (well under a client's 1 MiB frame).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

from .ids import RaceId
from .match_scoring import SUDDEN_DEATH_RACES, race_wins
from .swiss import swiss_round_count
from .tournament import Tournament
from .tournament_errors import MatchId
from .tournament_messages import (
    AuditModel,
    BracketMatchModel,
    LiveMatchModel,
    MatchModel,
    PlayerRef,
    RaceResultModel,
    RoundModel,
    StandingModel,
    TournamentModel,
    TournamentSummary,
)
from .tournament_model import Format, FormatRules, MatchOutcome
from .tournament_state import Match, Phase

RaceIdOf = Callable[[MatchId, int], RaceId | None]
"""The race id of a match's race number, None if no race was requested for it
(`Live.race_id_of`)."""


def no_race_ids(match_id: MatchId, race_number: int) -> RaceId | None:
    """No match has a race id: the view of a tournament no server runs (tests, tools)."""
    return None


def pending_race_id(match: Match, race_id_of: RaceIdOf) -> RaceId | None:
    """The race id of `match`'s pending race: None when it waits for no race, or none was
    requested for it yet."""
    pending = match.pending_race
    return None if pending is None else race_id_of(match.match_id, pending)


VIEW_BUDGET_BYTES = 640 * 1024
"""What a tournament's encoded view may grow to by its end (clients take 1 MiB frames; the
rest is for what the estimate leaves out, such as a long audit log)."""

# Encoded bytes, measured on final views with 17-character ids and 24-character names and
# rounded up (bench: a 256-player Swiss of best-of-1 races ends at 0.34 MB, a 64-player
# round robin at 0.59 MB, a 256-player single elimination of best-of-3 races at 0.25 MB).
_BYTES_PER_SEAT = 95  # a player's place in a match (its ranking and race wins included)
_BYTES_PER_SEAT_RACE = 50  # a player's place in one race of a match
_BYTES_PER_PLAYER = 450  # registration, seed, standing, bracket


def estimated_view_bytes(rules: FormatRules, players: int) -> int:
    """A generous estimate of the encoded view of a finished tournament of `players`, with
    every match playing as many races as it may."""
    races = rules.best_of
    if rules.is_head_to_head and not rules.allows_draws:
        races += SUDDEN_DEATH_RACES
    seats = _most_seats(rules, players)
    return seats * (_BYTES_PER_SEAT + races * _BYTES_PER_SEAT_RACE) + players * _BYTES_PER_PLAYER


@functools.lru_cache(maxsize=256)
def largest_field(rules: FormatRules, limit: int) -> int:
    """The most players (at most `limit`, at least 2) whose view stays within the budget
    (asked at every registration: remembered per rules and limit)."""
    most = 2
    while most < limit and estimated_view_bytes(rules, most + 1) <= VIEW_BUDGET_BYTES:
        most += 1
    return most


def _most_seats(rules: FormatRules, players: int) -> int:
    """Seats in every match of a whole tournament (a player seated in two matches counts
    twice), at most."""
    paired = players - players % 2  # seated in a round of head-to-head matches
    bracket = 1 << max(1, (players - 1).bit_length())  # seats of round one, byes included
    if rules.format is Format.SINGLE_ELIMINATION:
        return 2 * bracket  # bracket - 1 matches and the third-place match
    if rules.format is Format.DOUBLE_ELIMINATION:
        return 4 * bracket  # both brackets and two grand finals
    if rules.format is Format.SWISS:
        return swiss_round_count(rules, players) * paired
    if rules.format is Format.ROUND_ROBIN:
        return (players if players % 2 else players - 1) * paired
    seats, left = 0, players  # heats: each round seats everyone left
    while left > rules.heat_size:
        seats += left
        heats = math.ceil(left / rules.heat_size)
        small, bigger = divmod(left, heats)  # `bigger` heats of small + 1, the rest of small
        through = bigger * min(rules.advance_per_heat, small)
        alone = small == 1  # heats of two, an odd field: the one left alone has a bye
        left = through + (heats - bigger) * (1 if alone else min(rules.advance_per_heat, small - 1))
    return seats + left


def build_view(
    tournament: Tournament,
    *,
    version: int,
    name: str,
    time_limit_s: int,
    names: Mapping[str, str],
    race_id_of: RaceIdOf = no_race_ids,
) -> TournamentModel:
    t = tournament
    rules = t.settings.rules
    rounds = []
    for rnd in t.rounds:
        matches = []
        for match in rnd.matches.values():
            # An ended match's result shows at once, before the rest of its round ends.
            outcome = t.outcome_of(match) if match.is_ended else None
            matches.append(
                MatchModel(
                    match_id=match.match_id,
                    players=list(match.players),
                    races=[
                        RaceResultModel(
                            placings=[list(group) for group in r.placings],
                            cards=dict(r.cards),
                        )
                        for r in match.races
                    ],
                    pending_race=match.pending_race,
                    race_id=pending_race_id(match, race_id_of),
                    forfeited=sorted(match.forfeited),
                    is_ended=match.is_ended,
                    winner=None if outcome is None else outcome.winner,
                    ranking=[] if outcome is None else list(outcome.ranking),
                    wins=_wins_of(rules, match, outcome),
                )
            )
        rounds.append(
            RoundModel(
                number=rnd.number,
                byes=list(rnd.plan.byes),
                matches=matches,
                is_ended=rnd.is_ended,
                game_numbers={str(k): v for k, v in sorted(rnd.game_numbers.items())}
                if rnd.is_ended
                else {},
            )
        )
    live = []
    current = t.current_round
    for match in t.live_matches():
        pending = match.pending_race
        race_id = pending_race_id(match, race_id_of)
        if current is not None and pending is not None and race_id is not None:
            live.append(
                LiveMatchModel(
                    match_id=match.match_id,
                    round=current.number,
                    race_number=pending,
                    race_id=race_id,
                    players=list(match.racing),
                )
            )
    return TournamentModel(
        tournament_id=t.tournament_id,
        version=version,
        name=name,
        game=t.game_id,
        format=rules.format.value,
        best_of=rules.best_of,
        rated=t.settings.rated,
        time_limit_s=time_limit_s,
        check_in_required=t.settings.check_in_required,
        phase=t.phase.value,
        paused=t.is_paused,
        admin=t.admin,
        players=[PlayerRef(player_id=p, name=names.get(p, p)) for p in t.registered],
        checked_in=sorted(t.checked_in),
        seeds=list(t.seeds),
        dropped=list(t.dropped),
        rounds=rounds,
        standings=[
            StandingModel(
                rank=s.rank,
                player_id=s.player,
                points=s.points,
                tiebreak=s.tiebreak,
                cards=s.cards,
                wins=s.wins,
                draws=s.draws,
                losses=s.losses,
                is_eliminated=s.is_eliminated,
                is_dropped=s.is_dropped,
            )
            for s in t.standings()
        ],
        bracket=[
            BracketMatchModel(
                match_id=b.match_id,
                step=b.step,
                state=b.state.value,
                players=list(b.players),
                winner=b.winner,
                loser=b.loser,
            )
            for b in t.bracket()
        ],
        live=live,
        champion=t.champion(),
        audit=[
            AuditModel(at_ms=round(a.at * 1000), actor=a.actor, act=a.act, detail=a.detail)
            for a in t.audit
        ],
        swiss_rounds=rules.swiss_rounds if rules.format is Format.SWISS else None,
    )


def _wins_of(rules: FormatRules, match: Match, outcome: MatchOutcome | None) -> list[int]:
    """A head-to-head match's race wins in its players' order: the outcome's once it is
    decided, else counted as the outcome counts them (while it is played); none for a heat."""
    if not rules.is_head_to_head:
        return []
    wins = race_wins(match.players, match.races) if outcome is None else outcome.wins
    return [wins.get(p, 0) for p in match.players]


def build_summary(tournament: Tournament, name: str) -> TournamentSummary:
    t = tournament
    return TournamentSummary(
        tournament_id=t.tournament_id,
        name=name,
        game=t.game_id,
        format=t.settings.rules.format.value,
        phase=t.phase.value,
        players=len(t.seeds) if t.phase in (Phase.RUNNING, Phase.FINISHED) else len(t.registered),
        round=len(t.rounds),
        champion=t.champion(),
    )
