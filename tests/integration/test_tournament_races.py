"""A tournament's races against its decisions, end to end on loopback: a race whose match is
decided meanwhile (forfeit, correction) is stopped, and after a restart the no-show timer
continues from when the race was requested instead of starting over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.hub import wall_clock_ms
from solrace.server.protocol.commitment import commit
from solrace.server.protocol.competition_records import TournamentRecord, settled_by_document
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    Board,
    Error,
    GetReplay,
    MakeMove,
    MoveRejected,
    Ping,
    Pong,
    Progress,
    RaceFinished,
    RaceSnapshot,
    RaceStarted,
    RaceUpdate,
    Replay,
    Resign,
    Sync,
    Watch,
)
from solrace.server.protocol.records import LIVE_STATUSES, RaceRecord, RaceStatus
from solrace.server.protocol.tournament_events import RoundEnded
from solrace.server.protocol.tournament_messages import (
    GetProfile,
    JoinTournament,
    Profile,
    TournamentRace,
    TournamentView,
    WatchTournament,
    tournament_of_race,
)
from solrace.server.store import StoreUnavailableError
from solrace.server.tournament_changes import SAVE_ATTEMPTS
from solrace.server.tournament_live import Live
from tests.integration.conftest import ServerFactory, make_settings
from tests.integration.test_tournaments import FAST, admin_act, connect, create
from tests.integration.wsclient import Client
from tests.waiting import eventually, eventually_async


async def two_player_final(app: App, **options: object) -> tuple[Client, Client, Client, str]:
    """Admin, ann and bob; a single elimination of the two, created and joined (not started)."""
    admin = await connect(app, "director")
    ann, bob = await connect(app, "ann"), await connect(app, "bob")
    view = await create(admin, "single_elimination", time_limit_s=300, **options)
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=view.tournament_id))
        await player.expect(TournamentView)
    return admin, ann, bob, view.tournament_id


async def first_round_of_four(
    app: App,
) -> tuple[Client, list[Client], str, dict[PlayerId, TournamentRace]]:
    """ann, bob, cid and dee in a started single elimination (300 s races, no check-in) that
    the admin watches: the admin, the players, the tournament id and each player's notice of
    its first race (two matches on one deal)."""
    admin = await connect(app, "director")
    players = [await connect(app, name) for name in ("ann", "bob", "cid", "dee")]
    view = await create(admin, "single_elimination", time_limit_s=300, check_in_required=False)
    tid = view.tournament_id
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView)
    for player in players:
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    notices = {p.player_id: await p.expect(TournamentRace) for p in players}
    return admin, players, tid, notices


def cancelled(race_id: str) -> Callable[[RaceUpdate], bool]:
    return lambda m: m.race_id == race_id and m.race.status == "cancelled"


def told_cancelled(client: Client, race_id: str) -> Callable[[], bool]:
    """Has `client` been told that race `race_id` is cancelled (by an event or a snapshot)?"""

    def told_the_race_cancelled() -> bool:
        return any(
            isinstance(m, RaceUpdate | RaceSnapshot)
            and m.race_id == race_id
            and m.race.status == "cancelled"
            for m in client.received
        )

    return told_the_race_cancelled


async def test_a_forfeit_stops_the_running_race_of_the_decided_match(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app)
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == notice.race_id)

    await admin.send(admin_act(tid, "forfeit", match_id=notice.match_id, player_id=bob.player_id))
    final = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert final.tournament.champion == ann.player_id
    for player in (ann, bob):
        await player.expect(RaceUpdate, cancelled(notice.race_id))
    assert notice.race_id not in app.hub.races
    stored = await app.store.get_race(notice.race_id)
    assert stored is not None and stored.status is RaceStatus.CANCELLED and stored.results is None
    # Its replay will never exist: said so, not `not_finished` as if it were yet to come.
    await ann.send(GetReplay(race_id=notice.race_id))
    refusal = await ann.expect(Error)
    assert refusal.code == "wrong_status" and f"{notice.race_id} was cancelled" in refusal.message

    await ann.send(MakeMove(race_id=notice.race_id, seq=1, move="deal"))
    assert (await ann.expect(MoveRejected)).code == "unknown_race"
    assert not any(isinstance(m, RaceFinished) for m in ann.received + bob.received)
    await ann.send(GetProfile())
    assert (await ann.expect(Profile)).ratings == []  # a stopped race rates nobody
    for each in (admin, ann, bob):
        await each.close()


async def test_a_race_the_store_would_not_stop_is_stopped_before_its_round_s_deal_is_released(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forfeit decides the match while its race runs, and the store refuses the race's
    cancel. The round ended all the same and its deal was released: the race ran on, its deal
    known (the tournament's view names the round's number), and once over it would have shown
    the number in its `race_finished` and been rated. A round's deal is released only once
    none of its races runs: the race is stopped first (by the tick, should it fail again)."""
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app, rated=True)
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == notice.race_id)
    refused = asyncio.Event()
    save = app.store.save_race_if

    async def refuse_the_first_cancel(race: RaceRecord, expected: RaceRecord | None) -> bool:
        if race.status is RaceStatus.CANCELLED and not refused.is_set():
            refused.set()
            raise StoreUnavailableError("the store is away (injected)")
        return await save(race, expected)

    monkeypatch.setattr(app.store, "save_race_if", refuse_the_first_cancel)
    await admin.send(admin_act(tid, "forfeit", match_id=notice.match_id, player_id=bob.player_id))
    await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert refused.is_set()
    for player in (ann, bob):  # as an event, or a snapshot (the refused cancel was undone)
        await eventually(told_cancelled(player, notice.race_id), within=10)
    stored = await app.store.get_race(notice.race_id)
    assert stored is not None and stored.status is RaceStatus.CANCELLED
    assert not stored.deal_held  # released once stopped
    await ann.send(Resign(race_id=notice.race_id))
    await ann.expect(Error, lambda m: m.request == "resign")
    assert not any(isinstance(m, RaceFinished) for m in ann.received + bob.received)
    await ann.send(GetProfile())
    assert (await ann.expect(Profile)).ratings == []
    for each in (admin, ann, bob):
        await each.close()


