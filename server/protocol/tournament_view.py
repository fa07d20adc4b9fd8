"""A tournament as clients see it: `Tournament` state -> `TournamentModel` (pure).

Deals stay hidden until their round ends; everything else (registrations, rounds, races,
standings, bracket, live matches with their race ids, audit log) is public.
"""

from __future__ import annotations

from collections.abc import Mapping

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
from .tournament_state import Phase

RaceKey = tuple[MatchId, int]
"""(match id, race number) of the current round."""


def build_view(
    tournament: Tournament,
    *,
    version: int,
    name: str,
    time_limit_s: int,
    names: Mapping[str, str],
    race_ids: Mapping[RaceKey, str],
) -> TournamentModel:
    t = tournament
    rounds = []
    for rnd in t.rounds:
        matches = []
        for match in rnd.matches.values():
            # An ended match's winner shows at once, before the rest of its round ends.
            outcome = t.outcome_of(match) if match.is_ended else None
            pending = match.pending_race
            matches.append(
                MatchModel(
                    match_id=match.match_id,
                    players=list(match.players),
                    races=[
                        RaceResultModel(
                            placings=[list(group) for group in r.placings],
                            cards={str(p): n for p, n in r.cards.items()},
                        )
                        for r in match.races
                    ],
                    pending_race=pending,
                    race_id=None if pending is None else race_ids.get((match.match_id, pending)),
                    forfeited=sorted(match.forfeited),
                    is_ended=match.is_ended,
                    winner=None if outcome is None else outcome.winner,
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
        race_id = None if pending is None else race_ids.get((match.match_id, pending))
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
    rules = t.settings.rules
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
    )


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
