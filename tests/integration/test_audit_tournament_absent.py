"""Audit: tournaments on a real node with players who never come, who leave while it runs,
and an admin who pauses, forfeits and drops mid-round; bots play the others. Standings,
deals and ratings are checked as in `test_audit_tournament_play`."""

from __future__ import annotations

import asyncio
from typing import Any

from solrace.client.bots import Bot
from solrace.client.strategy import make_strategy
from solrace.client.tournament_bots import play_tournament
from solrace.server.app import App
from solrace.server.protocol.tournament_messages import (
    JoinTournament,
    LeaveTournament,
    TournamentModel,
    TournamentRace,
    TournamentView,
    WatchTournament,
)
from tests.integration.conftest import ServerFactory
from tests.integration.test_audit_tournament_play import (
    check_deals_and_ratings,
    check_elimination,
    check_scored_standings,
)
from tests.integration.test_tournaments import FAST, admin_act, connect, create, url_of


async def with_ghost_and_leaver(
    app: App, fmt: str, bots: int, **options: Any
) -> tuple[TournamentModel, str, str]:
    """`bots` greedy bots, a ghost (joins, then disconnects for good) and a leaver (leaves
    the tournament when his first race is opened) play to the end; the admin pauses the
    tournament as soon as the first round starts and resumes it. The final view, the
    ghost's and the leaver's ids."""
    admin = await connect(app, "director")
    ghost, leaver = await connect(app, "ghost"), await connect(app, "leaver")
    players: list[Bot] = []
    try:
        view = await create(admin, fmt, no_show_grace_s=1, **options)
        tid = view.tournament_id
        await admin.send(WatchTournament(tournament_id=tid))
        for person in (ghost, leaver):
            await person.send(JoinTournament(tournament_id=tid))
            await person.expect(TournamentView)
        ghost_id, leaver_id = ghost.player_id, leaver.player_id
        await ghost.close()
        players = [
            Bot(url_of(app), f"bot{i}", make_strategy("greedy", seed=i, max_moves=400), delay_s=0)
            for i in range(bots)
        ]
        await asyncio.gather(*(bot.connect() for bot in players))
        runs = [asyncio.create_task(play_tournament(bot, tid)) for bot in players]
        await admin.expect(TournamentView, lambda m: len(m.tournament.players) == bots + 2)
        await admin.send(admin_act(tid, "start"))
        await admin.expect(TournamentView, lambda m: m.tournament.phase == "running")
        await admin.send(admin_act(tid, "pause"))
        await admin.expect(TournamentView, lambda m: m.tournament.paused)
        await admin.send(admin_act(tid, "resume"))
        await admin.expect(TournamentView, lambda m: not m.tournament.paused)
        await leaver.expect(TournamentRace, within=30)
        await leaver.send(LeaveTournament(tournament_id=tid))
        await leaver.expect(TournamentView, lambda m: leaver_id in m.tournament.dropped)
        views = await asyncio.wait_for(asyncio.gather(*runs), 90)
        assert all(v.champion == views[0].champion for v in views)
        return views[0], ghost_id, leaver_id
    finally:
        await asyncio.gather(*(bot.close() for bot in players), return_exceptions=True)
        for each in (admin, leaver):
            await each.close()


def check_absentees(final: TournamentModel, ghost: str, leaver: str) -> None:
    assert final.phase == "finished"
    if final.format != "heats":  # a no-show is withdrawn as if he had left
        assert sorted(final.dropped) == sorted([ghost, leaver])
    else:  # a heat's no-show is out of its advancers, not withdrawn
        assert final.dropped == [leaver]
    assert final.champion not in (ghost, leaver)
    for rnd in final.rounds:
        for match in rnd.matches:
            if ghost in match.players:  # he never came: he forfeits each match he is in
                assert match.forfeited and ghost in match.forfeited
                assert match.winner != ghost
            if leaver in match.players and match.winner is not None:
                assert match.winner != leaver
    assert any(m.races for r in final.rounds for m in r.matches)  # the others raced


async def test_a_swiss_with_a_player_who_never_comes_and_one_who_leaves(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    final, ghost, leaver = await with_ghost_and_leaver(app, "swiss", 5)
    check_absentees(final, ghost, leaver)
    check_scored_standings(final)
    for rnd in final.rounds[1:]:  # the leaver and the ghost are paired no more
        for out in (ghost, leaver):
            assert all(out not in m.players for m in rnd.matches) and out not in rnd.byes
    await check_deals_and_ratings(app, [final])


async def test_a_double_elimination_with_a_player_who_never_comes_and_one_who_leaves(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    final, ghost, leaver = await with_ghost_and_leaver(app, "double_elimination", 3)
    check_absentees(final, ghost, leaver)
    check_elimination(final)
    await check_deals_and_ratings(app, [final])


async def test_heats_with_a_player_who_never_comes_and_one_who_leaves(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    final, ghost, leaver = await with_ghost_and_leaver(
        app, "heats", 5, heat_size=3, advance_per_heat=2
    )
    check_absentees(final, ghost, leaver)
    standings = [s.player_id for s in final.standings]
    assert standings[0] == final.champion
    await check_deals_and_ratings(app, [final])
