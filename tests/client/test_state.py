"""The client's reducer: versioned events once and in order, acks, the commitment check."""

from __future__ import annotations

from solrace.client.state import ClientState
from solrace.engine import Audience, BoardView, deal, view, view_piles
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    MoveAck,
    MoveRejected,
    PileModel,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceInfo,
    RaceList,
    RacerInfo,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    ResultEntry,
    Welcome,
)
from solrace.server.protocol.views import board_model
from solrace.server.protocol.vocab import RacerStateName, RaceStatusName

RACE = RaceId("r1")
GAME = "klondike"
NUMBER = "12345"
SALT = "pepper"


def info(status: RaceStatusName = "open") -> RaceInfo:
    return RaceInfo(
        race_id=RACE,
        game=GAME,
        seats=2,
        time_limit_s=60,
        rated=False,
        private=False,
        status=status,
        creator=PlayerId("pa"),
        racers=[
            RacerInfo(player_id=PlayerId("pa"), name="alice", state="joined", connected=True),
            RacerInfo(player_id=PlayerId("pb"), name="bob", state="joined", connected=True),
        ],
        created_at_ms=1000,
        start_at_ms=None,
        ends_at_ms=None,
        spectator_delay_ms=0,
        grace_ms=60_000,
    )


def welcome() -> Welcome:
    return Welcome(
        protocol=1,
        player_id=PlayerId("pa"),
        name="alice",
        token="t",
        ratings={},
        active_races=[],
        server_time_ms=5_000,
    )


def started(state: ClientState, commitment: str | None = None) -> None:
    state.apply(RaceUpdate(race_id=RACE, epoch="e", version=1, race=info()))
    state.apply(
        RaceStarted(
            race_id=RACE,
            epoch="e",
            version=2,
            started_at_ms=10_000,
            ends_at_ms=70_000,
            commitment=commitment or commit(GAME, NUMBER, SALT),
        )
    )


def progress(version: int, player: str, on: int, state: RacerStateName = "playing") -> Progress:
    entry = ProgressEntry(
        player_id=PlayerId(player), state=state, on_foundations=on, total=52, moves=on, elapsed_ms=0
    )
    return Progress(race_id=RACE, epoch="e", version=version, progress=entry)


def finished(commitment: str) -> RaceFinished:
    results = [
        ResultEntry(
            rank=1,
            player_id=PlayerId("pb"),
            name="bob",
            state="finished",
            on_foundations=52,
            total=52,
            elapsed_ms=9_000,
        ),
        ResultEntry(
            rank=2,
            player_id=PlayerId("pa"),
            name="alice",
            state="resigned",
            on_foundations=3,
            total=52,
            elapsed_ms=4_000,
        ),
    ]
    return RaceFinished(
        race_id=RACE,
        epoch="e",
        version=9,
        finished_at_ms=20_000,
        results=results,
        game_number=NUMBER,
        salt=SALT,
        commitment=commitment,
    )


def test_welcome_sets_identity() -> None:
    state = ClientState()
    state.apply(welcome())
    assert (state.player_id, state.name, state.token) == ("pa", "alice", "t")


def test_versioned_events_apply_once_and_in_order() -> None:
    state = ClientState()
    state.apply(welcome())
    started(state)
    race = state.races[RACE]
    assert race.status == "running" and race.commitment
    assert race.remaining_ms(40_000) == 30_000
    state.apply(progress(3, "pb", 5))
    state.apply(progress(3, "pb", 9))  # same version again: ignored
    state.apply(progress(2, "pb", 7))  # older: ignored
    assert race.racers[PlayerId("pb")].on_foundations == 5
    state.apply(progress(4, "pb", 6))
    assert race.racers[PlayerId("pb")].on_foundations == 6
    assert race.racers[PlayerId("pb")].fraction == 6 / 52


def test_a_new_epoch_starts_versions_over() -> None:
    state = ClientState()
    started(state)
    state.apply(
        Progress(
            race_id=RACE,
            epoch="restarted",
            version=1,
            progress=progress(1, "pb", 8).progress,
        )
    )
    assert state.races[RACE].racers[PlayerId("pb")].on_foundations == 8
    assert state.races[RACE].epoch == "restarted"


def test_reveal_checks_the_commitment_received_at_the_start() -> None:
    good = ClientState()
    started(good)
    good.apply(finished(commit(GAME, NUMBER, SALT)))
    race = good.races[RACE]
    assert race.commitment_ok is True
    assert race.is_finished and race.game_number == NUMBER
    assert race.racers[PlayerId("pa")].state == "resigned"

    forged = ClientState()
    started(forged, commitment="0" * 64)
    forged.apply(finished(commit(GAME, NUMBER, SALT)))
    assert forged.races[RACE].commitment_ok is False


