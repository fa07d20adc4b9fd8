"""The hub's move handling: validate on this node's copy of the racer's board, store the move
(persist, then acknowledge), then move the racer's progress on through the race record (the
`RaceKeeper`'s: a progress batch, or a change of the race).

A racer's moves are validated on the node that holds its connection. The store's ply guard
settles the rest: when it refuses a move (`PlyConflictError`) another connection or node
stored that ply first, or an earlier attempt was stored and its reply lost; the board is then
rebuilt from the stored moves and the answer comes from them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from solrace.engine import EngineError, InvalidMoveError
from solrace.server.metrics import Metrics
from solrace.server.outage import Outage
from solrace.server.protocol.codec import encode_move_ack
from solrace.server.protocol.errors import ErrorCode, RaceError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import MakeMove, MoveRejected
from solrace.server.protocol.records import MoveRecord
from solrace.server.protocol.views import touched_pile_fields
from solrace.server.race_changes import own_board
from solrace.server.race_sync import RaceKeeper
from solrace.server.runtime import RacerBoard, RaceRuntime
from solrace.server.session import Session
from solrace.server.settings import Settings
from solrace.server.store import (
    NotPlayingError,
    PlyConflictError,
    Store,
    StoreError,
    UnknownRaceError,
)

log = logging.getLogger("solrace.server.hub_moves")

#: Each accepted move's record is validated from a map of its fields: `MoveRecord`'s keyword
#: `__init__` costs ~0.6 us more, on every move.
_MOVE_RECORD = MoveRecord.__pydantic_validator__


class MoveHandler:
    """Answers `make_move`: each move checked, stored and acknowledged (or rejected), on the
    races of `keeper`; a resend is answered as the first time."""

    def __init__(
        self,
        keeper: RaceKeeper,
        store: Store,
        settings: Settings,
        metrics: Metrics,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.keeper = keeper
        #: The keeper's progress batches, which each move that only moves its racer on joins.
        self.progress = keeper.progress
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        #: Moves the store could not take (an outage; boards: `RaceKeeper.storing_boards`).
        self.storing = Outage(log, "storing moves")

    def _reject(
        self, session: Session, message: MakeMove, code: ErrorCode, reason: str
    ) -> MoveRejected:
        answer = MoveRejected(
            race_id=RaceId(message.race_id),
            seq=message.seq,
            move=message.move,
            code=code.value,
            reason=reason,
        )
        session.send(answer)
        self.metrics.moves_rejected.labels(code.value).inc()
        return answer

    async def handle(self, session: Session, message: MakeMove) -> None:
        started = time.perf_counter()
        player_id = session.player_id
        try:
            runtime = await self.keeper.load_race(RaceId(message.race_id))
        except StoreError:
            self._reject(session, message, ErrorCode.UNAVAILABLE, "store unavailable; send again")
            return
        if runtime is None:
            self._reject(session, message, ErrorCode.UNKNOWN_RACE, "no such live race")
            return
        if player_id is None or player_id not in runtime.race.racers:
            self._reject(session, message, ErrorCode.NOT_IN_RACE, "you are not racing here")
            return
        if player_id not in runtime.boards:
            self._reject(session, message, ErrorCode.WRONG_STATUS, "the race has not started")
            return
        async with runtime.boards[player_id].lock:
            board = runtime.boards[player_id]  # a rebuild keeps the lock, not the object
            await self._move_locked(session, message, runtime, player_id, board, started)

    async def _move_locked(
        self,
        session: Session,
        message: MakeMove,
        runtime: RaceRuntime,
        player_id: PlayerId,
        board: RacerBoard,
        started: float,
    ) -> None:
        """Answer a move under its board's lock: again as before (a resend), or play it,
        store it, acknowledge it and move the racer's progress on."""
        if self._answer_again(session, runtime, player_id, board, message):
            return
        now = self.clock()
        refusal = self._play(runtime, player_id, board, message.move, now)
        if refusal is not None:
            board.remember_rejection(message.seq, self._reject(session, message, *refusal))
            return
        game = board.game
        piles = touched_pile_fields(game)  # what this move changed, read before any await
        record: MoveRecord = _MOVE_RECORD.validate_python(
            {
                "race_id": runtime.race_id,
                "player_id": player_id,
                "ply": game.ply - 1,
                "seq": message.seq,
                "move": str(game.history[-1]),
                "at_ms": now,
            }
        )
        if not await self._store_move(session, message, runtime, record):
            return
        board.record_stored(record)
        on, total = board.on_foundations, game.total_cards
        won = on == total
        stuck = not won and game.is_stuck()
        # A `MoveAck`, encoded without building it (`encode_move_ack` says why).
        frame = encode_move_ack(
            race_id=runtime.race_id,
            seq=message.seq,
            ply=record.ply,
            move=record.move,
            at_ms=now,
            piles=piles,
            on_foundations=on,
            total=total,
            won=won,
            stuck=stuck,
        )
        board.remember_ack(message.seq, frame)
        session.send_frame(frame)
        self.metrics.moves_accepted.inc()
        self.metrics.ack_latency.observe(time.perf_counter() - started)
        if not (won or stuck) and self.settings.progress_interval_s > 0:
            self.progress.note_progress(runtime, record)
        else:
            # At once: a finish, a stuck board, or every move when progress is not batched.
            # The move is stored and acknowledged; if its board is refused, the tick stores
            # it (and its progress) once the store answers again.
            await self.keeper.store_board(runtime, player_id, [record])

    def _answer_again(
        self,
        session: Session,
        runtime: RaceRuntime,
        player_id: PlayerId,
        board: RacerBoard,
        message: MakeMove,
    ) -> bool:
        """A sequence number answered before gets the same answer again: True if so."""
        if message.seq in board.seq_to_ply:
            self._answer_duplicate(session, runtime, player_id, message)
            return True
        previous = board.rejections.get(message.seq)
        if previous is None:
            return False
        if previous.move == message.move:
            session.send(previous)
        else:
            reason = f"seq {message.seq} was refused for {previous.move!r}; use a new seq"
            self._reject(session, message, ErrorCode.SEQ_REUSED, reason)
        return True

    @staticmethod
    def _play(
        runtime: RaceRuntime, player_id: PlayerId, board: RacerBoard, move: str, now: int
    ) -> tuple[ErrorCode, str] | None:
        """Play `move` on the racer's board if the race lets them move now; else why not."""
        try:
            runtime.race.check_can_move(player_id, now)
            board.game.play(move)
        except RaceError as exc:
            return exc.code, exc.message
        except InvalidMoveError as exc:  # not a move at all (its text)
            return ErrorCode.INVALID_MOVE, str(exc)
        except EngineError as exc:  # a move the rules refuse here
            return ErrorCode.ILLEGAL_MOVE, str(exc)
        return None

    async def _store_move(
        self, session: Session, message: MakeMove, runtime: RaceRuntime, record: MoveRecord
    ) -> bool:
        """Persist the move just played on the racer's board: True once stored; else it is
        taken back from the board and the racer told why (a bug, no `StoreError`, is raised
        to the connection, which logs it and closes with 1011)."""
        game = runtime.boards[record.player_id].game
        with runtime.storing_move():
            try:
                await self.store.append_move(record)
            except Exception as exc:
                game.undo()  # the board as the store has it
                if not isinstance(exc, StoreError):
                    raise
                await self._not_stored(session, message, runtime, record, exc)
                return False
        self.storing.worked()  # one integer checked, but for the move after an outage
        return True

    async def _not_stored(
        self,
        session: Session,
        message: MakeMove,
        runtime: RaceRuntime,
        record: MoveRecord,
        exc: StoreError,
    ) -> None:
        """Answer a move the store refused (its board already taken back), by the reason."""
        if isinstance(exc, PlyConflictError):
            await self._settle_conflict(session, runtime, record.player_id, message)
        elif isinstance(exc, NotPlayingError):
            # Another node moved the race on (this racer out, or the race over) while this
            # node's copy was behind (a stall, a partition): the stored race says no.
            await self.keeper.refresh(runtime)
            self._reject(
                session, message, ErrorCode.NOT_PLAYING, "the race takes no more moves from you"
            )
        elif isinstance(exc, UnknownRaceError):
            # The store lost the race (a Redis without persistence restarted empty): sending
            # the move again cannot help.
            self._reject(session, message, ErrorCode.UNKNOWN_RACE, "the store has no such race")
        else:  # an outage: the client may send it again
            self.storing.failed(f"move {record.ply} of {record.player_id}: {exc}")
            self._reject(session, message, ErrorCode.UNAVAILABLE, "not stored; send it again")

    async def _settle_conflict(
        self, session: Session, runtime: RaceRuntime, player_id: PlayerId, message: MakeMove
    ) -> None:
        """The store already holds this ply or seq: rebuild the board from the stored moves
        and answer from them (a duplicate ack, or a rejection that says why)."""
        try:
            moves = await self.store.get_moves(runtime.race_id)
        except StoreError:
            self._reject(session, message, ErrorCode.UNAVAILABLE, "not stored; send it again")
            return
        known = runtime.boards[player_id].game.ply
        mine = [m for m in moves if m.player_id == player_id]
        runtime.restore_board(player_id, mine)
        board = runtime.boards[player_id]
        unseen = [m for m in mine if m.ply >= known]
        for move in unseen:
            # Stored without this node's ack (another connection's, or an append answered
            # `unavailable` that went through after all): the race hears of it as of any
            # move, so the racer's progress, and the results, count it.
            self.progress.note_progress(runtime, move)
        if unseen and board.is_over:
            runtime.settle_later(player_id)  # the tick stores the finish
        if message.seq in board.seq_to_ply:
            self._answer_duplicate(session, runtime, player_id, message)
            return
        self._reject(
            session,
            message,
            ErrorCode.NOT_ALLOWED,
            f"your board is ahead of what this connection was told (now at ply "
            f"{board.game.ply}: another connection's move, or one answered 'unavailable' that "
            "was stored after all); here it is: play from it",
        )
        session.send(own_board(runtime, player_id))

    def _answer_duplicate(
        self, session: Session, runtime: RaceRuntime, player_id: PlayerId, message: MakeMove
    ) -> None:
        ack = runtime.duplicate_ack(player_id, message.seq, message.move)
        if ack is None:
            stored = runtime.boards[player_id].seq_to_ply[message.seq]
            self._reject(
                session, message, ErrorCode.SEQ_REUSED, f"seq {message.seq} was ply {stored}"
            )
            return
        session.send(ack)


__all__ = ["MoveHandler"]
