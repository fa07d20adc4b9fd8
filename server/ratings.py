"""Ratings at run time: rate each finished rated race once, answer leaderboards and profiles.

The maths is pure (`protocol/ratings.py`); this module reads the racers' ratings, has the
update built from the race's full finishing order (`build_rating_update`; tied ranks share a
place) and hands it to the store, which applies it at most once per race and only over the
ratings it was computed from. A `STALE` answer (a racer's rating moved meanwhile, e.g. another
node rated another race) is read again and recomputed.

Absent racers (`protocol.race.absent_racers`: away when the race ended, without a single move)
took no part in it: they are left out of its rating, and a race with fewer than two racers
left is not rated.

A rated race is rated by the node that finished it, right after; the save that finished it
also put it among the store's races to rate, so what a crash or an outage left unrated (the
node died before rating it, the store failed, its ratings kept changing) is rated when a node
starts and every `RATING_SWEEP_S` after (`rate_due`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from solrace.engine import GAME_IDS
from solrace.server.protocol.competition_records import RatingOutcome
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.race import absent_racers, placings_of
from solrace.server.protocol.ratings import (
    DEFAULT_CONFIG,
    Rating,
    RatingConfig,
    build_rating_update,
    leaderboard,
    to_rating,
)
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.protocol.tournament_messages import (
    LEADERBOARD_LIMIT,
    GameRating,
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    LeaderboardRow,
    Profile,
    RecentResultModel,
)
from solrace.server.routing import Handler
from solrace.server.session import Session
from solrace.server.store import Store, StoreError
from solrace.server.timers import run_every
from solrace.tasks import cancel_and_wait

log = logging.getLogger("solrace.server.ratings")

STALE_RETRIES = 5
#: How often a node rates the finished rated races left unrated (`RatingService.rate_due`).
RATING_SWEEP_S = 60.0
RECENT_SHOWN = 10
#: A game's leaderboard is read from the store at most this often (each read parses every
#: rating of the game: ~35 ms at 5,000 rated players), or sooner after this node rates a race
#: of it: a client asking in a loop costs the node little.
LEADERBOARD_FRESH_S = 2.0


class RatingService:
    def __init__(
        self,
        store: Store,
        config: RatingConfig = DEFAULT_CONFIG,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        #: (game, include_provisional) -> when its reading began, how many races of the game
        #: this node had rated then (`_rated`), and its first `LEADERBOARD_LIMIT` rows.
        self._boards: dict[tuple[str, bool], tuple[float, int, list[LeaderboardRow]]] = {}
        #: Game -> races of it rated here: a board read before the last one is stale.
        self._rated: dict[str, int] = {}
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def handlers(self) -> dict[type[Any], Handler]:
        return {GetLeaderboard: self.get_leaderboard, GetProfile: self.get_profile}

    async def display_ratings(self, player_id: PlayerId) -> dict[str, float]:
        """Game id -> displayed rating, for `welcome.ratings`."""
        records = await self.store.get_ratings(player_id)
        return {r.game: float(to_rating(r).display(self.config)) for r in records}

    async def game_ratings(self, game: str) -> dict[PlayerId, Rating]:
        return {r.player_id: to_rating(r) for r in await self.store.list_ratings(game)}

    async def race_finished(self, record: RaceRecord) -> None:
        """Rate a finished rated race among the racers who took part (a repeat, here or on
        another node, changes nothing); fewer than two of them, or all of them tied: not
        rated. A race nobody won against anybody says nothing of who plays better, and two
        players resigning at once, again and again, would each gain a win and a surer, so
        higher, displayed rating every time."""
        if not record.rated or record.status is not RaceStatus.FINISHED:
            return
        absent = absent_racers(record)
        taking_part = ([p for p in group if p not in absent] for group in placings_of(record))
        placings = [group for group in taking_part if group]
        players = [p for group in placings for p in group]
        if len(placings) < 2:
            if len(players) >= 2:
                log.info("race %s not rated: every racer tied", record.race_id)
            elif absent:
                log.info("race %s not rated: %d racer(s) absent", record.race_id, len(absent))
            await self.store.rating_settled(record.race_id)
            return
        at_ms = record.finished_at_ms or 0
        for _ in range(STALE_RETRIES):
            stored = {}
            for player_id in players:
                for rating in await self.store.get_ratings(player_id):
                    if rating.game == record.game:
                        stored[player_id] = rating
            update = build_rating_update(
                record.race_id, record.game, placings, stored, at_ms, self.config
            )
            outcome = await self.store.apply_rating_update(update)
            if outcome is RatingOutcome.APPLIED:
                self._rated[record.game] = self._rated.get(record.game, 0) + 1
            if outcome is not RatingOutcome.STALE:
                if outcome is RatingOutcome.APPLIED:
                    log.info("rated race %s (%d racers)", record.race_id, len(players))
                return
        log.warning("race %s not rated yet: ratings kept changing under it", record.race_id)

    async def rate_due(self) -> None:
        """Rate the finished rated races the store still has to rate (a crash between a
        race's finish and its rating, a store outage); each at most once, whichever node
        gets there first. The store failing stops the round: the next one tries again."""
        due = await self.store.races_to_rate()
        for race_id in due:
            record = await self.store.get_race(race_id)
            if record is None or record.status is not RaceStatus.FINISHED or not record.rated:
                await self.store.rating_settled(race_id)  # nothing to rate (not one of ours)
                continue
            await self.race_finished(record)
        if due:
            log.info("%d finished race(s) were waiting to be rated: done", len(due))

    async def start(self) -> None:
        """Rate what was left unrated, now and every `RATING_SWEEP_S` until `stop`."""
        try:
            await self.rate_due()
        except StoreError as exc:
            log.warning("races left unrated wait for the store: %s", exc)
        self._sweeper = asyncio.create_task(
            run_every(RATING_SWEEP_S, self.rate_due, log, "rating the races left unrated"),
            name="solrace-ratings",
        )

    async def stop(self) -> None:
        if self._sweeper is not None:
            await cancel_and_wait([self._sweeper])
            self._sweeper = None

    # --- requests ------------------------------------------------------------------------

    async def get_leaderboard(self, session: Session, message: GetLeaderboard) -> None:
        if message.game not in GAME_IDS:
            raise RaceError(ErrorCode.UNKNOWN_GAME, f"games: {', '.join(GAME_IDS)}")
        key = (message.game, message.include_provisional)
        now, rated = self.clock(), self._rated.get(message.game, 0)
        known = self._boards.get(key)
        if known is None or now - known[0] >= LEADERBOARD_FRESH_S or known[1] != rated:
            # A race rated while it is read makes it stale at once (it may not show).
            known = (now, rated, await self._leaderboard(*key))
            self._boards[key] = known
        session.send(Leaderboard(game=message.game, entries=known[2][: message.limit]))

    async def _leaderboard(self, game: str, include_provisional: bool) -> list[LeaderboardRow]:
        rows = leaderboard(
            await self.game_ratings(game),
            self.config,
            include_provisional=include_provisional,
            limit=LEADERBOARD_LIMIT,
        )
        entries = []
        for row in rows:
            player = await self.store.get_player(row.player)
            entries.append(
                LeaderboardRow(
                    rank=row.rank,
                    player_id=row.player,
                    name=player.name if player else row.player,
                    rating=row.rating,
                    races=row.races,
                    wins=row.wins,
                    provisional=row.is_provisional,
                )
            )
        return entries

    async def get_profile(self, session: Session, message: GetProfile) -> None:
        if message.name is not None:
            player = await self.store.get_player_by_name(message.name)
            if player is None:
                raise RaceError(ErrorCode.UNKNOWN_PLAYER, f"no player named {message.name!r}")
        else:
            # A client names a player as plain text: it becomes a `PlayerId` here.
            requested = message.player_id
            player_id = session.player_id if requested is None else PlayerId(requested)
            player = None if player_id is None else await self.store.get_player(player_id)
            if player is None:
                raise RaceError(
                    ErrorCode.UNKNOWN_PLAYER, "no such player (say which, or hello first)"
                )
        ratings = []
        for record in sorted(await self.store.get_ratings(player.player_id), key=lambda r: r.game):
            rating = to_rating(record)
            ratings.append(
                GameRating(
                    game=record.game,
                    rating=rating.display(self.config),
                    mu=record.mu,
                    sigma=record.sigma,
                    races=record.races,
                    wins=record.wins,
                    provisional=rating.is_provisional(self.config),
                )
            )
        recent = await self.store.get_recent_results(player.player_id, RECENT_SHOWN)
        session.send(
            Profile(
                player_id=player.player_id,
                name=player.name,
                ratings=ratings,
                recent=[RecentResultModel(**r.model_dump()) for r in recent],
            )
        )
