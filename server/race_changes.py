"""Changes to a race, as functions of it (`Race -> events`), and what its events say.

`RaceApplier.apply_to_race` applies a `Change` under the race's lock and stores the result;
the functions here build the usual ones (a racer's board, a connection coming or going, the
race's timers with the opening figures, the figures of the stored moves) and read events
back (is a batch progress only, whose moves a progress event reports). None of them does
I/O.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Final, NamedTuple

from solrace.engine import Audience, EngineError, deal
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.messages import Board, Progress, RaceEvent, RaceSnapshot
from solrace.server.protocol.race import Opening, Race
from solrace.server.protocol.records import MoveRecord, RacerState
from solrace.server.protocol.views import board_for
from solrace.server.runtime import RacerBoard, RaceRuntime, replay_board
from solrace.server.session import Session

Change = Callable[[Race], list[RaceEvent]]

#: A playing racer's state as a progress event names it, read once (on Python 3.11
#: `RacerState.PLAYING.value` costs ~0.5 us a read; the delivery of every batch reads it).
_PLAYING_NAME: Final = RacerState.PLAYING.value


def no_change(race: Race) -> list[RaceEvent]:
    """No change of its own: applied, it stores what a fold put in front of it."""
    return []


def is_progress_only(events: Sequence[RaceEvent]) -> bool:
    """Events that only move racers' progress on (no state change): one node need not
    store them, since replaying the moves recomputes them."""
    for event in events:
        if not isinstance(event, Progress) or event.progress.state != _PLAYING_NAME:
            return False
    return True


def mover_of(message: RaceEvent | RaceSnapshot) -> PlayerId | None:
    """The racer whose own moves a progress event reports (None for any other message: a
    change of state, the opening figures, a snapshot)."""
    if not isinstance(message, Progress):
        return None
    entry = message.progress
    return entry.player_id if entry.state == _PLAYING_NAME and entry.moves else None


def opening_figures(race: Race) -> Opening:
    """Every racer's figures on the race's fresh deal (one deal for all)."""
    game = deal(race.game, race.record.game_number)
    on, total = game.progress()
    won = game.is_won()
    return Opening(on_foundations=on, total=total, won=won, stuck=not won and game.is_stuck())


def race_timers(now_ms: int) -> Change:
    """The change that applies the race's transitions due by `now_ms` (`Race.tick`): a start
    records every racer's figures on the fresh deal first, so that a racer marked gone, or
    timed out, in the same tick has them too."""

    def change(race: Race) -> list[RaceEvent]:
        return race.tick(now_ms, opening=lambda: opening_figures(race))

    return change


def board_progress(player_id: PlayerId, board: RacerBoard) -> Change:
    """The change that reports a racer's board as it stands after its last stored move: no
    event if the race counts these moves already and the board is neither won nor stuck
    (another node reported them first; a compare-and-set lost to it applies this again)."""
    game = board.game
    on, total = game.progress()
    won = game.is_won()
    stuck = not won and game.is_stuck()
    moves = game.ply
    at_ms, reached_ms = board.move_times[-1], board.count_changed_at_ms

    def change(race: Race) -> list[RaceEvent]:
        racer = race.racers.get(player_id)
        if racer is not None and racer.moves == moves and not (won or stuck):
            return []
        return race.record_board(
            player_id,
            on_foundations=on,
            total=total,
            moves=moves,
            won=won,
            stuck=stuck,
            now_ms=at_ms,
            reached_ms=reached_ms,
        )

    return change


def chain(first: Change, then: Change) -> Change:
    """`first`, then `then`, as one change (one compare-and-set)."""

    def both(race: Race) -> list[RaceEvent]:
        return first(race) + then(race)

    return both


class StoredMoves(NamedTuple):
    """What a race's stored moves say against its racers' move counts
    (`stored_moves_progress`)."""

    #: The change that brings the racers the race counts behind their stored moves to them.
    change: Change
    #: The moves it counts that the race did not, to be played on boards and published.
    uncounted: list[MoveRecord]
    #: Racers whose stored moves do not replay: the change counts them with the figures the
    #: race has for them.
    unplayable: list[PlayerId]
    #: Racers the race counts more moves for than are stored (their list lost some).
    overcounted: list[PlayerId]


def stored_moves_progress(race: Race, moves: Sequence[MoveRecord]) -> StoredMoves:
    """The race's stored `moves` (`Store.get_moves`) against its racers' move counts: the
    change that brings each racer still playing whose count is behind them to the figures of
    its stored moves (another node acknowledged them and holds their progress in a batch), as
    `board_progress` reports them (a won or stuck board puts the racer out), and the moves the
    race did not count. A racer whose stored moves do not replay (a move an older engine took,
    or corrupt data) is counted to them with the figures the race has for it, and its moves
    are not among those to play. Racers counted right or further, and racers out, are left as
    they are; so is a racer the race counts further by the time the change is applied (a
    compare-and-set lost to a node that counted later moves): a change never takes a racer
    back."""
    by_player: dict[PlayerId, list[MoveRecord]] = {}
    for move in moves:
        by_player.setdefault(move.player_id, []).append(move)
    changes: list[tuple[PlayerId, int, Change]] = []
    uncounted: list[MoveRecord] = []
    unplayable: list[PlayerId] = []
    overcounted = sorted(p for p, r in race.racers.items() if r.moves > len(by_player.get(p, [])))
    for player_id, mine in sorted(by_player.items()):
        racer = race.racers.get(player_id)
        if racer is None or racer.state is not RacerState.PLAYING or racer.moves >= len(mine):
            continue
        try:
            board = replay_board(race, mine)
        except EngineError:
            unplayable.append(player_id)
            last_ms = max(m.at_ms for m in mine)
            changes.append((player_id, len(mine), _count_only(player_id, len(mine), last_ms)))
            continue
        changes.append((player_id, len(mine), board_progress(player_id, board)))
        uncounted += sorted((m for m in mine if m.ply >= racer.moves), key=lambda m: m.ply)

    def change(race: Race) -> list[RaceEvent]:
        events: list[RaceEvent] = []
        for player_id, count, progress in changes:
            racer = race.racers.get(player_id)
            if racer is not None and racer.moves < count:
                events += progress(race)
        return events

    return StoredMoves(change if changes else no_change, uncounted, unplayable, overcounted)


def _count_only(player_id: PlayerId, moves: int, at_ms: int) -> Change:
    """The change that counts `moves` moves for a racer still playing, its figures as the
    race has them (its last move at `at_ms`)."""

    def change(race: Race) -> list[RaceEvent]:
        racer = race.racers.get(player_id)
        if racer is None:
            return []
        return race.record_board(
            player_id,
            on_foundations=racer.on_foundations,
            total=racer.total,
            moves=moves,
            won=False,
            stuck=False,
            now_ms=at_ms,
        )

    return change


def connection_change(player_id: PlayerId, connected: bool, now_ms: int, holder: str) -> Change:
    """A racer's connection through `holder` came or went (`Race.set_connected`: a racer who
    connected again elsewhere is not marked away by the old connection's node)."""
    return lambda race: race.set_connected(player_id, connected, now_ms, holder)