def test_snapshot_replaces_what_was_missed() -> None:
    state = ClientState()
    started(state)
    snapshot = RaceSnapshot(
        race_id=RACE,
        epoch="e",
        version=30,
        race=info("running"),
        commitment=commit(GAME, NUMBER, SALT),
        started_at_ms=10_000,
        progress=[progress(0, "pb", 11).progress],
        results=None,
        game_number=None,
        salt=None,
    )
    state.apply(snapshot)
    race = state.races[RACE]
    assert race.version == 30 and race.racers[PlayerId("pb")].on_foundations == 11
    state.apply(progress(12, "pb", 99))  # older than the snapshot
    assert race.racers[PlayerId("pb")].on_foundations == 11


def test_board_then_acks_follow_the_server_board() -> None:
    game = deal(GAME, NUMBER)
    state = ClientState()
    state.apply(welcome())
    started(state)
    first = view(game, Audience.PLAYER)
    assert isinstance(first, BoardView)
    state.apply(
        Board(race_id=RACE, player_id=PlayerId("pa"), ply=0, delayed_ms=0, board=board_model(first))
    )
    for ply, move in enumerate(["deal", "deal", "deal"]):
        game.play(move)
        piles = [
            PileModel(name=p.name, down=p.down, cards=list(p.cards))
            for p in view_piles(game, game.touched_piles()).values()
        ]
        on, total = game.progress()
        ack = MoveAck(
            race_id=RACE,
            seq=100 + ply,
            ply=ply,
            move=move,
            at_ms=11_000,
            piles=piles,
            on_foundations=on,
            total=total,
            won=False,
            stuck=False,
        )
        state.apply(ack)
        state.apply(ack.model_copy(update={"duplicate": True}))  # a resend's answer: no-op
    mine = state.my_board(RACE)
    expected = view(game, Audience.PLAYER)
    assert isinstance(expected, BoardView)
    assert mine is not None
    assert mine.piles == expected.piles
    assert state.races[RACE].plies[PlayerId("pa")] == 3
    # The acks are the racer's own progress (the server's batches leave it out).
    me = state.races[RACE].racers[PlayerId("pa")]
    assert (me.moves, me.on_foundations, me.total) == (3, *game.progress())
    state.apply(MoveRejected(race_id=RACE, seq=7, move="t0-t0", code="illegal_move", reason="no"))
    assert state.races[RACE].last_rejection is not None
    assert state.my_board(RACE) == mine


def test_lobby_follows_race_updates() -> None:
    state = ClientState()
    state.apply(RaceUpdate(race_id=RACE, epoch="e", version=1, race=info()))
    assert RACE in state.lobby
    state.apply(RaceUpdate(race_id=RACE, epoch="e", version=2, race=info("cancelled")))
    assert RACE not in state.lobby


def test_a_race_list_replaces_the_lobby_and_says_how_many_it_left_out() -> None:
    state = ClientState()
    old = info().model_copy(update={"race_id": "r-old"})
    state.apply(RaceUpdate(race_id=RaceId("r-old"), epoch="e", version=1, race=old))
    assert "r-old" in state.lobby
    state.apply(RaceList(races=[info()], more=250))
    assert list(state.lobby) == [RACE] and state.lobby_more == 250
    state.apply(RaceList(races=[]))
    assert state.lobby == {} and state.lobby_more == 0


def test_races_to_play_are_the_live_ones_the_player_is_still_in() -> None:
    """A race joined here counts (it used to be only the welcome's and the tournaments'); one
    the player is out of (resigned, finished, stuck) does not: nothing to resume there."""
    state = ClientState()
    state.apply(welcome())
    started(state)
    assert state.races_to_play() == [RACE]
    state.apply(progress(3, "pa", 3, state="resigned"))
    assert state.races_to_play() == []


def test_an_unknown_race_error_stays_until_the_server_has_the_race_again() -> None:
    """A watcher whose server lost the race (restarted without its data) is told so by the
    error its resync gets; a snapshot (the race back) clears it."""
    state = ClientState()
    state.apply(welcome())
    started(state)
    state.apply(Error(code="unknown_race", message="no such race", request="sync", race_id=RACE))
    race = state.races[RACE]
    assert race.last_error is not None and race.last_error.code == "unknown_race"
    state.apply(
        RaceSnapshot(
            race_id=RACE,
            epoch="e2",
            version=1,
            race=info("running"),
            commitment=None,
            started_at_ms=10_000,
            progress=[],
            results=None,
            game_number=None,
            salt=None,
        )
    )
    assert race.last_error is None
