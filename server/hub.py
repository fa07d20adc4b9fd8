"""The hub: routes each client message to the pure race machines and the engine, persists,
then fans events out. It never decides a move's legality (the engine does) nor a race's
outcome (the race machine does); it moves data between them, the store and the sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from pydantic import BaseModel

from solrace.engine import (
    GAME_IDS,
    Audience,
    EngineError,
    InvalidGameNumberError,
    InvalidMoveError,
    deal,
    random_ranked_number,
)
from solrace.server.metrics import Metrics
from solrace.server.protocol.closecodes import CloseCode
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.messages import (
    PROTOCOL_VERSION,
    Board,
    ClientMessage,
    CreateRace,
    Error,
    GetReplay,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    MakeMove,
    MoveAck,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceEvent,
    RaceList,
    RaceStarted,
    Replay,
    Resign,
    StartRace,
    Sync,
    Unwatch,
    Watch,
    Welcome,
)
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import (
    LIVE_STATUSES,
    MoveRecord,
    PlayerRecord,
    RaceRecord,
    RaceStatus,
)
from solrace.server.protocol.replay import build_replay
from solrace.server.protocol.tokens import sign_token, verify_token
from solrace.server.protocol.views import board_for, touched_pile_models
from solrace.server.runtime import RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import NameTakenError, Store

log = logging.getLogger("solrace.server.hub")

FINISHED_KEPT = 500


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Hub:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        secret: bytes,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.secret = secret
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        self.races: dict[str, RaceRuntime] = {}
        self.players: dict[str, Session] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._last_spectator_push = 0

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        await self.recover()
        self._ticker = asyncio.create_task(self._tick_forever(), name="solrace-ticker")

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None

    async def recover(self) -> None:
        """Reload every live race from the store; boards are rebuilt by replaying moves.

        Nobody is connected after a restart: every racer's grace period starts now."""
        now = self.clock()
        for record in await self.store.list_races(LIVE_STATUSES):
            race = Race(record, self._new_epoch(), self.settings.history_size)
            runtime = RaceRuntime(race)
            if race.started_at_ms is not None:
                runtime.restore_boards(await self.store.get_moves(record.race_id))
            for player_id in race.racers:
                race.set_connected(player_id, False, now)
            self.races[record.race_id] = runtime
            log.info("recovered race %s (%s, %s)", race.race_id, race.game, race.status.value)

    def _new_epoch(self) -> str:
        return secrets.token_hex(4)

    # --- plumbing --------------------------------------------------------------------------

    def _error(
        self,
        session: Session,
        code: ErrorCode,
        message: str,
        request: ClientMessage | None = None,
        race_id: str | None = None,
    ) -> None:
        session.send(
            Error(
                code=code.value,
                message=message,
                request=None if request is None else request.type,
                race_id=race_id,
            )
        )

    def _recipients(self, runtime: RaceRuntime) -> set[Session]:
        sessions = {self.players[p] for p in runtime.race.racers if p in self.players}
        return sessions | runtime.spectators

    def _publish(self, runtime: RaceRuntime, messages: Iterable[BaseModel]) -> None:
        batch = list(messages)
        if not batch:
            return
        for session in self._recipients(runtime):
            for message in batch:
                session.send(message)

    async def _persist(self, runtime: RaceRuntime) -> None:
        record = runtime.race.to_record()
        if record != runtime.saved:
            await self.store.save_race(record)
            runtime.saved = record

    async def _commit(self, runtime: RaceRuntime, events: list[RaceEvent], now: int) -> None:
        """Store what changed, then tell everyone; deal boards if the race just started."""
        if not events:
            return
        # Progress alone is not stored: a restart recomputes it by replaying the moves.
        if not all(isinstance(event, Progress) for event in events):
            await self._persist(runtime)
        self._publish(runtime, events)
        if any(isinstance(event, RaceStarted) for event in events):
            await self._deal(runtime)
        if runtime.race.status is RaceStatus.FINISHED:
            self._push_spectator_boards(runtime, now, force=True)
            self._forget_finished()
            log.info("race %s finished", runtime.race_id)

    async def _deal(self, runtime: RaceRuntime) -> None:
        race = runtime.race
        runtime.deal_boards()
        started = race.started_at_ms or self.clock()
        more: list[RaceEvent] = []
        for player_id, board in runtime.boards.items():
            session = self.players.get(player_id)
            if session is not None:
                session.send(self._own_board(runtime, player_id))
            on, total = board.game.progress()
            won = board.game.is_won()
            more += race.record_board(
                player_id,
                on_foundations=on,
                total=total,
                moves=0,
                won=won,
                stuck=not won and board.game.is_stuck(),
                now_ms=started,
            )
        await self._commit(runtime, more, started)

    def _own_board(self, runtime: RaceRuntime, player_id: str) -> Board:
        game = runtime.boards[player_id].game
        return Board(
            race_id=runtime.race_id,
            player_id=player_id,
            ply=game.ply,
            delayed_ms=0,
            board=board_for(game, Audience.PLAYER),
        )

    def _push_spectator_boards(
        self, runtime: RaceRuntime, now: int, *, force: bool = False, only: Session | None = None
    ) -> None:
        """Send spectators each racer's board as it was `spectator_delay` ago (batched)."""
        targets = {only} if only is not None else runtime.spectators
        if not targets or not runtime.boards:
            return
        for player_id, board in runtime.boards.items():
            changed = runtime.advance_spectator_board(player_id, now)
            delayed = board.spectator_game
            if delayed is None or (changed is None and only is None and not force):
                continue
            message = Board(
                race_id=runtime.race_id,
                player_id=player_id,
                ply=delayed.ply,
                delayed_ms=runtime.race.record.spectator_delay_ms if runtime.race.is_live else 0,
                board=board_for(delayed, Audience.SPECTATOR),
            )
            for session in targets if changed is None else runtime.spectators | targets:
                session.send(message)

    def _forget_finished(self) -> None:
        done = [rid for rid, rt in self.races.items() if not rt.race.is_live]
        for race_id in done[: max(0, len(done) - FINISHED_KEPT)]:
            del self.races[race_id]

    # --- the clock -------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.tick_s)  # the hub's timer, not a wait in a test
            try:
                await self.tick()
            except Exception:
                log.exception("tick failed")

    async def tick(self) -> None:
        """Apply due transitions (start, time-out, forfeit) and push spectators' boards."""
        now = self.clock()
        push = now - self._last_spectator_push >= self.settings.spectator_batch_s * 1000
        for runtime in list(self.races.values()):
            if runtime.race.is_live and runtime.in_flight == 0:
                events = runtime.race.tick(now)
                await self._commit(runtime, events, now)
                if runtime.race.status is RaceStatus.CANCELLED:
                    self.races.pop(runtime.race_id, None)
            if push and runtime.race.is_live:
                self._push_spectator_boards(runtime, now)
        if push:
            self._last_spectator_push = now
        counts = {status: 0 for status in RaceStatus}
        for runtime in self.races.values():
            counts[runtime.race.status] += 1
        for status, count in counts.items():
            self.metrics.races.labels(status.value).set(count)

    # --- sessions --------------------------------------------------------------------------

    async def disconnected(self, session: Session) -> None:
        session.closed = True
        for race_id in session.watching:
            runtime = self.races.get(race_id)
            if runtime is not None:
                runtime.spectators.discard(session)
        player_id = session.player_id
        if player_id is None or self.players.get(player_id) is not session:
            return
        del self.players[player_id]
        now = self.clock()
        for runtime in self._live_races_of(player_id):
            await self._commit(runtime, runtime.race.set_connected(player_id, False, now), now)

    def _live_races_of(self, player_id: str) -> list[RaceRuntime]:
        return [rt for rt in self.races.values() if rt.race.is_live and player_id in rt.race.racers]

    async def handle(self, session: Session, message: ClientMessage) -> None:
        """Answer one client message (already decoded and schema-checked)."""
        if isinstance(message, Ping):
            session.send(Pong(nonce=message.nonce, server_time_ms=self.clock()))
            return
        if isinstance(message, Hello):
            await self._hello(session, message)
            return
        if not session.said_hello:
            self._error(session, ErrorCode.HELLO_REQUIRED, "say hello first", message)
            return
        handler = self._handlers.get(type(message))
        if handler is None:  # pragma: no cover - every message type has a handler
            self._error(session, ErrorCode.INVALID_MESSAGE, "unexpected message", message)
            return
        try:
            await handler(self, session, message)
        except RaceError as exc:
            race_id = getattr(message, "race_id", None)
            self._error(session, exc.code, exc.message, message, race_id)

    async def _hello(self, session: Session, message: Hello) -> None:
        if session.said_hello:
            self._error(session, ErrorCode.ALREADY_IDENTIFIED, "one hello per connection", message)
            return
        if message.protocol != PROTOCOL_VERSION:
            session.close(CloseCode.UNSUPPORTED_PROTOCOL, f"protocol {PROTOCOL_VERSION} only")
            return
        now = self.clock()
        player: PlayerRecord | None = None
        token: str | None = None
        if message.token is not None:
            player_id = verify_token(message.token, self.secret)
            player = None if player_id is None else await self.store.get_player(player_id)
            if player is None:
                session.close(CloseCode.AUTH_FAILED, "bad token")
                return
            if message.name is not None and message.name != player.name:
                self._error(session, ErrorCode.NAME_MISMATCH, "this token is not that name's")
                return
            token = message.token
        elif message.name is not None:
            try:
                player = await self.store.create_player(
                    "p" + secrets.token_hex(8), message.name, now
                )
            except NameTakenError:
                self._error(
                    session, ErrorCode.NAME_TAKEN, f"{message.name!r} belongs to someone else"
                )
                return
            token = sign_token(player.player_id, self.secret)
        session.said_hello = True
        active: list[str] = []
        if player is not None:
            session.player_id = player.player_id
            session.name = player.name
            old = self.players.get(player.player_id)
            if old is not None and old is not session:
                old.close(CloseCode.REPLACED, "connected again elsewhere")
            self.players[player.player_id] = session
            active = [rt.race_id for rt in self._live_races_of(player.player_id)]
        session.send(
            Welcome(
                protocol=PROTOCOL_VERSION,
                player_id=session.player_id,
                name=session.name,
                token=token,
                ratings={},
                active_races=active,
                server_time_ms=now,
            )
        )
        if player is not None:
            for race_id in active:
                runtime = self.races[race_id]
                events = runtime.race.set_connected(player.player_id, True, now)
                await self._commit(runtime, events, now)
        log.info("hello from %s", session.name or "an anonymous spectator")

    def _runtime(self, race_id: str) -> RaceRuntime:
        runtime = self.races.get(race_id)
        if runtime is None:
            raise RaceError(ErrorCode.UNKNOWN_RACE, f"no live race {race_id!r}")
        return runtime

    def _identity(self, session: Session) -> tuple[str, str]:
        if session.player_id is None or session.name is None:
            raise RaceError(ErrorCode.IDENTITY_REQUIRED, "hello with a name or token first")
        return session.player_id, session.name

    # --- lobby -----------------------------------------------------------------------------

    async def _list_races(self, session: Session, message: ListRaces) -> None:
        infos = [rt.race.info() for rt in self.races.values() if rt.race.is_live]
        session.send(RaceList(races=infos))

    async def _create_race(self, session: Session, message: CreateRace) -> None:
        player_id, name = self._identity(session)
        settings = self.settings
        if message.game not in GAME_IDS:
            raise RaceError(ErrorCode.UNKNOWN_GAME, f"games: {', '.join(GAME_IDS)}")
        if not 2 <= message.seats <= settings.max_seats:
            raise RaceError(ErrorCode.INVALID_SETTINGS, f"seats: 2..{settings.max_seats}")
        if not settings.min_time_limit_s <= message.time_limit_s <= settings.max_time_limit_s:
            raise RaceError(
                ErrorCode.INVALID_SETTINGS,
                f"time limit: {settings.min_time_limit_s}..{settings.max_time_limit_s} s",
            )
        if message.rated and message.game_number is not None:
            raise RaceError(ErrorCode.INVALID_SETTINGS, "a rated race's deal is always secret")
        number = message.game_number
        if number is None:
            number = random_ranked_number(self.rng)
        else:
            try:
                deal(message.game, number)
            except InvalidGameNumberError as exc:
                raise RaceError(ErrorCode.INVALID_GAME_NUMBER, str(exc)) from None
        salt = secrets.token_hex(16)
        now = self.clock()
        delay = (
            settings.spectator_delay_rated_s if message.rated else settings.spectator_delay_casual_s
        )
        record = RaceRecord(
            race_id="r" + secrets.token_hex(5),
            game=message.game,
            seats=message.seats,
            time_limit_s=message.time_limit_s,
            rated=message.rated,
            invite_code=message.invite_code,
            game_number=number,
            salt=salt,
            commitment=commit(message.game, number, salt),
            creator=player_id,
            status=RaceStatus.OPEN,
            created_at_ms=now,
            countdown_ms=round(settings.countdown_s * 1000),
            grace_ms=round(settings.grace_s * 1000),
            spectator_delay_ms=round(delay * 1000),
        )
        runtime = RaceRuntime(Race(record, self._new_epoch(), settings.history_size))
        events = runtime.race.join(player_id, name, message.invite_code, now)
        self.races[record.race_id] = runtime
        await self._commit(runtime, events, now)
        log.info("%s created race %s (%s)", name, record.race_id, record.game)

    async def _join_race(self, session: Session, message: JoinRace) -> None:
        player_id, name = self._identity(session)
        runtime = self._runtime(message.race_id)
        now = self.clock()
        events = runtime.race.join(player_id, name, message.invite_code, now)
        await self._commit(runtime, events, now)

    async def _leave_race(self, session: Session, message: LeaveRace) -> None:
        player_id, _ = self._identity(session)
        runtime = self._runtime(message.race_id)
        now = self.clock()
        events = runtime.race.leave(player_id, now)
        await self._commit(runtime, events, now)
        for event in events:
            session.send(event)
        if runtime.race.status is RaceStatus.CANCELLED:
            self.races.pop(runtime.race_id, None)

    async def _start_race(self, session: Session, message: StartRace) -> None:
        player_id, _ = self._identity(session)
        runtime = self._runtime(message.race_id)
        now = self.clock()
        await self._commit(runtime, runtime.race.request_start(player_id, now), now)

    # --- racing ----------------------------------------------------------------------------

    def _reject(
        self, session: Session, message: MakeMove, code: ErrorCode, reason: str
    ) -> MoveRejected:
        answer = MoveRejected(
            race_id=message.race_id,
            seq=message.seq,
            move=message.move,
            code=code.value,
            reason=reason,
        )
        session.send(answer)
        self.metrics.moves_rejected.labels(code.value).inc()
        return answer

    async def _move(self, session: Session, message: MakeMove) -> None:
        started = time.perf_counter()
        runtime = self.races.get(message.race_id)
        player_id = session.player_id
        if runtime is None:
            self._reject(session, message, ErrorCode.UNKNOWN_RACE, "no such live race")
            return
        if player_id is None or player_id not in runtime.race.racers:
            self._reject(session, message, ErrorCode.NOT_IN_RACE, "you are not racing here")
            return
        board = runtime.boards.get(player_id)
        if board is None:
            self._reject(session, message, ErrorCode.WRONG_STATUS, "the race has not started")
            return
        async with board.lock:
            if message.seq in board.seq_to_ply:
                self._answer_duplicate(session, runtime, player_id, message)
                return
            previous = board.rejections.get(message.seq)
            if previous is not None and previous.move == message.move:
                session.send(previous)
                return
            now = self.clock()
            try:
                runtime.race.check_can_move(player_id, now)
                board.game.play(message.move)
            except RaceError as exc:
                board.remember_rejection(
                    message.seq, self._reject(session, message, exc.code, exc.message)
                )
                return
            except InvalidMoveError as exc:
                answer = self._reject(session, message, ErrorCode.INVALID_MOVE, str(exc))
                board.remember_rejection(message.seq, answer)
                return
            except EngineError as exc:
                answer = self._reject(session, message, ErrorCode.ILLEGAL_MOVE, str(exc))
                board.remember_rejection(message.seq, answer)
                return
            game = board.game
            ply = game.ply - 1
            piles = touched_pile_models(game)
            record = MoveRecord(
                race_id=runtime.race_id,
                player_id=player_id,
                ply=ply,
                seq=message.seq,
                move=str(game.history[-1]),
                at_ms=now,
            )
            runtime.in_flight += 1
            try:
                await self.store.append_move(record)
            except Exception:
                game.undo()
                log.exception("could not store move %s of %s", ply, player_id)
                self._reject(session, message, ErrorCode.UNAVAILABLE, "not stored; send it again")
                return
            finally:
                runtime.in_flight -= 1
            board.move_times.append(now)
            board.seq_to_ply[message.seq] = ply
            on, total = game.progress()
            won = game.is_won()
            stuck = not won and game.is_stuck()
            ack = MoveAck(
                race_id=runtime.race_id,
                seq=message.seq,
                ply=ply,
                move=record.move,
                at_ms=now,
                piles=piles,
                on_foundations=on,
                total=total,
                won=won,
                stuck=stuck,
            )
            board.acks[message.seq] = ack
            session.send(ack)
            self.metrics.moves_accepted.inc()
            self.metrics.ack_latency.observe(time.perf_counter() - started)
            events = runtime.race.record_board(
                player_id,
                on_foundations=on,
                total=total,
                moves=game.ply,
                won=won,
                stuck=stuck,
                now_ms=now,
            )
            await self._commit(runtime, events, now)

    def _answer_duplicate(
        self, session: Session, runtime: RaceRuntime, player_id: str, message: MakeMove
    ) -> None:
        ack = runtime.duplicate_ack(player_id, message.seq, message.move)
        if ack is None:
            stored = runtime.boards[player_id].seq_to_ply[message.seq]
            self._reject(
                session, message, ErrorCode.SEQ_REUSED, f"seq {message.seq} was ply {stored}"
            )
            return
        session.send(ack)

    async def _resign(self, session: Session, message: Resign) -> None:
        player_id, _ = self._identity(session)
        runtime = self._runtime(message.race_id)
        now = self.clock()
        await self._commit(runtime, runtime.race.resign(player_id, now), now)

    # --- watching and resync ---------------------------------------------------------------

    def _send_catch_up(self, session: Session, runtime: RaceRuntime, message: Sync | Watch) -> None:
        race = runtime.race
        since = message.since_version if isinstance(message, Sync) else None
        epoch = message.epoch if isinstance(message, Sync) else None
        missed = race.events_since(epoch, since)
        if missed is None:
            session.send(race.snapshot(self.clock()))
        else:
            for event in missed:
                session.send(event)

    async def _watch(self, session: Session, message: Watch | Sync) -> None:
        runtime = self._runtime(message.race_id)
        if session.player_id is not None and session.player_id in runtime.race.racers:
            raise RaceError(ErrorCode.NOT_ALLOWED, "racers cannot watch their own race")
        runtime.spectators.add(session)
        session.watching.add(runtime.race_id)
        self._send_catch_up(session, runtime, message)
        self._push_spectator_boards(runtime, self.clock(), only=session)

    async def _unwatch(self, session: Session, message: Unwatch) -> None:
        runtime = self._runtime(message.race_id)
        runtime.spectators.discard(session)
        session.watching.discard(runtime.race_id)

    async def _sync(self, session: Session, message: Sync) -> None:
        runtime = self._runtime(message.race_id)
        player_id = session.player_id
        if player_id is None or player_id not in runtime.race.racers:
            await self._watch(session, message)
            return
        self._send_catch_up(session, runtime, message)
        if player_id in runtime.boards:
            session.send(self._own_board(runtime, player_id))

    async def _get_replay(self, session: Session, message: GetReplay) -> None:
        record = await self.store.get_race(message.race_id)
        if record is None:
            raise RaceError(ErrorCode.UNKNOWN_RACE, f"no race {message.race_id!r}")
        if record.status is not RaceStatus.FINISHED:
            raise RaceError(ErrorCode.NOT_FINISHED, "replays exist once a race has finished")
        moves = await self.store.get_moves(record.race_id)
        session.send(Replay(replay=build_replay(record, moves)))

    _handlers: ClassVar[dict[type[Any], Callable[[Hub, Session, Any], Any]]] = {
        ListRaces: _list_races,
        CreateRace: _create_race,
        JoinRace: _join_race,
        LeaveRace: _leave_race,
        StartRace: _start_race,
        MakeMove: _move,
        Resign: _resign,
        Sync: _sync,
        Watch: _watch,
        Unwatch: _unwatch,
        GetReplay: _get_replay,
    }


__all__ = ["Hub", "wall_clock_ms"]