def connected_through(
    player_id: PlayerId,
    session: Session,
    holder: str,
    now_ms: int,
    players: Mapping[PlayerId, Session],
) -> Change:
    """The racer is connected through `session` (named `holder` in its races), if `session`
    is still open and the player's connection in `players` when the change is applied; else
    nothing. The change may wait for the race's lock, or for the store (`apply_or_log`), while
    `session` closes; its leaving may have gone first, found the racer away and changed
    nothing, so marking the racer connected then would leave it connected through a closed
    connection, never put out."""

    def change(race: Race) -> list[RaceEvent]:
        if session.closed or players.get(player_id) is not session:
            return []
        return race.set_connected(player_id, True, now_ms, holder)

    return change


def new_epoch() -> str:
    """A fresh name for a race's event numbering (`Race.new_epoch`)."""
    return secrets.token_hex(4)


def own_board(runtime: RaceRuntime, player_id: PlayerId) -> Board:
    """A racer's own board as it stands, for that racer (no delay)."""
    game = runtime.boards[player_id].game
    return Board(
        race_id=runtime.race_id,
        player_id=player_id,
        ply=game.ply,
        delayed_ms=0,
        board=board_for(game, Audience.PLAYER),
    )


__all__ = [
    "Change",
    "StoredMoves",
    "board_progress",
    "chain",
    "connected_through",
    "connection_change",
    "is_progress_only",
    "mover_of",
    "new_epoch",
    "no_change",
    "opening_figures",
    "own_board",
    "race_timers",
    "stored_moves_progress",
]