async def test_a_correction_stops_the_sudden_death_race_it_makes_useless(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app)
    await admin.send(admin_act(tid, "start"))
    first = await ann.expect(TournamentRace)
    for player in (ann, bob):
        await player.expect(RaceStarted, lambda m: m.race_id == first.race_id)
    for player in (ann, bob):  # both resign with no card out: a tie, so a sudden-death race
        await player.send(Resign(race_id=first.race_id))
    second = await ann.expect(TournamentRace, lambda m: m.race_number == 2)
    await ann.expect(RaceStarted, lambda m: m.race_id == second.race_id)

    assert ann.player_id is not None and bob.player_id is not None
    await admin.send(
        admin_act(
            tid,
            "correct_result",
            match_id=first.match_id,
            race_number=1,
            placings=[[ann.player_id], [bob.player_id]],
            reason="scorer error",
        )
    )
    final = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    assert final.tournament.champion == ann.player_id
    assert [len(m.races) for m in final.tournament.rounds[0].matches] == [1]
    await bob.expect(RaceUpdate, cancelled(second.race_id))
    stored = await app.store.get_race(second.race_id)
    assert stored is not None and stored.status is RaceStatus.CANCELLED
    for each in (admin, ann, bob):
        await each.close()


async def test_after_a_restart_a_no_show_forfeits_on_the_stored_timer(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    first = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(first, no_show_grace_s=30)
    await bob.close()  # bob never shows up for his race
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)

    def ann_present() -> bool:
        matches = first.tournaments.live[tid].tournament.live_matches()
        return bool(matches) and ann.player_id in matches[0].present

    await eventually(ann_present, within=10.0, what="ann reported present")
    tokens = [c.welcome.token for c in (admin, ann) if c.welcome is not None]
    for each in (admin, ann):
        await each.close()
    await first.stop()

    # The node comes back 31 s later (its clock says so): bob's 30 s are over, so he forfeits
    # once the players have had the reconnect grace (2 s here), not after 30 s more.
    again = App(make_settings(tmp_path, **FAST, grace_s=2.0))
    again.hub.clock = lambda: wall_clock_ms() + 31_000
    await again.start()
    clients: list[Client] = []
    try:
        clients = [await connect(again, token=token) for token in tokens]
        admin, ann = clients
        await admin.send(WatchTournament(tournament_id=tid))
        view = await admin.expect(
            TournamentView, lambda m: m.tournament.phase == "finished", within=10.0
        )
        match = view.tournament.rounds[0].matches[0]
        assert match.forfeited == [bob.player_id] and match.winner == ann.player_id
        await ann.expect(RaceUpdate, cancelled(notice.race_id))  # and his race is stopped
    finally:
        for each in clients:
            await each.close()
        await again.stop()


