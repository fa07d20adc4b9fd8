"""The tournament state machine: sans-I/O, deterministic, serializable.

Every command takes `now` (seconds, from the caller's clock), either refuses with a
`TournamentError` and changes nothing, or changes the state and returns the events the server
must act on (`tournament_events`). Lifecycle::

    registration -> [check-in] -> running (rounds of matches of races) -> finished

Rounds start by themselves as soon as every match of the previous one has ended (unless
paused). Every race number of a round uses the same deal: the game number comes from the
injected `DealSource(round_number, race_number)`, or, without one, from the caller through
`provide_game_number` after a `GameNumberNeeded` event. Deals stay secret until the round ends.
No match races a deal its players have seen: a correction that reopens an ended round deals its
races from then on anew, and one that drops races of a running round (voided, or cancelled
before their end) deals those race numbers anew.

Typical server loop::

    t = Tournament.create(tid, "klondike", settings, admin=admin_id, now=now, deal_source=deals)
    t.register(p, now=now) ...; t.open_check_in(admin_id, now=now); t.check_in(p, now=now) ...
    events = t.start(admin_id, now=now, ratings={...})
    # on each race result: events = t.record_race(match_id, race_number, result, now=now,
    #                                             absent=...)   (racers who never played it)
    # when a player joins their race: t.report_present(player, now=now)
    # every few seconds: events = t.tick(now=now)   (no-show forfeits; it changes nothing
    #                    unless t.has_no_shows_due(now=now))
    store(t.to_dict()); act on events in order
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Annotated, Any

from pydantic import TypeAdapter

from .match_scoring import score_match
from .pairing import plan_round
from .standings import compute_standings
from .tournament_bracket import BracketMatch, describe_bracket
from .tournament_errors import (
    CorrectionRefusedError,
    MatchId,
    NotAdminError,
    PlayerId,
    TournamentId,
    UnknownMatchError,
    UnknownPlayerError,
    WrongPhaseError,
)
from .tournament_events import (
    CheckInOpened,
    GameNumberNeeded,
    MatchEnded,
    MatchReopened,
    PlayerCheckedIn,
    PlayerDropped,
    PlayerForfeited,
    PlayerRegistered,
    PlayerUnregistered,
    RaceCancelled,
    RaceRecorded,
    RaceRequested,
    ResultCorrected,
    RoundEnded,
    RoundStarted,
    TournamentEvent,
    TournamentFinished,
    TournamentPaused,
    TournamentResumed,
    TournamentStarted,
)
from .tournament_model import (
    AS_SORTED_LIST,
    Format,
    MatchOutcome,
    PlayedRound,
    RaceResult,
    Standing,
    Stored,
)
from .tournament_state import AuditEntry, Match, Phase, Round, TournamentSettings

__all__ = ["SCHEMA_VERSION", "DealSource", "Tournament"]

SCHEMA_VERSION = 1

DealSource = Callable[[int, int], str]
"""(round number, race number) -> game number text; called once per pair, result stored,
and again after a correction drops races dealt that pair (`_deal_anew`, `_deal_again`): each
call must give a deal not given before (the server's source draws one at random)."""


def _deal_anew(rnd: Round) -> None:
    """A correction reopens `rnd` after it ended: its deals are out (the view lists them,
    every race's replay shows one), so the races it needs from now on are dealt again, each
    race number anew (from the deal source, or asked for with `GameNumberNeeded`), never on
    a deal a player may have looked at. The races played before keep theirs: each race's
    commitment and replay name its own."""
    rnd.game_numbers.clear()
    rnd.asked.clear()


@dataclass(frozen=True)
class _Scored:
    """A match's outcome and what it was scored from: its players, races and forfeits (the
    seeds and rules it also depends on are fixed once the tournament starts)."""

    players: tuple[PlayerId, ...]
    races: tuple[RaceResult, ...]
    forfeited: frozenset[PlayerId]
    outcome: MatchOutcome | None

    def scores(self, match: Match) -> bool:
        """Whether `match` is as it was scored: the same players, forfeits and races, in the
        same order (the same objects, or equal ones in a copy loaded since)."""
        races = match.races
        return (
            match.players == self.players
            and len(races) == len(self.races)
            and all(a is b or a == b for a, b in zip(races, self.races, strict=True))
            and match.forfeited == self.forfeited
        )


@dataclass(eq=False, repr=False)
class Tournament(Stored):
    """One tournament. Build with `create` or `from_dict`; never mutate its fields directly.

    Its fields (and theirs, down to the race results) are the stored document.
    """

    tournament_id: TournamentId
    game_id: str
    settings: TournamentSettings
    admin: PlayerId
    created_at: float
    phase: Phase = Phase.REGISTRATION
    is_paused: bool = False
    registered: list[PlayerId] = field(default_factory=list)
    checked_in: Annotated[set[PlayerId], AS_SORTED_LIST] = field(default_factory=set)
    seeds: list[PlayerId] = field(default_factory=list)
    dropped: list[PlayerId] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)
    _: KW_ONLY
    deal_source: InitVar[DealSource | None] = None

    def __post_init__(self, deal_source: DealSource | None) -> None:
        self._deal_source: DealSource | None = deal_source
        #: Each match's outcome with what it was scored from (`outcome_of`): a view scores
        #: every match of every round, and a match's races rarely change after it ends.
        self._outcomes: dict[MatchId, _Scored] = {}

    # --- creation and storage -----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        tournament_id: TournamentId,
        game_id: str,
        settings: TournamentSettings,
        *,
        admin: PlayerId,
        now: float,
        deal_source: DealSource | None = None,
    ) -> Tournament:
        settings.validate()
        tournament = cls(tournament_id, game_id, settings, admin, now, deal_source=deal_source)
        tournament._log(now, admin, "create", f"{settings.rules.format.value} of {game_id}")
        return tournament

    def to_dict(self) -> dict[str, Any]:
        """The whole state (secrets included: for the store, never for clients)."""
        return {"schema": SCHEMA_VERSION, **_STORED.dump_python(self, mode="json")}

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, deal_source: DealSource | None = None
    ) -> Tournament:
        """The tournament `to_dict` stored; a `pydantic.ValidationError` (a `ValueError`) when
        the document misses a field or holds a value of the wrong type."""
        if data.get("schema") != SCHEMA_VERSION:
            raise WrongPhaseError(f"stored tournament has schema {data.get('schema')!r}")
        return _STORED.validate_python({**data, "deal_source": deal_source})

    # --- queries ------------------------------------------------------------------------------

    @property
    def current_round(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    def is_admin(self, actor: PlayerId) -> bool:
        return actor == self.admin

    def history(self) -> list[PlayedRound]:
        """Rounds with every match decided (the current one too once it has ended)."""
        played: list[PlayedRound] = []
        for rnd in self.rounds:
            outcomes = {mid: self.outcome_of(m) for mid, m in rnd.matches.items()}
            decided = {mid: o for mid, o in outcomes.items() if o is not None}
            if len(decided) == len(outcomes) and rnd.is_ended:
                played.append(rnd.to_played(decided))
        return played

    def standings(self) -> list[Standing]:
        """The standings (empty before the seeding)."""
        if not self.seeds:
            return []
        # An elimination's standings put a match's loser out once the match has ended, as its
        # bracket does; the other formats' count whole rounds (a round's points come together).
        played = self._decided_so_far() if self._is_elimination else self.history()
        return compute_standings(self.settings.rules, self.seeds, played, self.dropped)

    @property
    def _is_elimination(self) -> bool:
        return self.settings.rules.format in (Format.SINGLE_ELIMINATION, Format.DOUBLE_ELIMINATION)

    def bracket(self) -> list[BracketMatch]:
        """Every match of an elimination bracket with its state (empty for other formats, and
        before the seeding)."""
        if not self._is_elimination:
            return []
        return describe_bracket(
            self.settings.rules, self.seeds, self._decided_so_far(), frozenset(self.dropped)
        )

    def _decided_so_far(self) -> list[PlayedRound]:
        """Like `history`, plus the matches of the current round that have already ended, so
        the bracket shows a result (and who goes through) as soon as it is known."""
        played: list[PlayedRound] = []
        for rnd in self.rounds:
            outcomes = {mid: self.outcome_of(m) for mid, m in rnd.matches.items() if m.is_ended}
            played.append(rnd.to_played({k: o for k, o in outcomes.items() if o is not None}))
        return played

    def champion(self) -> PlayerId | None:
        """Once finished: the winner of an elimination's last match or of the heats' final
        (nobody if he dropped out), or the best-ranked player still in of a Swiss or a round
        robin (one who dropped out, or was withdrawn as a no-show, keeps his line in the
        standings, not the title)."""
        if self.phase is not Phase.FINISHED:
            return None
        table = self.standings()
        if self.settings.rules.format in (Format.SWISS, Format.ROUND_ROBIN):
            return next((line.player for line in table if not line.is_dropped), None)
        top = table[0]
        return None if top.is_eliminated or top.is_dropped else top.player

    def live_matches(self) -> list[Match]:
        rnd = self.current_round
        if rnd is None or rnd.is_ended:
            return []
        return [m for m in rnd.matches.values() if not m.is_ended]

    def find_match(self, match_id: MatchId) -> tuple[Round, Match]:
        for rnd in self.rounds:
            match = rnd.matches.get(match_id)
            if match is not None:
                return rnd, match
        raise UnknownMatchError(f"no match {match_id!r} in tournament {self.tournament_id}")

    # --- registration and check-in -------------------------------------------------------------

    def register(self, player: PlayerId, *, now: float) -> list[TournamentEvent]:
        self._require(Phase.REGISTRATION, Phase.CHECK_IN, doing="register")
        if player in self.registered:
            raise WrongPhaseError(f"{player!r} is already registered")
        most = self.settings.max_players
        if most is not None and len(self.registered) >= most:
            raise WrongPhaseError(f"the tournament is full ({most} players)")
        self.registered.append(player)
        return [PlayerRegistered(player)]

    def unregister(self, player: PlayerId, *, now: float) -> list[TournamentEvent]:
        self._require(Phase.REGISTRATION, Phase.CHECK_IN, doing="unregister")
        self._require_registered(player)
        self.registered.remove(player)
        self.checked_in.discard(player)
        return [PlayerUnregistered(player)]

    def open_check_in(self, actor: PlayerId, *, now: float) -> list[TournamentEvent]:
        self._require_admin(actor, "open check-in")
        self._require(Phase.REGISTRATION, doing="open check-in")
        self.phase = Phase.CHECK_IN
        self._log(now, actor, "open_check_in")
        return [CheckInOpened()]

    def check_in(self, player: PlayerId, *, now: float) -> list[TournamentEvent]:
        self._require(Phase.CHECK_IN, doing="check in")
        self._require_registered(player)
        if player in self.checked_in:
            return []
        self.checked_in.add(player)
        return [PlayerCheckedIn(player)]

    def start(
        self, actor: PlayerId, *, now: float, ratings: Mapping[PlayerId, float] | None = None
    ) -> list[TournamentEvent]:
        """Seed by rating (higher first; unrated and equal ones in registration order), start."""
        self._require_admin(actor, "start the tournament")
        if self.settings.check_in_required:
            self._require(Phase.CHECK_IN, doing="start (open check-in first)")
            field_ = [p for p in self.registered if p in self.checked_in]
        else:
            self._require(Phase.REGISTRATION, Phase.CHECK_IN, doing="start")
            field_ = list(self.registered)
        least = max(2, self.settings.min_players)
        if len(field_) < least:
            raise WrongPhaseError(
                f"{len(field_)} player(s) ready, at least {least} needed to start"
            )
        scores = ratings or {}
        order = {p: i for i, p in enumerate(field_)}
        self.seeds = sorted(field_, key=lambda p: (-scores.get(p, float("-inf")), order[p]))
        removed = tuple(p for p in self.registered if p not in self.seeds)
        self.phase = Phase.RUNNING
        self._log(now, actor, "start", f"{len(self.seeds)} players")
        events: list[TournamentEvent] = [TournamentStarted(tuple(self.seeds), removed)]
        return events + self._settle(now)

    # --- playing ------------------------------------------------------------------------------

    def provide_game_number(
        self, round_number: int, race_number: int, game_number: str, *, now: float
    ) -> list[TournamentEvent]:
        """Give the deal of a race number of a round (when no deal source was injected)."""
        if not 1 <= round_number <= len(self.rounds):
            raise UnknownMatchError(f"there is no round {round_number}")
        rnd = self.rounds[round_number - 1]
        known = rnd.game_numbers.get(race_number)
        if known is not None and known != game_number:
            raise WrongPhaseError(f"round {round_number} race {race_number} already has its deal")
        rnd.game_numbers[race_number] = game_number
        return self._settle(now)

    def report_present(self, player: PlayerId, *, now: float) -> list[TournamentEvent]:
        """The player showed up for their current match (so no no-show forfeit)."""
        for match in self.live_matches():
            if player in match.racing:
                match.present.add(player)
        return []

    def record_race(
        self,
        match_id: MatchId,
        race_number: int,
        result: RaceResult,
        *,
        now: float,
        absent: Iterable[PlayerId] = (),
    ) -> list[TournamentEvent]:
        """Feed a race's finishing order (raises `InvalidResultError` for a bad one).

        `absent`: racers of `result` who took no part in the race (the server passes those
        who ended it gone without a single move). They are no-shows: each forfeits the match
        (`PlayerForfeited`, reason `no_show`, as when the no-show timer runs out) and, but
        in heats, is withdrawn (`PlayerDropped`); the race counts for the others only; when
        nobody else is left nothing is recorded. While the tournament does not forfeit
        no-shows (paused, or `no_show_grace` None) they are ranked as the race ranked them.

        A repeat of an already recorded result is ignored, so at-least-once delivery is safe.
        """
        self._require(Phase.RUNNING, Phase.FINISHED, doing="record a race")
        rnd, match = self.find_match(match_id)
        recorded = match.races[race_number - 1] if race_number <= len(match.races) else None
        counted = result.without(match.forfeited)
        if (recorded is not None and recorded == counted) or not counted.players:
            return []  # a repeat, or a race of players who have all forfeited meanwhile
        self._require(Phase.RUNNING, doing="record a race")
        if rnd is not self.current_round or match.is_ended or match.pending_race != race_number:
            raise UnknownMatchError(
                f"match {match_id} is not waiting for race {race_number}"
                " (to change a recorded result, ask the admin for a correction)"
            )
        result = result.without(match.forfeited)  # a race may end after a forfeit
        result.validate(match.racing)
        events: list[TournamentEvent] = []
        if self._forfeits_no_shows:
            no_shows = set(absent) & set(match.racing)
            for player in sorted(no_shows, key=match.racing.index):
                events += self._forfeit(match, player, "no_show")
            result = result.without(no_shows)
        if result.players:
            match.races.append(result)
            events.append(RaceRecorded(match_id, race_number, result))
        match.pending_race = None
        match.requested_at = None
        match.present.update(result.players)
        return events + self._settle(now)

    @property
    def _forfeits_no_shows(self) -> bool:
        return not self.is_paused and self.settings.no_show_grace is not None

    def tick(self, *, now: float) -> list[TournamentEvent]:
        """Forfeit players absent from their race once the grace period has passed, and
        withdraw them (heats leave them out of the advancers): they are not paired again."""
        grace = self.settings.no_show_grace
        if self.phase is not Phase.RUNNING or not self._forfeits_no_shows or grace is None:
            return []
        events: list[TournamentEvent] = []
        for match in self.live_matches():
            if match.requested_at is None or now - match.requested_at < grace:
                continue
            for player in match.racing:
                if player not in match.present:
                    events += self._forfeit(match, player, "no_show")
        return events + self._settle(now)

    def has_no_shows_due(self, *, now: float) -> bool:
        """Whether `tick(now=now)` would change anything: a live match whose grace period
        has passed still has a racer who is not present. Otherwise it changes nothing: the
        `_settle` it ends with reads no clock, and every command that changes what `_settle`
        reads settles before it returns, so time alone leaves it nothing to do. The server
        asks this of the tournament it holds before loading the stored one to tick it."""
        grace = self.settings.no_show_grace
        if self.phase is not Phase.RUNNING or not self._forfeits_no_shows or grace is None:
            return False
        return any(
            match.requested_at is not None
            and now - match.requested_at >= grace
            and any(player not in match.present for player in match.racing)
            for match in self.live_matches()
        )

    def drop(self, player: PlayerId, *, actor: PlayerId, now: float) -> list[TournamentEvent]:
        """A player leaves (themselves, or removed by the admin): forfeits their live match."""
        if actor != player:
            self._require_admin(actor, f"drop {player!r}")
        if self.phase in (Phase.REGISTRATION, Phase.CHECK_IN):
            events = self.unregister(player, now=now)
        else:
            # Someone not in it is told so, whatever the phase (not that the phase forbids it).
            if player not in self.seeds or player in self.dropped:
                raise UnknownPlayerError(f"{player!r} is not playing in this tournament")
            self._require(Phase.RUNNING, doing="drop out")
            self.dropped.append(player)
            events = [PlayerDropped(player)]
            for match in self.live_matches():
                if player in match.racing:
                    events += self._forfeit(match, player, "dropped")
            events += self._settle(now)
        if actor != player:
            self._log(now, actor, "drop", str(player))
        return events

    # --- admin --------------------------------------------------------------------------------

    def pause(self, actor: PlayerId, *, now: float) -> list[TournamentEvent]:
        """No new round or race starts and nobody is forfeited until `resume`."""
        self._require_admin(actor, "pause")
        self._require(Phase.RUNNING, doing="pause")
        if self.is_paused:
            raise WrongPhaseError("the tournament is already paused")
        self.is_paused = True
        self._log(now, actor, "pause")
        return [TournamentPaused()]

    def resume(self, actor: PlayerId, *, now: float) -> list[TournamentEvent]:
        self._require_admin(actor, "resume")
        self._require(Phase.RUNNING, doing="resume")
        if not self.is_paused:
            raise WrongPhaseError("the tournament is not paused")
        self.is_paused = False
        for match in self.live_matches():
            if match.requested_at is not None:
                match.requested_at = now  # the no-show grace starts again
        self._log(now, actor, "resume")
        return [TournamentResumed(), *self._settle(now)]

    def forfeit(
        self, actor: PlayerId, match_id: MatchId, player: PlayerId, *, now: float
    ) -> list[TournamentEvent]:
        """The admin rules that `player` loses the live match `match_id` by forfeit."""
        self._require_admin(actor, "forfeit a player")
        self._require(Phase.RUNNING, doing="forfeit a player")
        _, match = self.find_match(match_id)
        if match.is_ended or match not in self.live_matches():
            raise WrongPhaseError(f"match {match_id} has already ended; correct a result instead")
        if player not in match.racing:
            raise UnknownPlayerError(f"{player!r} is not playing match {match_id}")
        events = self._forfeit(match, player, "admin")
        self._log(now, actor, "forfeit", f"{player} in {match_id}")
        return events + self._settle(now)

    def correct_result(
        self,
        actor: PlayerId,
        match_id: MatchId,
        race_number: int,
        result: RaceResult,
        *,
        now: float,
        reason: str = "",
    ) -> list[TournamentEvent]:
        """Replace a recorded race result and re-derive the match, round and what follows.

        Refused once a later round has started, since its pairings rest on the old result.
        """
        rnd, match = self.find_correctable_race(actor, match_id, race_number)
        result.validate(match.races[race_number - 1].players)
        races = [*match.races[: race_number - 1], result, *match.races[race_number:]]
        was_decided = self.outcome_of(match) is not None
        # Races after the point where the races alone now decide the match are voided. Not
        # its forfeits: each came after every race recorded before it, which stand.
        decided_after = len(races)
        for count in range(race_number, len(races) + 1):
            if self._score(match, races[:count], forfeited=()) is not None:
                decided_after = count
                break
        voided = tuple(range(decided_after + 1, len(races) + 1))
        match.races = races[:decided_after]
        events: list[TournamentEvent] = [ResultCorrected(match_id, race_number, result, voided)]
        self._log(now, actor, "correct_result", f"{match_id} race {race_number}: {reason}".strip())
        outcome = self.outcome_of(match)
        if outcome is None:
            if match.is_ended or was_decided:
                if rnd.is_ended:
                    _deal_anew(rnd)
                match.is_ended = False
                rnd.is_ended = False
                events.append(MatchReopened(match_id))
                # One who dropped out once the match was over forfeited nothing: he is not
                # seated again, but forfeits it now, as he would have had it been live.
                for player in match.racing:
                    if player in self.dropped:
                        events += self._forfeit(match, player, "dropped")
        else:
            dropped = list(voided)
            if match.pending_race is not None:
                events.append(RaceCancelled(match_id, match.pending_race))
                dropped.append(match.pending_race)
                match.pending_race = None
                match.requested_at = None
            if not rnd.is_ended:
                self._deal_again(rnd, dropped)
            if match.is_ended:
                events.append(self._match_ended(rnd, match, outcome))
        if self.phase is Phase.FINISHED:
            self.phase = Phase.RUNNING  # re-derive: finish again, or play what is now needed
        return events + self._settle(now)

    def find_correctable_race(
        self, actor: PlayerId, match_id: MatchId, race_number: int
    ) -> tuple[Round, Match]:
        """The round and match of the recorded race `actor` asks `correct_result` to
        replace, or the refusal it gets (not the admin, not running, no such match or race,
        or a round already followed by another). Checked before anything about the new
        result, so a correction of a race that does not exist is refused as that."""
        self._require_admin(actor, "correct a result")
        self._require(Phase.RUNNING, Phase.FINISHED, doing="correct a result")
        rnd, match = self.find_match(match_id)
        if rnd is not self.current_round:
            raise CorrectionRefusedError(
                f"match {match_id} belongs to round {rnd.number}, and round {len(self.rounds)}"
                " has already started from its results; corrections are possible until the"
                " next round starts (pause the tournament to keep that window open)"
            )
        if not 1 <= race_number <= len(match.races):
            raise UnknownMatchError(f"match {match_id} has no recorded race {race_number}")
        return rnd, match

    # --- internals ----------------------------------------------------------------------------

    def _score(
        self,
        match: Match,
        races: list[RaceResult],
        *,
        forfeited: Iterable[PlayerId] | None = None,
    ) -> MatchOutcome | None:
        """`match` scored from `races`, with its forfeits (or `forfeited`)."""
        return score_match(
            self.settings.rules,
            match.match_id,
            match.players,
            races,
            seeds=self.seeds,
            forfeited=match.forfeited if forfeited is None else forfeited,
        )

    def outcome_of(self, match: Match) -> MatchOutcome | None:
        """The match's outcome from the races it played (None while undecided)."""
        known = self._outcomes.get(match.match_id)
        if known is not None and known.scores(match):
            return known.outcome
        outcome = self._score(match, match.races)
        self._outcomes[match.match_id] = _Scored(
            match.players, tuple(match.races), frozenset(match.forfeited), outcome
        )
        return outcome

    def remember_outcomes_of(self, earlier: Tournament) -> None:
        """Start from the outcomes `earlier` (this tournament as loaded before: every change
        is applied to a copy) remembered; each serves only a match still as it was scored."""
        if earlier.tournament_id == self.tournament_id and earlier.seeds == self.seeds:
            self._outcomes.update(earlier._outcomes)

    def _forfeit(self, match: Match, player: PlayerId, reason: str) -> list[TournamentEvent]:
        match.forfeited.add(player)
        events: list[TournamentEvent] = [PlayerForfeited(match.match_id, player, reason)]
        if (
            reason == "no_show"
            and self.settings.rules.format is not Format.HEATS
            and player not in self.dropped
        ):
            # A player who did not come is withdrawn, as if he had dropped out: a Swiss
            # neither pairs him against one who plays nor hands him the bye (worth a win)
            # ahead of them, a round robin gives his scheduled opponents a bye instead of a
            # wait for him, and an elimination's later match he would reach (the losers
            # bracket, the third-place match) is a walkover. A heat's forfeit already
            # leaves him out of its advancers: he is in no later heat.
            self.dropped.append(player)
            events.append(PlayerDropped(player))
        return events

    def _match_ended(self, rnd: Round, match: Match, outcome: MatchOutcome) -> MatchEnded:
        return MatchEnded(
            match.match_id,
            rnd.number,
            outcome.ranking,
            outcome.winner,
            outcome.is_draw,
            tuple(sorted(outcome.forfeited)),
        )

    def _settle(self, now: float) -> list[TournamentEvent]:
        """End what is decided, request the races now needed, advance rounds; repeat."""
        events: list[TournamentEvent] = []
        while self.phase is Phase.RUNNING:
            rnd = self.current_round
            if rnd is not None and not rnd.is_ended:
                events += self._settle_round(rnd, now)
                if not rnd.is_ended:
                    break
            if self.is_paused:
                break
            plan = plan_round(self.settings.rules, self.seeds, self.history(), self.dropped)
            if plan is None:
                self.phase = Phase.FINISHED
                standings = tuple(self.standings())
                events.append(TournamentFinished(self.champion(), standings))
                break
            new = Round.open(len(self.rounds) + 1, plan)
            self.rounds.append(new)
            events.append(RoundStarted(new.number, plan.pairings, plan.byes))
        return events

    def _settle_round(self, rnd: Round, now: float) -> list[TournamentEvent]:
        events: list[TournamentEvent] = []
        for match in rnd.matches.values():
            if match.is_ended:
                continue
            outcome = self.outcome_of(match)
            if outcome is not None:
                match.is_ended = True
                if match.pending_race is not None:
                    events.append(RaceCancelled(match.match_id, match.pending_race))
                    match.pending_race = None
                    match.requested_at = None
                events.append(self._match_ended(rnd, match, outcome))
            elif match.pending_race is None and not self.is_paused:
                events += self._request_race(rnd, match, now)
        if all(m.is_ended for m in rnd.matches.values()):
            rnd.is_ended = True
            events.append(RoundEnded(rnd.number, dict(rnd.game_numbers)))
        return events

    def _deal_again(self, rnd: Round, race_numbers: Iterable[int]) -> None:
        """A correction dropped races of a match of the running round `rnd` (voided, or
        cancelled before their end) whose players have seen their deals: a later correction
        may make the match race those numbers again. So each of `race_numbers` gets a fresh
        deal now, which every match of the round that races it from then on gets (the source
        is called again; without one the deal is forgotten, and `GameNumberNeeded` asked when
        a match needs it). Drawn now, not when a match needs it as in `_deal_anew`: another
        match may have a race requested but not opened yet (the store was away), which the
        server opens later on the round's deal for its number. Races already requested keep
        theirs: each race's commitment and replay name its own, and until the round ends no
        replay shows it."""
        for number in race_numbers:
            if number not in rnd.game_numbers:
                continue  # already forgotten: the next match to race it is asked a new one
            if self._deal_source is not None:
                rnd.game_numbers[number] = self._deal_source(rnd.number, number)
            else:
                del rnd.game_numbers[number]
                rnd.asked.discard(number)

    def _request_race(self, rnd: Round, match: Match, now: float) -> list[TournamentEvent]:
        number = len(match.races) + 1
        game_number = rnd.game_numbers.get(number)
        if game_number is None and self._deal_source is not None:
            game_number = self._deal_source(rnd.number, number)
            rnd.game_numbers[number] = game_number
        if game_number is None:
            if number in rnd.asked:
                return []
            rnd.asked.add(number)
            return [GameNumberNeeded(rnd.number, number)]
        match.pending_race = number
        match.requested_at = now
        return [RaceRequested(match.match_id, rnd.number, number, match.racing, game_number)]

    def _log(self, now: float, actor: PlayerId, act: str, detail: str = "") -> None:
        self.audit.append(AuditEntry(now, actor, act, detail))

    def _require(self, *phases: Phase, doing: str) -> None:
        if self.phase not in phases:
            allowed = " or ".join(p.value for p in phases)
            raise WrongPhaseError(
                f"cannot {doing} while the tournament is in phase {self.phase.value} "
                f"(needs phase {allowed})"
            )

    def _require_admin(self, actor: PlayerId, doing: str) -> None:
        if not self.is_admin(actor):
            raise NotAdminError(f"only the tournament admin may {doing}")

    def _require_registered(self, player: PlayerId) -> None:
        if player not in self.registered:
            raise UnknownPlayerError(f"{player!r} is not registered in this tournament")


_STORED = TypeAdapter(Tournament)
"""Reads and writes the stored document (but its `schema`, which it ignores)."""
