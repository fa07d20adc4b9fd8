"""The tournament requests of players and directors: create (with the admin token), list,
watch and unwatch, join, check in, leave, and the director's acts (`tournament_admin`).

Each request that changes a tournament is one command applied through `_mutate`
(`tournament_changes.py`), and its answer is the tournament's view to the requester. A list is
one frame however many tournaments a server has held: the store pages them, and a summary is
made once per stored version and kept (the latest used, `SUMMARIES_KEPT`).
"""

from __future__ import annotations

import hmac
import logging
import random
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solrace.server.guesses import ADMIN_TOKEN_GUESSES, Guesses
from solrace.server.identities import identity_of
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import TournamentError, TournamentId, WrongPhaseError
from solrace.server.protocol.tournament_events import TournamentEvent
from solrace.server.protocol.tournament_messages import (
    TOURNAMENT_ID_PREFIX,
    TOURNAMENT_LIST_LIMIT,
    CheckIn,
    CreateTournament,
    JoinTournament,
    LeaveTournament,
    ListTournaments,
    TournamentAdmin,
    TournamentList,
    TournamentSummary,
    UnwatchTournament,
    WatchTournament,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, format_rules
from solrace.server.protocol.tournament_state import Phase, TournamentSettings
from solrace.server.protocol.tournament_view import build_summary, largest_field
from solrace.server.race_setup import check_race_settings
from solrace.server.ratings import RatingService
from solrace.server.routing import Handler
from solrace.server.session import Session
from solrace.server.store.base import TournamentVersion
from solrace.server.tournament_changes import TournamentChanges
from solrace.server.tournament_host import RaceHost
from solrace.server.tournament_live import Live, admin_command, refusal

log = logging.getLogger("solrace.server.tournament_requests")

#: Tournament summaries kept for lists (`TournamentRequests._summaries`): a few lists' worth
#: (`TOURNAMENT_LIST_LIMIT` each), whatever the number of tournaments a server has held.
SUMMARIES_KEPT = 4 * TOURNAMENT_LIST_LIMIT
#: Ids a new tournament tries (`new_tournament_id`) before its creation is refused,
#: `unavailable` "tournament id taken; retry". Each is taken with odds of (tournaments the
#: store holds) / 16.7 million: with one try, a store of 100,000 refused one creation in 168
#: (and one of 2,000 tournaments had refused one by then about once in nine); with eight,
#: fewer than one in 10^17.
TOURNAMENT_ID_ATTEMPTS = 8


def new_tournament_id() -> TournamentId:
    """A random tournament id: "t" and 6 hex digits (16.7 million ids), short enough for a
    director and players to type (`solrace tournament join t4c1d2e`); a taken one is tried
    again with another (`TOURNAMENT_ID_ATTEMPTS`)."""
    return TournamentId(TOURNAMENT_ID_PREFIX + secrets.token_hex(3))


@dataclass(frozen=True)
class _Summary:
    """A tournament's summary for `list_tournaments` and the version it shows: it stands
    while the store lists that version of the tournament."""

    version: int
    summary: TournamentSummary

    def is_of(self, version: int) -> bool:
        return self.version == version


class TournamentRequests(TournamentChanges):
    """The requests of players and directors (the module's docstring), each a handler of
    `handlers`, on the tournaments `TournamentChanges` holds and changes."""

    def __init__(
        self, host: RaceHost, ratings: RatingService, rng: random.Random | None = None
    ) -> None:
        super().__init__(host, rng)
        self.ratings = ratings
        #: Summaries for `list_tournaments` and the version each shows, the latest used last:
        #: at most `SUMMARIES_KEPT`.
        self._summaries: OrderedDict[str, _Summary] = OrderedDict()
        #: Wrong admin tokens, per connection and per address (`guesses.Guesses`).
        self.admin_guesses = Guesses(
            ADMIN_TOKEN_GUESSES, per_address=self.settings.max_connections_per_address > 0
        )
        #: A new tournament's id (`new_tournament_id`; a test gives its own, to meet a taken
        #: id).
        self.new_tournament_id: Callable[[], TournamentId] = new_tournament_id

    @property
    def handlers(self) -> dict[type[Any], Handler]:
        return {
            CreateTournament: self._create,
            ListTournaments: self._list,
            WatchTournament: self._watch,
            UnwatchTournament: self._unwatch,
            JoinTournament: self._join,
            CheckIn: self._check_in,
            LeaveTournament: self._leave,
            TournamentAdmin: self._admin,
        }

    def _check_admin(self, session: Session, token: str) -> None:
        """Refuse `token` unless it is the server's admin token (compared in constant time);
        a wrong one, or one from an address out of guesses, is counted (`admin_guesses`)."""
        guesses = self.admin_guesses
        guesses.check(session)
        expected = self.settings.admin_token
        if not expected or not hmac.compare_digest(token.encode(), expected.encode()):
            refusal = RaceError(ErrorCode.NOT_ADMIN, "a valid admin token is needed for that")
            raise guesses.wrong(session, refusal)

    async def _create(self, session: Session, message: CreateTournament) -> None:
        self._check_admin(session, message.admin_token)
        admin, name = identity_of(session)
        settings = self.settings
        check_race_settings(settings, message.game, message.time_limit_s)
        try:
            rules = format_rules(message)
        except TournamentError as exc:
            raise refusal(exc) from None
        if rules.format is Format.HEATS and rules.heat_size > settings.max_seats:
            raise RaceError(
                ErrorCode.INVALID_SETTINGS,
                f"heat_size {rules.heat_size}: this server's races seat at most"
                f" {settings.max_seats} players",
            )
        most = largest_field(rules, settings.max_tournament_players)
        for field_name, asked in (
            ("max_players", message.max_players),
            ("min_players", message.min_players),
        ):
            if asked is not None and asked > most:
                raise RaceError(
                    ErrorCode.INVALID_SETTINGS, f"{field_name} {asked}: {self._field_limit(rules)}"
                )
        grace = message.no_show_grace_s
        tournament_settings = TournamentSettings(
            rules,
            min_players=message.min_players,
            max_players=message.max_players,
            check_in_required=message.check_in_required,
            no_show_grace=None if grace is None else float(grace),
            rated=message.rated,
        )
        for _ in range(TOURNAMENT_ID_ATTEMPTS):
            tournament_id = self.new_tournament_id()
            try:
                tournament = Tournament.create(
                    tournament_id,
                    message.game,
                    tournament_settings,
                    admin=admin,
                    now=self._now(),
                    deal_source=self._deal,
                )
            except TournamentError as exc:
                raise refusal(exc) from None
            live = Live(
                tournament,
                version=1,
                name=message.name,
                time_limit_s=message.time_limit_s,
                created_at_ms=self.host.clock(),
                names={admin: name},
            )
            if await self.store.save_tournament(live.to_record(), None):
                break
            log.info("tournament id %s taken: trying another", tournament_id)
        else:
            raise RaceError(ErrorCode.UNAVAILABLE, "tournament id taken; retry")
        self.live[tournament_id] = live
        self.views.send(session, live)
        log.info("%s created tournament %s (%s)", name, tournament_id, message.format)

    def _field_limit(self, rules: FormatRules) -> str:
        """Why a tournament of `rules` takes no more players, for a refusal."""
        cap = self.settings.max_tournament_players
        most = largest_field(rules, cap)
        if most == cap:
            return (
                f"this server takes at most {cap} players per tournament"
                " (SOLRACE_MAX_TOURNAMENT_PLAYERS)"
            )
        return (
            f"a {rules.format.value} of best-of-{rules.best_of} races takes at most {most}"
            " players (its view, sent whole to every watcher, must stay small)"
        )

    async def _list(self, session: Session, message: ListTournaments) -> None:
        """At most `TOURNAMENT_LIST_LIMIT` tournaments, so a list stays one frame however many
        a server has held: the unfinished ones first, then the latest finished, each part
        oldest first; the others are counted in `more`. With `skip_finished` N, a later page:
        the finished ones before the N latest, and no unfinished one. The store is asked for
        the open tournaments' versions and one page of the finished ones' (not every one ever
        held), and a summary is made once per stored version (`_summary`)."""
        limit, skip = TOURNAMENT_LIST_LIMIT, message.skip_finished
        shown: list[TournamentVersion] = []
        more = 0
        if not skip:
            unfinished = [v for v in await self.store.open_tournament_versions() if not v.finished]
            shown, more = unfinished[:limit], max(0, len(unfinished) - limit)
        page, finished = await self.store.finished_tournament_versions(skip, limit - len(shown))
        more += max(0, finished - skip - len(page))
        # One that finished between the two reads is in both: listed once.
        listed = {v.tournament_id: v for v in shown + page}.values()
        summaries = []
        for version in sorted(listed, key=lambda v: (v.finished, v.order)):
            summary = await self._summary(version)
            if summary is not None:
                summaries.append(summary)
        session.send(TournamentList(tournaments=summaries, more=more))

    async def _summary(self, stored: TournamentVersion) -> TournamentSummary | None:
        """The summary of a tournament at its `stored` version (None: no longer stored). Made
        once per version and kept (`_summaries`, the latest used): a finished 256-player
        Swiss's document is ~0.5 MB and ~25 ms to read and score, so reading every listed
        document at every list let one client keep the node busy."""
        tournament_id = stored.tournament_id
        known = self._summaries.get(tournament_id)
        if known is None or not known.is_of(stored.version):
            live = self.live.get(tournament_id)
            if live is None or live.version != stored.version:
                record = await self.store.get_tournament(tournament_id)
                if record is None:
                    return None
                live = Live.from_record(record, self._deal)
            known = _Summary(live.version, build_summary(live.tournament, live.name))
            self._summaries[tournament_id] = known
        self._summaries.move_to_end(tournament_id)
        while len(self._summaries) > SUMMARIES_KEPT:
            self._summaries.popitem(last=False)
        return known.summary

    async def _watch(self, session: Session, message: WatchTournament) -> None:
        self.views.watch(session, await self._load(message.tournament_id))

    async def _unwatch(self, session: Session, message: UnwatchTournament) -> None:
        self.views.unwatch(session, message.tournament_id)

    async def _join(self, session: Session, message: JoinTournament) -> None:
        player, name = identity_of(session)
        now = self._now()

        def command(live: Live) -> list[TournamentEvent]:
            t = live.tournament
            rules = t.settings.rules
            is_open = t.phase in (Phase.REGISTRATION, Phase.CHECK_IN)
            most = largest_field(rules, self.settings.max_tournament_players)
            if is_open and player not in t.registered and len(t.registered) >= most:
                raise WrongPhaseError(f"the tournament is full: {self._field_limit(rules)}")
            live.names[player] = name
            return t.register(player, now=now)

        self.views.answer(session, await self._mutate(message.tournament_id, command))

    async def _check_in(self, session: Session, message: CheckIn) -> None:
        player, _ = identity_of(session)
        now = self._now()
        live = await self._mutate(
            message.tournament_id, lambda live: live.tournament.check_in(player, now=now)
        )
        self.views.answer(session, live)

    async def _leave(self, session: Session, message: LeaveTournament) -> None:
        player, _ = identity_of(session)
        now = self._now()
        live = await self._mutate(
            message.tournament_id, lambda live: live.tournament.drop(player, actor=player, now=now)
        )
        self.views.answer(session, live)

    async def _admin(self, session: Session, message: TournamentAdmin) -> None:
        self._check_admin(session, message.admin_token)
        ratings: dict[PlayerId, float] = {}
        if message.act == "start":  # seeding by rating: the tournament's game is needed
            live = await self._load(message.tournament_id)
            table = await self.ratings.game_ratings(live.tournament.game_id)
            ratings = {p: float(r.display()) for p, r in table.items()}
        now = self._now()
        command = admin_command(message, ratings, now)
        self.views.answer(session, await self._mutate(message.tournament_id, command))


__all__ = ["SUMMARIES_KEPT", "TournamentRequests"]