async def test_a_tournament_the_store_fails_does_not_hold_up_the_others_ticks(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tick goes through the running tournaments in turn: a store error loading one
    escaped it, and every later one got no presence marks and no forfeits while it lasted."""
    app = await start_server(**FAST)
    admin, ann, bob, first = await two_player_final(app)
    await admin.send(admin_act(first, "start"))
    await ann.expect(TournamentRace)
    load = app.store.get_tournament

    async def first_unavailable(tournament_id: str) -> TournamentRecord | None:
        if tournament_id == first:
            raise StoreUnavailableError("the store is away for this one")
        return await load(tournament_id)

    monkeypatch.setattr(app.store, "get_tournament", first_unavailable)
    cid, dee = await connect(app, "cid"), await connect(app, "dee")
    admin.drop(TournamentView)  # the first one's: the next view is the new tournament's
    second = (await create(admin, "single_elimination", time_limit_s=300)).tournament_id
    for player in (cid, dee):
        await player.send(JoinTournament(tournament_id=second))
        await player.expect(TournamentView)
    await admin.send(admin_act(second, "start"))
    await cid.expect(TournamentRace)
    assert list(app.tournaments.live) == [first, second]  # the tick sees the first one first

    def both_present() -> bool:
        matches = app.tournaments.live[second].tournament.live_matches()
        return bool(matches) and set(matches[0].present) == {cid.player_id, dee.player_id}

    await eventually(both_present, within=10.0, what="the second tournament's players present")
    for each in (admin, ann, bob, cid, dee):
        await each.close()


async def test_players_who_never_come_forfeit_as_no_shows_before_the_timer_runs_out(
    start_server: ServerFactory,
) -> None:
    """The defaults' order: a race's reconnect grace (0.3 s here, 60 s by default) runs out
    long before the no-show timer (120 s), so the race ends with both racers `gone`. That is
    no tie to replay until the seed decides: both forfeit, nobody goes through, and nobody's
    rating moves."""
    app = await start_server(**FAST, grace_s=0.3)
    admin, ann, bob, tid = await two_player_final(app, no_show_grace_s=120, best_of=3)
    for player in (ann, bob):
        await player.close()  # neither ever comes to a race
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    final = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    match = final.tournament.rounds[0].matches[0]
    assert sorted(match.forfeited) == sorted([ann.player_id, bob.player_id])
    assert match.winner is None and final.tournament.champion is None
    assert match.races == []  # no race counted as a tie
    for player in (ann, bob):
        assert player.player_id is not None
        assert await app.store.get_ratings(player.player_id) == []
    await admin.close()


async def test_a_player_who_never_comes_forfeits_when_his_race_ends(
    start_server: ServerFactory,
) -> None:
    """Bob never comes; ann plays the race out. Bob does not lose a race (and then another,
    each waiting for his grace): he forfeits the best-of-3 as a no-show after the first."""
    app = await start_server(**FAST, grace_s=0.3)
    admin, ann, bob, tid = await two_player_final(app, no_show_grace_s=120, best_of=3)
    await bob.close()
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)
    await ann.expect(
        Progress,
        lambda m: (
            m.race_id == notice.race_id
            and m.progress.player_id == bob.player_id
            and m.progress.state == "gone"
        ),
    )
    await ann.send(Resign(race_id=notice.race_id))
    final = await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    match = final.tournament.rounds[0].matches[0]
    assert match.forfeited == [bob.player_id] and match.winner == ann.player_id
    assert [r.placings for r in match.races] == [[[ann.player_id]]]
    assert final.tournament.champion == ann.player_id
    assert ann.player_id is not None
    assert await app.store.get_ratings(ann.player_id) == []  # a race against nobody
    for each in (admin, ann):
        await each.close()


@pytest.mark.parametrize("change_in_the_gap", [False, True])
async def test_a_round_s_deal_stays_secret_until_every_match_of_the_round_ends(
    start_server: ServerFactory, change_in_the_gap: bool
) -> None:
    """Two matches race on one deal: the first to finish reveals neither number nor salt, and
    its replay (which shows a line through the deal) waits for the round's end.

    With `change_in_the_gap`, another change is saved (the tick marks the final's players
    present) after the round's end is saved and before its deals are released: the view it
    pushes must not show the round ended before the release (a watcher would ask for a
    replay still held)."""
    app = await start_server(**FAST)
    replay_asked = asyncio.Event()
    if change_in_the_gap:
        tournaments = app.tournaments
        release = tournaments._release_deals

        async def tick_then_release(live: Live, round_number: int) -> None:
            await tournaments.tick()
            # The gap held open until the replay is asked for: at most a second, since a
            # correct server shows no ended round (so nobody asks) until this release.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(replay_asked.wait(), 1.0)
            await release(live, round_number)

        tournaments._release_deals = tick_then_release  # type: ignore[method-assign]
    admin, players, tid, notices = await first_round_of_four(app)
    first, second = sorted({n.race_id for n in notices.values()})
    in_first = [p for p in players if notices[p.player_id].race_id == first]
    in_second = [p for p in players if notices[p.player_id].race_id == second]
    for player in players:
        await player.expect(
            RaceStarted, lambda m, p=player: m.race_id == notices[p.player_id].race_id
        )

    for player in in_first:
        await player.send(Resign(race_id=first))
    held = await in_first[0].expect(RaceFinished, lambda m: m.race_id == first)
    assert held.game_number is None and held.salt is None
    await in_first[0].send(GetReplay(race_id=first))
    refusal = await in_first[0].expect(Error, lambda m: m.request == "get_replay")
    assert refusal.code == "not_finished" and "round ends" in refusal.message

    # A tie asks for a sudden-death race; the admin settles both matches by forfeits instead.
    for loser in (in_first[1], in_second[1]):
        match_id = notices[loser.player_id].match_id
        await admin.send(admin_act(tid, "forfeit", match_id=match_id, player_id=loser.player_id))
    ended = await admin.expect(
        TournamentView, lambda m: bool(m.tournament.rounds and m.tournament.rounds[0].is_ended)
    )
    number = ended.tournament.rounds[0].game_numbers["1"]
    await in_first[0].send(GetReplay(race_id=first))
    answer = await in_first[0].expect(Replay | Error)  # type: ignore[arg-type]
    replay_asked.set()
    assert isinstance(answer, Replay), answer
    replay = answer.replay
    assert replay.game_number == number
    assert replay.commitment == commit(replay.game, number, replay.salt)


async def test_a_correction_that_reopens_an_ended_round_deals_its_race_anew(
    start_server: ServerFactory,
) -> None:
    """Once a round has ended, the view lists its deals: a correction that reopens one of
    its matches must not seat its players on one of them (they could have solved it)."""
    app = await start_server(**FAST)
    admin, players, tid, notices = await first_round_of_four(app)
    by_race: dict[str, list[Client]] = {}
    for player in players:
        by_race.setdefault(notices[player.player_id].race_id, []).append(player)
    in_first, in_second = (group for _, group in sorted(by_race.items()))
    for player in players:
        await player.expect(
            RaceStarted, lambda m, p=player: m.race_id == notices[p.player_id].race_id
        )
    for player in players:  # ties both: each match asks for a sudden-death race 2
        await player.send(Resign(race_id=notices[player.player_id].race_id))
    for player in players:
        await player.expect(TournamentRace, lambda m: m.race_number == 2)
    # The second match was won by its first player after all: its race 2 is cancelled.
    c, d = (p.player_id for p in in_second)
    second_match = notices[c].match_id
    await admin.send(
        admin_act(tid, "correct_result", match_id=second_match, race_number=1, placings=[[c], [d]])
    )
    await in_second[0].expect(RaceUpdate, lambda m: m.race.status == "cancelled")
    await admin.send(admin_act(tid, "pause"))  # round 2 waits for the corrections
    loser = in_first[1].player_id
    await admin.send(admin_act(tid, "forfeit", match_id=notices[loser].match_id, player_id=loser))
    ended = await admin.expect(
        TournamentView, lambda m: bool(m.tournament.rounds and m.tournament.rounds[0].is_ended)
    )
    revealed = set(ended.tournament.rounds[0].game_numbers.values())
    assert len(revealed) == 2  # races 1 and 2, out for anyone to solve

    # A tie after all: the second match is reopened and needs its race 2 again.
    await admin.send(
        admin_act(tid, "correct_result", match_id=second_match, race_number=1, placings=[[c, d]])
    )
    await admin.expect(
        TournamentView,
        lambda m: (
            m.tournament.version > ended.tournament.version and not m.tournament.rounds[0].is_ended
        ),
    )
    await admin.send(admin_act(tid, "resume"))
    again = await in_second[0].expect(TournamentRace, lambda m: m.match_id == second_match)
    assert again.race_number == 2
    record = await app.store.get_race(again.race_id)
    assert record is not None and record.deal_held
    assert record.game_number not in revealed
    for each in (admin, *players):
        await each.close()


async def test_a_match_reopened_while_its_round_runs_is_dealt_anew_the_races_it_raced(
    start_server: ServerFactory,
) -> None:
    """A match ties its race and both sudden-death races (decided on the seed), a correction
    gives race 1 to one player (the sudden-death races are voided), and another makes it a
    tie again, while the other match of the round still races: the match needs races 2 and
    3 again, and its players know the deals they raced, so each re-run has a new one."""
    app = await start_server(**FAST)
    admin, players, tid, notices = await first_round_of_four(app)
    by_race: dict[str, list[Client]] = {}
    for player in players:
        by_race.setdefault(notices[player.player_id].race_id, []).append(player)
    in_first, in_second = (group for _, group in sorted(by_race.items()))
    c, d = (p.player_id for p in in_second)
    assert c is not None and d is not None
    second_match = notices[c].match_id

    async def tie(race_id: str) -> None:
        for player in in_second:
            await player.expect(RaceStarted, lambda m: m.race_id == race_id)
        for player in in_second:
            await player.send(Resign(race_id=race_id))

    async def game_number_of(race_id: RaceId) -> str:
        record = await app.store.get_race(race_id)
        assert record is not None and record.deal_held  # the round runs: still secret
        return record.game_number

    raced: dict[int, str] = {}
    race_id = notices[c].race_id
    for number in (1, 2, 3):
        await tie(race_id)
        if number < 3:
            nxt = await in_second[0].expect(
                TournamentRace, lambda m, n=number + 1: m.race_number == n
            )
            race_id = nxt.race_id
            raced[nxt.race_number] = await game_number_of(race_id)
    first_match = notices[in_first[0].player_id].match_id

    def races(view: TournamentView) -> dict[str, int]:
        """The races each match of round 1 counts (none before the start)."""
        rounds = view.tournament.rounds
        return {m.match_id: len(m.races) for m in rounds[0].matches} if rounds else {}

    decided = await admin.expect(TournamentView, lambda m: races(m).get(second_match) == 3)
    assert races(decided) == {first_match: 0, second_match: 3}
    assert not decided.tournament.rounds[0].is_ended  # the first match still races race 1

    await admin.send(
        admin_act(tid, "correct_result", match_id=second_match, race_number=1, placings=[[c], [d]])
    )
    await admin.expect(TournamentView, lambda m: races(m) == {first_match: 0, second_match: 1})
    await admin.send(
        admin_act(tid, "correct_result", match_id=second_match, race_number=1, placings=[[c, d]])
    )
    for number in (2, 3):
        again = await in_second[0].expect(TournamentRace, lambda m, n=number: m.race_number == n)
        assert again.match_id == second_match
        assert await game_number_of(again.race_id) != raced[number]
        if number == 2:
            await tie(again.race_id)
    first = await app.store.get_race(notices[in_first[0].player_id].race_id)
    assert first is not None and first.status in LIVE_STATUSES
    for each in (admin, *players):
        await each.close()


async def test_a_race_the_store_could_not_open_after_a_saved_start_is_opened_by_the_tick(
    start_server: ServerFactory,
) -> None:
    """The start is saved, then the store fails while its race is opened: the admin is told
    the start holds (it does), and the tick opens the race once the store answers."""
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app)
    store = app.hub.store
    real_get_race = store.get_race
    failures = 0

    async def get_race_away_once(race_id: RaceId) -> RaceRecord | None:
        nonlocal failures
        if race_id.startswith(tid) and failures == 0:
            failures += 1
            raise StoreUnavailableError("the store is away (injected)")
        return await real_get_race(race_id)

    store.get_race = get_race_away_once  # type: ignore[method-assign]
    try:
        await admin.send(admin_act(tid, "start"))
        view = await admin.expect(TournamentView, lambda m: m.tournament.phase == "running")
        assert view.tournament.tournament_id == tid
        notices = [await player.expect(TournamentRace) for player in (ann, bob)]
        assert failures == 1, "the injected outage did not happen"
        (race_id,) = {n.race_id for n in notices}
        stored = await real_get_race(race_id)
        assert stored is not None and {r.player_id for r in stored.racers} == {
            ann.player_id,
            bob.player_id,
        }
        assert not any(isinstance(m, Error) for m in admin.received)
    finally:
        store.get_race = real_get_race  # type: ignore[method-assign]
        for each in (admin, ann, bob):
            await each.close()


@pytest.mark.parametrize("failure", ["away", "always changed"])
async def test_the_last_round_s_deal_is_released_even_if_the_store_failed_as_it_finished(
    start_server: ServerFactory, failure: str
) -> None:
    """The tournament finishes (and leaves memory) while the store refuses to release its
    final's deal (it is away, or the race's record changed under every attempt: that one
    was taken as done, and the deal stayed held for good): the tick releases it later."""
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app)
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)
    store = app.hub.store
    real_save = store.save_race_if
    refusals = 1 if failure == "away" else SAVE_ATTEMPTS
    refused = 0

    async def release_refused_once(race: RaceRecord, expected: RaceRecord | None) -> bool:
        nonlocal refused
        releasing = expected is not None and expected.deal_held and not race.deal_held
        if releasing and refused < refusals:
            refused += 1
            if failure == "away":
                raise StoreUnavailableError("the store is away (injected)")
            return False  # as if another change came first, every time
        return await real_save(race, expected)

    store.save_race_if = release_refused_once  # type: ignore[method-assign]
    try:
        forfeit = admin_act(tid, "forfeit", match_id=notice.match_id, player_id=bob.player_id)
        await admin.send(forfeit)
        await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
        assert tid not in app.tournaments.live
        deadline = time.monotonic() + 10
        while (record := await store.get_race(notice.race_id)) and record.deal_held:
            assert time.monotonic() < deadline, "the final's deal was never released"
            await asyncio.sleep(0.02)
        assert refused == refusals, "the injected refusals did not happen"
    finally:
        store.save_race_if = real_save  # type: ignore[method-assign]
        for each in (admin, ann, bob):
            await each.close()


async def test_a_tournament_s_players_cannot_watch_its_races_while_their_deal_is_held(
    start_server: ServerFactory,
) -> None:
    """A round's matches race on one deal: a board of one match, even delayed or final,
    shows cards the other match has yet to turn (the adversarial review's player of W1-1
    predicted 10 of its next 10 stock cards watching W1-2). The tournament's players are
    refused; an audience watches the progress, but gets no board while the deal is held (a
    player's second, anonymous connection is an audience too: it saw the other match's
    stock cards): the boards, final by then, come once the round has ended."""
    app = await start_server(**FAST)
    admin, players, tid, notices = await first_round_of_four(app)
    audience = await connect(app)
    first = sorted({n.race_id for n in notices.values()})[0]
    in_first = [p for p in players if notices[p.player_id].race_id == first]
    spy = next(p for p in players if p not in in_first)
    await in_first[0].expect(RaceStarted, lambda m: m.race_id == first)
    await spy.send(Watch(race_id=first))
    refusal = await spy.expect(Error, lambda m: m.request == "watch")
    assert refusal.code == "not_allowed" and "until their round ends" in refusal.message
    await audience.send(Watch(race_id=first))
    await audience.expect(RaceSnapshot, lambda m: m.race_id == first)
    await in_first[0].send(MakeMove(race_id=first, seq=1, move="deal"))
    await audience.expect(Progress, lambda m: m.race_id == first and m.progress.moves == 1)
    await spy.send(Ping(nonce=3))
    await spy.expect(Pong)
    assert not [m for m in spy.inbox if isinstance(m, Board | Progress) and m.race_id == first]

    for player in in_first:  # the race finishes (a tie): its deal stays held
        await player.send(Resign(race_id=first))
    await audience.expect(RaceFinished, lambda m: m.race_id == first)
    # The final boards went out right after `race_finished`, when a deal was not held.
    await audience.send(Ping(nonce=4))
    await audience.expect(Pong)
    assert not [m for m in audience.inbox if isinstance(m, Board) and m.race_id == first]

    # Once the round has ended (both matches decided), its races may be watched by anyone,
    # and the audience still watching gets the final boards.
    await spy.send(WatchTournament(tournament_id=tid))
    await spy.expect(TournamentView, lambda m: m.tournament.tournament_id == tid)
    for loser in (in_first[1], next(p for p in players if p not in in_first and p is not spy)):
        match_id = notices[loser.player_id].match_id
        await admin.send(admin_act(tid, "forfeit", match_id=match_id, player_id=loser.player_id))
    await spy.expect(
        TournamentView, lambda m: bool(m.tournament.rounds and m.tournament.rounds[0].is_ended)
    )
    final = await audience.expect(
        Board, lambda m: m.race_id == first and m.player_id == in_first[0].player_id
    )
    assert (final.ply, final.delayed_ms) == (1, 0)
    await spy.send(Watch(race_id=first))
    await spy.expect(RaceSnapshot, lambda m: m.race_id == first)
    await spy.expect(Board, lambda m: m.race_id == first and m.ply == 1)


async def test_a_released_deal_shows_in_the_snapshots_of_the_race_kept_in_memory(
    start_server: ServerFactory,
) -> None:
    """The round's end releases its races' deals in the store; the node's copy of a finished
    race (kept in memory for late syncs) said it was still held, so a sync's snapshot showed
    no game number for ten minutes. Now the copy takes the release."""
    app = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(app)
    await admin.send(admin_act(tid, "start"))
    notices = {p.player_id: await p.expect(TournamentRace) for p in (ann, bob)}
    races = await tie_to_the_end([ann, bob], notices)
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")

    async def released() -> bool:
        records = [await app.store.get_race(race_id) for race_id in races]
        return all(r is not None and not r.deal_held for r in records)

    await eventually_async(released, what="the round's deals released in the store")
    assert races[0] in app.hub.races  # the copy in memory answers the sync
    await ann.send(Sync(race_id=races[0]))
    snapshot = await ann.expect(RaceSnapshot, lambda m: m.race_id == races[0])
    assert snapshot.race.status == "finished"
    stored = await app.store.get_race(races[0])
    assert stored is not None
    assert (snapshot.game_number, snapshot.salt) == (stored.game_number, stored.salt)
    assert snapshot.game_number is not None and snapshot.salt is not None
    assert commit(snapshot.race.game, snapshot.game_number, snapshot.salt) == snapshot.commitment
    for each in (admin, ann, bob):
        await each.close()


async def tie_to_the_end(
    players: list[Client], first: dict[PlayerId, TournamentRace]
) -> list[RaceId]:
    """Every match of the round `first` opened (each player's notice) is played out in ties:
    both racers resign at once, race after race (the race, then two sudden deaths), until the
    seed decides it. The ids of the races, all finished."""
    races: list[RaceId] = []
    notices = dict(first)
    for race_number in (1, 2, 3):
        if race_number > 1:
            for player in players:
                assert player.player_id is not None
                notices[player.player_id] = await player.expect(
                    TournamentRace, lambda m, n=race_number: m.race_number == n
                )
        for player in players:
            race_id = notices[player.player_id].race_id
            await player.expect(RaceStarted, lambda m, r=race_id: m.race_id == r)
            await player.send(Resign(race_id=race_id))
        races += sorted({n.race_id for n in notices.values()})
    return races


def crash_as_a_round_ends(app: App) -> asyncio.Event:
    """From the saved change that ends a round on, `app` carries out no change (opens no race,
    releases no deal), as if it had died right after that save: the event is set then."""
    tournaments = app.tournaments
    carry_out = tournaments._carry_out
    crashed = asyncio.Event()

    async def carry_out_until_the_crash(saved: Any) -> list[TournamentRace]:
        if any(isinstance(e, RoundEnded) for e in saved.events):
            crashed.set()
        return [] if crashed.is_set() else await carry_out(saved)

    tournaments._carry_out = carry_out_until_the_crash  # type: ignore[method-assign]
    return crashed


@pytest.mark.parametrize("count", [2, 4])
async def test_a_round_s_deals_held_by_a_crash_at_its_end_are_released_at_the_restart(
    start_server: ServerFactory, count: int
) -> None:
    """The server saves a round's end and dies before releasing its deals (and, with four
    players, before opening round 2's race; with two, the tournament is finished). The
    restart releases them: the round's replays open, and the stored document says nothing
    is held any more (the next restart reads none of its races)."""
    first = await start_server(**FAST)
    crashed = crash_as_a_round_ends(first)
    if count == 2:
        admin, ann, bob, tid = await two_player_final(first)
        players = [ann, bob]
        await admin.send(admin_act(tid, "start"))
        notices = {p.player_id: await p.expect(TournamentRace) for p in players}
    else:
        admin, players, tid, notices = await first_round_of_four(first)
    races = await tie_to_the_end(players, notices)
    await asyncio.wait_for(crashed.wait(), 10.0)
    await players[0].send(GetReplay(race_id=races[0]))
    refusal = await players[0].expect(Error, lambda m: m.request == "get_replay")
    assert refusal.code == "not_finished" and "round ends" in refusal.message  # the crash
    for each in (admin, *players):
        await each.close()
    await first.stop()

    again = await start_server(**FAST)
    asker = await connect(again)
    for race_id in races:
        await asker.send(GetReplay(race_id=race_id))
        answer = await asker.expect(Replay | Error)  # type: ignore[arg-type]
        assert isinstance(answer, Replay), (race_id, answer)
    await asker.close()
    record = await again.store.get_tournament(tid)
    assert record is not None and not Live.may_hold_deals(record)
    live = Live.from_record(record, again.tournaments._deal)
    assert live.tournament.rounds[0].is_ended
    if count == 4:  # round 2's race, never opened before the crash, is opened now
        (final,) = [rid for rid, link in live.links.items() if link.round_number == 2]
        assert await again.store.get_race(final) is not None
    else:
        assert live.tournament.phase.value == "finished"


async def test_a_document_stored_before_releases_were_noted_has_its_held_deals_released(
    start_server: ServerFactory,
) -> None:
    """A tournament stored without `held_deals` (before releases were noted) may hold any
    ended round's deals: the restart releases them, finished tournament or not."""
    first = await start_server(**FAST)
    admin, ann, bob, tid = await two_player_final(first)
    await admin.send(admin_act(tid, "start"))
    notices = {p.player_id: await p.expect(TournamentRace) for p in (ann, bob)}
    races = await tie_to_the_end([ann, bob], notices)
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView, lambda m: m.tournament.phase == "finished")
    for each in (admin, ann, bob):
        await each.close()
    record = await first.store.get_tournament(tid)
    assert record is not None and not Live.may_hold_deals(record)  # noted once released
    # As an older server left it: no note, and (a crash) the deals still held; not settled,
    # as the store's upgrade finds such a record (`settled_by_document`).
    document = json.loads(record.document)
    del document["held_deals"]
    old = record.model_copy(
        update={"version": record.version + 1, "document": json.dumps(document), "settled": False}
    )
    assert not settled_by_document(old)
    assert await first.store.save_tournament(old, record.version)
    for race_id in races:
        stored = await first.store.get_race(race_id)
        assert stored is not None
        assert await first.store.save_race_if(stored.model_copy(update={"deal_held": True}), stored)
    await first.stop()

    again = await start_server(**FAST)
    for race_id in races:
        stored = await again.store.get_race(race_id)
        assert stored is not None and not stored.deal_held, race_id
    record = await again.store.get_tournament(tid)
    assert record is not None and not Live.may_hold_deals(record)


