"""One race in memory: the pure state machine plus the engine boards and move bookkeeping.

The hub owns the asyncio side; this class holds what a race needs between messages: each
racer's live board, the server time of every accepted move (for spectator delay and
replays), answers by sequence number (idempotency) and spectators' delayed boards.
"""

from __future__ import annotations

import asyncio
import bisect
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from solrace.engine import Audience, EngineError, Game, Move, deal
from solrace.server.protocol.codec import decode_server, encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Board, MoveAck, MoveRejected, RaceEvent
from solrace.server.protocol.race import Race
from solrace.server.protocol.records import MoveRecord, RaceRecord
from solrace.server.protocol.views import board_for
from solrace.server.session import Session

REJECTIONS_KEPT = 64
#: Acks kept as sent, per racer: a client resends only moves it has no answer for (the last
#: few); an older move's resend is answered with the board as it is now.
ACKS_KEPT = 64
#: Undo records kept per board: the server takes back only a move it failed to store.
UNDO_KEPT = 4


@dataclass
class RacerBoard:
    """A racer's live board with what the server needs to answer and replay it."""

    game: Game
    #: Each move's server time (ms), as machine integers (8 bytes each, not 32 as objects).
    move_times: array[int] = field(default_factory=lambda: array("q"))
    seq_to_ply: dict[int, int] = field(default_factory=dict)
    #: Each acknowledged move's ack as sent, encoded: bytes are not tracked by the garbage
    #: collector, and a race keeps one per move (pydantic models would cost the collector
    #: ~10 objects each, scanned again at every full collection).
    acks: dict[int, bytes] = field(default_factory=dict)
    rejections: OrderedDict[int, MoveRejected] = field(default_factory=OrderedDict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Spectators' copy of the board, `spectator_delay` behind (`advance_spectator_board`);
    #: the ply of it every spectator was last sent (-1: none yet); and its `Board` frame as
    #: last encoded, with the ply and delay it shows (a new spectator gets it as it is).
    spectator_game: Game | None = None
    spectators_ply: int = -1
    spectator_frame: tuple[int, int, bytes] | None = None
    #: Cards on the foundations after the latest move, and when (server ms) that count last
    #: changed (None: not since the deal): a racer's progress without replaying its moves.
    on_foundations: int = field(init=False)
    count_changed_at_ms: int | None = None

    def __post_init__(self) -> None:
        self.on_foundations = self.game.progress()[0]

    def record_stored(self, move: MoveRecord) -> None:
        """`move`, just played on `game`, is stored: keep its time, its seq (a resend is
        answered from it) and the count on the foundations it left; forget old undo records
        (memory per racer stays bounded however long the race)."""
        self.move_times.append(move.at_ms)
        self.seq_to_ply[move.seq] = move.ply
        on_foundations = self.game.progress()[0]
        if on_foundations != self.on_foundations:
            self.on_foundations = on_foundations
            self.count_changed_at_ms = move.at_ms
        self.trim()

    @property
    def is_over(self) -> bool:
        """Won or stuck: the racer moves no more on this board."""
        return self.game.is_won() or self.game.is_stuck()

    def remember_ack(self, seq: int, frame: bytes) -> None:
        """Keep a stored move's ack for resends, within `ACKS_KEPT`."""
        acks = self.acks
        acks[seq] = frame
        if len(acks) > ACKS_KEPT:
            del acks[next(iter(acks))]

    def trim(self) -> None:
        """Forget undo records beyond `UNDO_KEPT` (in bulk: a list shrinks from its front)."""
        if self.game.undo_depth > 2 * UNDO_KEPT:
            self.game.forget_undo(UNDO_KEPT)

    def remember_rejection(self, seq: int, answer: MoveRejected) -> None:
        self.rejections[seq] = answer
        while len(self.rejections) > REJECTIONS_KEPT:
            self.rejections.popitem(last=False)


def replay_board(race: Race, moves: Iterable[MoveRecord]) -> RacerBoard:
    """A racer's board rebuilt from the race's deal and the racer's stored `moves` (any
    order: played by ply); `EngineError` if one does not play."""
    board = RacerBoard(deal(race.game, race.record.game_number))
    game = board.game
    for move in sorted(moves, key=lambda m: m.ply):
        game.play(move.move)
        board.record_stored(move)
    return board


@dataclass(frozen=True, eq=False)
class UnstoredConnection:
    """A change of a racer's connection that the store refused (`RaceApplier.apply_or_log`)."""

    change: Callable[[Race], list[RaceEvent]]
    player_id: PlayerId
    #: What it does, for the log: "marked back", "marked away", "handed over", ...
    what: str
    #: It marks the racer away; else it marks the racer connected, or hands its connection
    #: over to another one.
    away: bool
    #: A change marking the racer away: the connection it marks away (its holder name,
    #: `Racer.holder`), if known.
    through: str | None = None


class MovesBeingStored:
    """Counts a race's moves being stored, as a context entered around each storing
    (`RaceRuntime.storing_move`). A class rather than a generator's context manager: one is
    entered on every move, and `contextlib.contextmanager` builds a generator and its
    wrapper each time (~1.5 us against ~0.3 us)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.count -= 1


class FoldDue(Protocol):
    """A race's next fold, due at `when()` in the event loop's time: the queue's entry
    (`QueuedFold`) or, for a batch tried again, its own timer."""

    def when(self) -> float: ...

    def cancel(self) -> None: ...


class RaceRuntime:
    def __init__(self, race: Race, saved: RaceRecord | None = None) -> None:
        self.race = race
        self.race_id: RaceId = race.race_id
        self.boards: dict[PlayerId, RacerBoard] = {}
        self.spectators: set[Session] = set()
        #: New spectators since the last batch of spectators' boards, each with the board
        #: frame of each racer its watch sent it (`RaceDelivery.push_spectator_boards`): the
        #: batch does not send it the same again.
        self.boards_sent_on_watch: dict[Session, dict[PlayerId, bytes]] = {}
        #: Moves of the race being stored now (`storing_move`).
        self._moves_storing = MovesBeingStored()
        #: Who created the race here (the race's `creator` passes on when they leave; the
        #: open races a player may have count the ones they created). None: loaded.
        self.created_by: PlayerId | None = None
        #: The record as the store holds it (None: not stored yet): the `expected` of the
        #: next compare-and-set.
        self.saved = saved
        #: One node: the race as its restart left it (nobody connected, every racer's grace
        #: from then), until a change of it is stored: what a change the store refuses rolls
        #: back to instead of `saved` (where the racers connected at a crash still are).
        self.after_restart: RaceRecord | None = None
        #: Serializes this node's changes to the race (each is a compare-and-set).
        self.lock = asyncio.Lock()
        #: The last event this node's sessions were sent (events go out in version order).
        self.sent_epoch = race.epoch
        self.sent_version = race.version
        #: Several nodes: the task reading the race's channel.
        self.follower: asyncio.Task[None] | None = None
        #: This node has acted on the race's finish (final boards sent).
        self.finished = False
        #: When (this node's clock, ms) it acted on the race's finish; None: loaded finished.
        #: A race finished at a restart (its time limit passed while the node was down) has
        #: a `finished_at_ms` long past: it is kept in memory from this instead.
        self.finished_here_ms: int | None = None
        #: Several nodes: a reload failed (store outage); the ticker tries again.
        self.stale = False
        #: Racers with moves not yet folded into the race (one progress batch: their boards
        #: have the figures), and those moves (several nodes publish them with the batch).
        self.pending: set[PlayerId] = set()
        self.pending_moves: list[MoveRecord] = []
        #: Racers whose won or stuck board's change could not be stored, with the moves it
        #: was to publish (several nodes): the tick applies it (`settle_later`).
        self.unsettled: dict[PlayerId, list[MoveRecord]] = {}
        #: Changes of racers' connections the store could not take: the tick applies them
        #: again, in this order, once the store takes them (`RaceApplier.apply_or_log`). At
        #: most two per racer (`keep_unstored`).
        self.unstored_connections: list[UnstoredConnection] = []
        #: The last fold was refused for this race's own reason (not an outage of the
        #: store): said once until a fold goes through.
        self.fold_refused = False
        #: The last tick's change was refused for this race's own reason (`RaceBusyError`):
        #: said once until a tick goes through.
        self.timers_refused = False
        #: The timer that folds `pending` in (None: nothing is pending).
        self.fold_due: FoldDue | None = None

    def storing_move(self) -> MovesBeingStored:
        """Around the storing of a move (`with`): meanwhile the race's due transitions wait
        (`is_storing_move`), so that a time-out does not end the race under a move that was
        checked before it and is acknowledged after."""
        return self._moves_storing

    @property
    def is_storing_move(self) -> bool:
        """A move of the race is being stored (`storing_move`)."""
        return self._moves_storing.count > 0

    def keep_unstored(self, unstored: UnstoredConnection) -> None:
        """Keep a change of a racer's connection that the store refused, for the tick to
        apply once the store takes changes again, with only what can still matter then, so
        that a racer connecting and leaving again and again through a long outage has two
        changes waiting at most, its last coming back and the leaving after it:
        - a change marking the racer connected (or handing its connection over) drops the
          racer's earlier ones: applied, it sets the racer's connection whatever the earlier
          ones left (connected, through the connection holding its claim by then or the one
          named); when no connection holds the claim by then, that connection's close or
          hand-over came after it, and waits after it or went in already;
        - a change marking the racer away is dropped if one through the same connection
          already waits (the racer marked away again for the same leaving): applied in
          order, the first puts the racer away, its grace running from then, and the later
          one finds it away and changes nothing;
        - a change marking the racer away through another connection drops the racer's
          waiting ones marking it away: the racer connected through that connection after
          them (its coming back stored meanwhile), and an earlier leaving applied after it
          would put the racer away through that connection since the earlier time, its
          grace running from before it came back."""
        waiting = self.unstored_connections
        player_id = unstored.player_id
        if not unstored.away:
            waiting[:] = [each for each in waiting if each.player_id != player_id]
        else:
            leavings = [each for each in waiting if each.player_id == player_id and each.away]
            if any(each.through == unstored.through for each in leavings):
                return
            waiting[:] = [each for each in waiting if each not in leavings]
        waiting.append(unstored)

    def forget_unstored(self, unstored: UnstoredConnection) -> None:
        """`unstored` is stored, or refused for good: it waits no more (if a newer change of
        its racer has not dropped it already)."""
        self.unstored_connections[:] = [
            each for each in self.unstored_connections if each is not unstored
        ]

    def settle_later(self, player_id: PlayerId, moves: Iterable[MoveRecord] = ()) -> None:
        """The racer's won or stuck board (or progress behind its moves) could not be stored
        now: the tick stores it, publishing `moves` with it (several nodes)."""
        self.unsettled.setdefault(player_id, []).extend(moves)

    def note_move(self, move: MoveRecord) -> None:
        """`move` (stored, its board moved on) goes into the next fold."""
        self.pending.add(move.player_id)
        self.pending_moves.append(move)

    def put_back(self, pending: set[PlayerId], moves: list[MoveRecord]) -> None:
        """A batch that was taken but not stored is pending again (before any move since)."""
        self.pending |= pending
        self.pending_moves[:0] = moves

    def take_pending(self) -> tuple[set[PlayerId], list[MoveRecord]]:
        """The racers and moves not folded in yet; nothing is pending after."""
        if self.fold_due is not None:
            self.fold_due.cancel()
            self.fold_due = None
        pending, moves = self.pending, self.pending_moves
        self.pending, self.pending_moves = set(), []
        return pending, moves

    def deal_boards(self) -> None:
        """Every racer gets the same deal (called once, when the race starts)."""
        for player_id in self.race.racers:
            self.boards[player_id] = RacerBoard(deal(self.race.game, self.race.record.game_number))

    def restore_boards(self, moves: list[MoveRecord], *, progress: bool = True) -> None:
        """Rebuild every board by replaying the stored moves (after a restart, or when a
        node loads a race); `progress` also recomputes each racer's progress from them."""
        self.deal_boards()
        for player_id in self.boards:
            self.restore_board(player_id, [m for m in moves if m.player_id == player_id])
            if progress:
                self.restore_progress(player_id)

    def restore_board(self, player_id: PlayerId, moves: list[MoveRecord]) -> None:
        """Rebuild one racer's board from its stored moves (the store is the truth)."""
        board = replay_board(self.race, moves)
        old = self.boards.get(player_id)
        if old is not None:
            board.lock = old.lock  # a holder of the old board's lock still serializes with us
        self.boards[player_id] = board

    async def catch_up_board(self, player_id: PlayerId, moves: list[MoveRecord]) -> None:
        """Rebuild a racer's board from the race's stored `moves` if the store is ahead of
        it (the racer moved on another node). Under the board's lock; the moves were read
        before it, so a move stored meanwhile by this node leaves the board ahead of them,
        and the board is kept then."""
        async with self.boards[player_id].lock:
            mine = [m for m in moves if m.player_id == player_id]
            if len(mine) > self.boards[player_id].game.ply:
                self.restore_board(player_id, mine)

    def apply_stored_move(self, move: MoveRecord) -> bool:
        """Another node stored `move`: play it on our copy of that board. False if the copy
        is not exactly one move behind (then rebuild it from the store)."""
        board = self.boards.get(move.player_id)
        if board is None or move.ply < board.game.ply:
            return True
        if move.ply > board.game.ply:
            return False
        try:
            board.game.play(move.move)
        except EngineError:
            return False
        board.record_stored(move)
        return True

    def restore_progress(self, player_id: PlayerId) -> None:
        """Set a racer's progress from its board (no event): the figures of its latest move
        and the time its count on the foundations last changed."""
        board = self.boards[player_id]
        started = self.race.started_at_ms or 0
        changed = board.count_changed_at_ms
        reached_at = 0 if changed is None else max(0, changed - started)
        on, total = board.game.progress()
        self.race.restore_progress(player_id, on, total, board.game.ply, reached_at)

    def duplicate_ack(self, player_id: PlayerId, seq: int, move_text: str) -> MoveAck | None:
        """The answer to a resent move (`duplicate` set); None if `seq` was another move."""
        board = self.boards[player_id]
        ply = board.seq_to_ply[seq]
        stored = board.game.history[ply]
        try:
            if Move.parse(move_text) != stored:
                return None
        except EngineError:
            return None
        frame = board.acks.get(seq)
        if frame is not None:
            sent = decode_server(frame)
            assert isinstance(sent, MoveAck)
            return sent.model_copy(update={"duplicate": True})
        # Stored before a restart, or older than the acks kept: the whole board as it is now.
        game = board.game
        on, total = game.progress()
        view = board_for(game, Audience.PLAYER)
        return MoveAck(
            race_id=self.race_id,
            seq=seq,
            ply=ply,
            move=str(stored),
            at_ms=board.move_times[ply],
            piles=list(view.piles),
            on_foundations=on,
            total=total,
            won=view.won,
            stuck=view.stuck,
            duplicate=True,
        )

    def spectator_target_ply(self, player_id: PlayerId, now_ms: int) -> int:
        """How many of a racer's moves a spectator may see now (move times never go down)."""
        board = self.boards[player_id]
        if not self.race.is_live:
            return len(board.move_times)
        return bisect.bisect_right(board.move_times, now_ms - self.race.record.spectator_delay_ms)

    def advance_spectator_board(self, player_id: PlayerId, now_ms: int) -> Game:
        """The spectators' copy of a racer's board, moved forward to what they may see now."""
        board = self.boards[player_id]
        target = self.spectator_target_ply(player_id, now_ms)
        if board.spectator_game is None:
            board.spectator_game = deal(self.race.game, self.race.record.game_number)
        delayed = board.spectator_game
        if delayed.ply >= target:
            return delayed
        for move in board.game.history[delayed.ply : target]:
            delayed.play(move)
        delayed.forget_undo(0)  # a spectator's copy is never taken back
        return delayed

    def spectator_board_frame(self, player_id: PlayerId) -> bytes:
        """The `Board` frame of the spectators' copy as it stands (`advance_spectator_board`
        first), encoded once per ply and delay however many spectators get it."""
        board = self.boards[player_id]
        delayed = board.spectator_game
        assert delayed is not None, "advance_spectator_board makes the copy"
        delay = self.race.record.spectator_delay_ms if self.race.is_live else 0
        cached = board.spectator_frame
        if cached is None or cached[0] != delayed.ply or cached[1] != delay:
            message = Board(
                race_id=self.race_id,
                player_id=player_id,
                ply=delayed.ply,
                delayed_ms=delay,
                board=board_for(delayed, Audience.SPECTATOR),
            )
            cached = board.spectator_frame = (delayed.ply, delay, encode(message))
        return cached[2]