async def test_a_restart_whose_store_fails_while_resuming_a_tournament_resumes_it_later(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    """The server died as round 1 ended, before opening round 2's race; at the restart the
    store failed once as the tournament was resumed. It was logged and the race never opened
    (until another restart): now the tick resumes the tournament once the store answers."""
    first = await start_server(**FAST)
    crashed = crash_as_a_round_ends(first)
    admin, players, tid, notices = await first_round_of_four(first)
    await tie_to_the_end(players, notices)
    await asyncio.wait_for(crashed.wait(), 10.0)
    for each in (admin, *players):
        await each.close()
    await first.stop()

    again = App(make_settings(tmp_path, **FAST))
    real_get_race = again.store.get_race
    failed = 0

    async def fails_once(race_id: RaceId) -> RaceRecord | None:
        nonlocal failed
        if tournament_of_race(race_id) == tid and failed == 0:
            failed += 1
            raise StoreUnavailableError("the store is away (injected)")
        return await real_get_race(race_id)

    again.store.get_race = fails_once  # type: ignore[method-assign]
    await again.start()
    try:
        assert failed == 1, "the injected failure did not happen"

        async def final_opened() -> bool:
            record = await again.store.get_tournament(tid)
            assert record is not None
            live = Live.from_record(record, again.tournaments._deal)
            finals = [rid for rid, link in live.links.items() if link.round_number == 2]
            return bool(finals) and await real_get_race(finals[0]) is not None

        await eventually_async(final_opened, what="round 2's race opened")
    finally:
        await again.stop()
