"""Tournaments and ratings end to end: real servers on loopback, bots and raw clients.

Bots play on a single node with the SQLite store (countdown 0, no move delay, short races);
the tournament service ticks on its own timer, the tests only wait for messages.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

import solrace.server.tournament_requests
import solrace.server.tournament_views
from solrace.client.bots import Bot
from solrace.client.connection import Connection
from solrace.client.strategy import make_strategy
from solrace.client.tournament_bots import play_tournament
from solrace.engine import Audience, BoardView, deal, view
from solrace.server.app import App
from solrace.server.protocol import tournament_view
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.messages import (
    Error,
    RaceFinished,
    RaceStarted,
    RaceUpdate,
    Resign,
)
from solrace.server.protocol.records import RaceRecord
from solrace.server.protocol.tournament_messages import (
    CreateTournament,
    GetLeaderboard,
    GetProfile,
    JoinTournament,
    Leaderboard,
    ListTournaments,
    Profile,
    TournamentAdmin,
    TournamentList,
    TournamentModel,
    TournamentRace,
    TournamentView,
    WatchTournament,
)
from solrace.server.tournament_live import Live
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.solver import scoring_line
from tests.integration.wsclient import WAIT_S, Client
from tests.waiting import eventually

TOKEN = "let-me-admin-please"
FAST = {"admin_token": TOKEN, "tournament_tick_s": 0.02, "spectator_delay_rated_s": 0.0}


def url_of(app: App) -> str:
    return f"ws://127.0.0.1:{app.port}"


async def connect(app: App, name: str | None = None, token: str | None = None) -> Client:
    client = await Client.open(url_of(app))
    await client.hello(name, token)
    return client


async def create(admin: Client, fmt: str, **options: Any) -> TournamentModel:
    values: dict[str, Any] = {
        "admin_token": TOKEN,
        "name": f"{fmt}-cup",
        "game": "klondike",
        "format": fmt,
        "time_limit_s": 20,
        "check_in_required": False,
        "no_show_grace_s": None,
    }
    values.update(options)
    await admin.send(CreateTournament(**values))
    return (await admin.expect(TournamentView)).tournament


def admin_act(tournament_id: str, act: str, **fields: Any) -> TournamentAdmin:
    return TournamentAdmin(tournament_id=tournament_id, admin_token=TOKEN, act=act, **fields)  # type: ignore[arg-type]


async def bots_play(
    app: App, fmt: str, count: int, who: str = "", **options: Any
) -> list[TournamentModel]:
    """`count` greedy bots play a tournament to its end (names ending in `who`, so that one
    server may see several): each bot's last view."""
    admin = await connect(app, f"director{who}")
    try:
        view = await create(admin, fmt, **options)
        tid = view.tournament_id
        await admin.send(WatchTournament(tournament_id=tid))
        bots = [
            Bot(
                url_of(app),
                f"bot{i}{who}",
                make_strategy("greedy", seed=i, max_moves=400),
                delay_s=0.0,
            )
            for i in range(count)
        ]
        await asyncio.gather(*(bot.connect() for bot in bots))
        runs = [asyncio.create_task(play_tournament(bot, tid)) for bot in bots]
        await admin.expect(TournamentView, lambda m: len(m.tournament.players) == count)
        await admin.send(admin_act(tid, "start"))
        try:
            return await asyncio.wait_for(asyncio.gather(*runs), 60)
        finally:
            for run in runs:
                run.cancel()
            await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
    finally:
        await admin.close()


async def test_eight_bots_play_a_single_elimination_to_a_champion(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    views = await bots_play(app, "single_elimination", 8)
    final = views[0]
    assert final.phase == "finished" and final.champion is not None
    assert all(v.champion == final.champion for v in views)
    assert [len(r.matches) for r in final.rounds] == [4, 2, 1]
    assert all(r.is_ended and r.game_numbers for r in final.rounds)  # deals revealed
    assert [b.state for b in final.bracket] == ["played"] * 7
    assert final.bracket[-1].winner == final.champion
    assert final.standings[0].player_id == final.champion
    # Every race of a round used the round's deal (the stored races against the view).
    stored = await app.store.get_tournament(final.tournament_id)
    assert stored is not None
    live = Live.from_record(stored, app.tournaments._deal)
    numbers = {rnd.number: rnd.game_numbers for rnd in final.rounds}
    assert len(live.links) >= 7  # a drawn race is played again
    for race_id, link in live.links.items():
        record = await app.store.get_race(race_id)
        assert record is not None
        assert record.game_number == numbers[link.round_number][str(link.race_number)]


async def test_six_bots_play_a_swiss_to_a_champion(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await start_server(**FAST)
    views = await bots_play(app, "swiss", 6)
    final = views[0]
    assert final.phase == "finished" and final.champion == final.standings[0].player_id
    assert [len(r.matches) for r in final.rounds] == [3, 3, 3]
    assert sum(s.points for s in final.standings) == 9  # one point per match
    pairs = [frozenset(m.players) for r in final.rounds for m in r.matches]
    assert len(set(pairs)) == len(pairs)  # no rematch
    assert final.bracket == []
    # The list reads a finished tournament's document once, then answers from memory.
    reads: list[str] = []
    read = app.store.get_tournament

    async def counted(tournament_id: str) -> TournamentRecord | None:
        reads.append(tournament_id)
        return await read(tournament_id)

    monkeypatch.setattr(app.store, "get_tournament", counted)
    lister = await connect(app)
    for _ in range(2):
        await lister.send(ListTournaments())
        [summary] = (await lister.expect(TournamentList)).tournaments
        assert summary.phase == "finished" and summary.champion == final.champion
    assert reads == [final.tournament_id]
    await lister.close()


async def test_the_list_pages_through_the_older_finished_tournaments(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list holds a bounded number of tournaments, the unfinished first, then the latest
    finished; the older finished ones are counted, and a list with `skip_finished` shows
    them, page by page."""
    monkeypatch.setattr(solrace.server.tournament_requests, "TOURNAMENT_LIST_LIMIT", 2)
    app = await start_server(**FAST)
    older = (await bots_play(app, "single_elimination", 2, who="a"))[0]
    newer = (await bots_play(app, "single_elimination", 2, who="b"))[0]
    admin = await connect(app, "director")
    running = await create(admin, "swiss")
    await admin.send(ListTournaments())
    first = await admin.expect(TournamentList)
    assert [s.tournament_id for s in first.tournaments] == [
        running.tournament_id,
        newer.tournament_id,
    ]
    assert first.more == 1
    await admin.send(ListTournaments(skip_finished=1))
    second = await admin.expect(TournamentList)
    assert [s.tournament_id for s in second.tournaments] == [older.tournament_id]
    assert second.more == 0 and second.tournaments[0].phase == "finished"
    await admin.close()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_restart_mid_round_continues_the_tournament(
    start_server: ServerFactory, backend: str, request: pytest.FixtureRequest
) -> None:
    on: dict[str, str] = {}
    if backend == "redis":
        on["store"] = request.getfixturevalue("redis_url")
    first = await start_server(**FAST, **on)
    # Ann must get a card to a foundation to beat Bob (who resigns without a move): on a
    # random deal the greedy bot now and then gets none there (4 in 3,000 deals), and ties
    # with Bob at 0 cards. The round's deal is secret: the test seeds the server's draws.
    first.tournaments.rng = random.Random(1)
    admin = await connect(first, "director")
    ann, bob = await connect(first, "ann"), await connect(first, "bob")
    # A time limit no slow restart outlasts: with the 20 s default, one run under heavy load
    # found the tournament on its third race when the bots were back (two races ended; the
    # time limit is the first deadline that can end a race here, the grace is 60 s).
    view = await create(admin, "single_elimination", time_limit_s=600)
    tid = view.tournament_id
    for player in (ann, bob):
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    notice = await ann.expect(TournamentRace)
    await ann.expect(RaceStarted, lambda m: m.race_id == notice.race_id)
    number = first.hub.races[notice.race_id].race.record.game_number
    assert greedy_cards(number, seed=1, max_moves=400) > 0, f"Ann cannot score on {number}"
    tokens = [c.welcome.token for c in (ann, bob) if c.welcome]
    for each in (admin, ann, bob):
        await each.close()
    await first.stop()

    again = await start_server(**FAST, **on)
    # Ann plays on (greedy); Bob resigns every race at once: a tie goes to Ann, seed 1.
    bots = [
        Bot(
            url_of(again),
            name,
            make_strategy("greedy", seed=1, max_moves=moves),
            delay_s=0.0,
            connection=Connection(url_of(again), token=token),
        )
        for name, token, moves in (("ann", tokens[0], 400), ("bob", tokens[1], 0))
    ]
    await asyncio.gather(*(bot.connect() for bot in bots))
    assert bots[0].state.active_races == [notice.race_id]
    runs = [play_tournament(bot, tid, join=False) for bot in bots]
    try:
        views = await asyncio.wait_for(asyncio.gather(*runs), 60)
    finally:
        await asyncio.gather(*(bot.close() for bot in bots), return_exceptions=True)
    final = views[0]
    assert final.phase == "finished" and final.champion == bots[0].state.player_id
    assert final.rounds[0].matches[0].races[0].placings[0] == [bots[0].state.player_id]


def greedy_cards(number: str, *, seed: int, max_moves: int) -> int:
    """Cards on the foundations when the greedy bot stops on this Klondike deal (its play is
    a function of the deal and the seed: the same moves as a bot on a server)."""
    game = deal("klondike", number)
    strategy = make_strategy("greedy", seed=seed, max_moves=max_moves)
    while True:
        board = view(game, Audience.PLAYER)
        assert isinstance(board, BoardView)
        choice = strategy.choose(board)
        if choice.move is None:
            return game.progress()[0]
        game.play(choice.move)


async def test_ratings_change_after_a_rated_race_and_show_in_a_later_welcome(
    start_server: ServerFactory,
) -> None:
    app = await start_server(**FAST)
    ann, bob = await connect(app, "ann"), await connect(app, "bob")
    assert ann.welcome is not None and ann.welcome.ratings == {}
    app.hub.rng = random.Random(6)  # a rated deal is secret; the test wants a known one
    # Ratings are applied right after the finish is announced, by the session whose resign
    # ended the race: a hook after the ratings' says when they are stored (asking for a
    # profile until it shows them gave up after 100 answers, about 0.25 s, when the other
    # racer's session did the rating and its store write was slower than that).
    rated = asyncio.Event()

    async def after_the_ratings(record: RaceRecord) -> None:
        rated.set()

    app.hub.plug_in(race_finished=after_the_ratings)
    race_id = await start_race(ann, [bob], rated=True, game_number=None)
    deal_number = app.hub.races[race_id].race.record.game_number
    await play(ann, race_id, scoring_line("klondike", deal_number))
    for player in (ann, bob):
        await player.send(Resign(race_id=race_id))
    await bob.expect(RaceFinished)
    await asyncio.wait_for(rated.wait(), WAIT_S)
    token = ann.welcome.token
    await ann.close()

    again = await connect(app, token=token)
    assert again.welcome is not None
    assert again.welcome.ratings["klondike"] > 1000  # the winner's shown rating rose
    await again.send(GetProfile())
    profile = await again.expect(Profile)
    assert [(r.game, r.races, r.wins, r.provisional) for r in profile.ratings] == [
        ("klondike", 1, 1, True)
    ]
    assert [(r.race_id, r.rank, r.racers) for r in profile.recent] == [(race_id, 1, 2)]
    await again.send(GetLeaderboard(game="klondike"))
    board = await again.expect(Leaderboard)
    assert [e.name for e in board.entries] == ["ann", "bob"]
    assert board.entries[0].rating > board.entries[1].rating
    await again.close()
    await bob.close()


async def test_admin_acts_need_the_token_and_are_audited(start_server: ServerFactory) -> None:
    closed = await start_server(store="memory:")  # no admin token configured
    someone = await connect(closed, "someone")
    await someone.send(
        CreateTournament(
            admin_token="guess", name="x", game="klondike", format="swiss", check_in_required=False
        )
    )
    assert (await someone.expect(Error)).code == "not_admin"
    await someone.close()

    app = await start_server(**FAST)
    admin = await connect(app, "director")
    view = await create(admin, "round_robin")
    tid = view.tournament_id
    players = [await connect(app, name) for name in ("ann", "bob", "cat")]
    for player in players:
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    wrong = TournamentAdmin(tournament_id=tid, admin_token="wrong", act="start")
    await players[0].send(wrong)
    assert (await players[0].expect(Error)).code == "not_admin"
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    started = await admin.expect(TournamentView, lambda m: m.tournament.phase == "running")
    live = started.tournament.live
    assert live and all(m.race_id for m in live)  # watchable race ids
    await admin.send(admin_act(tid, "pause"))
    paused = await admin.expect(TournamentView, lambda m: m.tournament.paused)
    assert [a.act for a in paused.tournament.audit] == ["create", "start", "pause"]
    assert paused.tournament.audit[-1].actor == admin.player_id
    await admin.send(admin_act(tid, "forfeit", match_id=live[0].match_id, player_id="nobody"))
    assert (await admin.expect(Error)).code == "unknown_player"
    for each in (admin, *players):
        await each.close()


async def test_a_watcher_that_closes_is_forgotten(start_server: ServerFactory) -> None:
    app = await start_server(**FAST)
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    watchers_of = app.tournaments.views.watchers_of
    fans = [await connect(app, name) for name in ("fan1", "fan2")]
    for fan in fans:
        await fan.send(WatchTournament(tournament_id=tid))
        await fan.expect(TournamentView)
    assert len(watchers_of(tid) or ()) == 2
    await fans[0].close()

    def one_watcher_left() -> bool:
        return len(watchers_of(tid) or ()) == 1

    await eventually(one_watcher_left, within=WAIT_S)
    await fans[1].close()

    def nobody_watches() -> bool:
        return watchers_of(tid) is None

    await eventually(nobody_watches, within=WAIT_S)  # nothing is kept for closed sessions
    await admin.close()


async def test_requests_for_unknown_tournaments_leave_nothing_behind(
    start_server: ServerFactory,
) -> None:
    """Each request naming a tournament made a lock for its id that was never dropped: one
    address within its rate budget grew the node by ~250 bytes a request (fuzz audit)."""
    app = await start_server(**FAST)
    player = await connect(app, "prowler")
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    for number in range(30):
        await player.send(JoinTournament(tournament_id=f"t{number:06x}"))
        refusal = await player.expect(Error, lambda m: m.request == "join_tournament")
        assert refusal.code == "unknown_tournament"
    await player.send(JoinTournament(tournament_id=tid))
    await player.expect(TournamentView, lambda m: m.tournament.tournament_id == tid)
    assert len(app.tournaments._locks) == 0  # held only while a change is made
    for each in (player, admin):
        await each.close()


async def test_a_burst_of_changes_reaches_a_watcher_as_one_view(
    start_server: ServerFactory,
) -> None:
    """A change is pushed at once, the ones right after it wait for the interval
    (`tournament_view_push_s`, here an hour): answers sent after them come first."""
    app = await start_server(**FAST, tournament_view_push_s=3600)
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    fan = await connect(app, "fan")
    await fan.send(WatchTournament(tournament_id=tid))
    assert (await fan.expect(TournamentView)).tournament.players == []
    first, *others = [await connect(app, name) for name in ("ann", "bob", "cid")]
    await first.send(JoinTournament(tournament_id=tid))
    await first.expect(TournamentView)
    pushed = await fan.expect(TournamentView)  # the first change: at once
    assert [p.name for p in pushed.tournament.players] == ["ann"]
    for player in others:
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)  # the requester's answer is not held
    await fan.send(ListTournaments())
    await fan.expect(TournamentList)
    assert not [m for m in fan.received if isinstance(m, TournamentView)][2:]
    for each in (admin, fan, first, *others):
        await each.close()


async def test_a_view_is_built_once_per_version_for_every_watcher(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watches and pushes of one version share one encoded view (a big tournament's view
    costs ~30 ms to build: a client watching in a loop must not make the node build it)."""
    app = await start_server(**FAST)
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    built: list[int] = []

    def counted(tournament: Any, **fields: Any) -> TournamentModel:
        built.append(fields["version"])
        return tournament_view.build_view(tournament, **fields)

    monkeypatch.setattr(solrace.server.tournament_views, "build_view", counted)
    fans = [await connect(app, f"fan{i}") for i in range(3)]
    for fan in fans * 2:  # each watches twice
        await fan.send(WatchTournament(tournament_id=tid))
        await fan.expect(TournamentView)
    assert len(built) == 1
    player = await connect(app, "ann")
    await player.send(JoinTournament(tournament_id=tid))
    await player.expect(TournamentView)  # not a watcher: its own answer, the new version
    for fan in fans:
        view = await fan.expect(TournamentView, lambda v: len(v.tournament.players) == 1)
        assert view.tournament.version == built[-1]
    assert len(built) == 2  # the new version, once for the answer and the three watchers
    for each in (admin, player, *fans):
        await each.close()


async def test_the_newest_view_follows_a_burst(start_server: ServerFactory) -> None:
    """With a short interval the view held back goes out: the last one a watcher gets has
    every change, and views only move forward."""
    app = await start_server(**FAST, tournament_view_push_s=0.05)
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    fan = await connect(app, "fan")
    await fan.send(WatchTournament(tournament_id=tid))
    await fan.expect(TournamentView)
    names = [f"p{i}" for i in range(8)]
    players = [await connect(app, name) for name in names]
    for player in players:
        await player.send(JoinTournament(tournament_id=tid))
    for player in players:
        await player.expect(TournamentView)
    everyone = await fan.expect(TournamentView, lambda v: len(v.tournament.players) == 8)
    assert sorted(p.name for p in everyone.tournament.players) == names
    versions = [m.tournament.version for m in fan.received if isinstance(m, TournamentView)]
    assert versions == sorted(set(versions))
    for each in (admin, fan, *players):
        await each.close()


async def test_a_raw_client_gets_the_create_options_the_cli_refuses_refused_too(
    start_server: ServerFactory,
) -> None:
    """A blank name (a list would show nothing) and an even best-of for a head-to-head match
    (first to a majority of an even count can leave the match undecided) are refused by the
    server itself, not only by the CLI; heats may race an even number of times."""
    app = await start_server(**FAST)
    admin = await connect(app, "director")
    fields: dict[str, Any] = {
        "type": "create_tournament",
        "admin_token": TOKEN,
        "name": "cup",
        "game": "klondike",
        "format": "single_elimination",
    }
    for name in ("", "   "):
        await admin.send_raw(encode_raw({**fields, "name": name}))
        refusal = await admin.expect(Error)
        assert (refusal.code, refusal.request) == ("invalid_message", "create_tournament")
        assert "name: " in refusal.message and "empty or only spaces" in refusal.message
    for fmt, best_of in [
        ("single_elimination", 2),
        ("double_elimination", 4),
        ("swiss", 2),
        ("round_robin", 8),
    ]:
        await admin.send_raw(encode_raw({**fields, "format": fmt, "best_of": best_of}))
        refusal = await admin.expect(Error)
        assert refusal.code == "invalid_settings", (fmt, refusal)
        assert f"best_of {best_of}: a head-to-head match needs an odd number" in refusal.message
    await admin.send(ListTournaments())
    assert (await admin.expect(TournamentList)).tournaments == []  # nothing was created
    heats = await create(admin, "heats", best_of=2)
    assert heats.best_of == 2
    await admin.close()


async def test_heats_larger_than_the_server_s_races_are_refused(
    start_server: ServerFactory,
) -> None:
    """A heat is one race: a heat size past the server's seats is refused, not cut down to
    them behind the creator's back."""
    app = await start_server(**FAST, max_seats=8)
    admin = await connect(app, "director")
    await admin.send(
        CreateTournament(
            admin_token=TOKEN, name="big-heats", game="klondike", format="heats", heat_size=12
        )
    )
    refusal = await admin.expect(Error)
    assert refusal.code == "invalid_settings"
    assert refusal.message == "heat_size 12: this server's races seat at most 8 players"
    assert (await create(admin, "heats", heat_size=8)).format == "heats"  # as many as seats
    await admin.close()


async def test_a_tournament_takes_at_most_the_server_s_player_limit(
    start_server: ServerFactory,
) -> None:
    """`max_tournament_players`: every change pushes the whole view to each watcher, so the
    field is bounded (a 1,024-player Swiss view outgrows the client's 1 MiB frame)."""
    app = await start_server(**FAST, max_tournament_players=3)
    admin = await connect(app, "director")
    for too_many in ({"max_players": 4}, {"min_players": 4}):
        values: dict[str, Any] = {
            "admin_token": TOKEN,
            "name": "big-cup",
            "game": "klondike",
            "format": "swiss",
            **too_many,
        }
        await admin.send(CreateTournament(**values))
        refusal = await admin.expect(Error)
        assert refusal.code == "invalid_settings" and "at most 3 players" in refusal.message
    tid = (await create(admin, "swiss")).tournament_id  # no max_players: the server's limit
    players = [await connect(app, name) for name in ("ann", "bob", "cid", "dee")]
    for player in players[:3]:
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await players[3].send(JoinTournament(tournament_id=tid))
    full = await players[3].expect(Error)
    assert full.code == "wrong_status" and "at most 3 players" in full.message
    await players[0].send(JoinTournament(tournament_id=tid))  # already in: the usual answer
    assert "already registered" in (await players[0].expect(Error)).message
    await admin.send(WatchTournament(tournament_id=tid))
    view = await admin.expect(TournamentView)
    assert len(view.tournament.players) == 3
    for each in (admin, *players):
        await each.close()


async def test_a_race_stopped_by_a_forfeit_is_cancelled_before_the_next_round_s_race(
    start_server: ServerFactory,
) -> None:
    """A forfeit that decides round 1 of a Swiss (three players: one match and a bye) stops
    the match's race and starts round 2: the players of the stopped race hear it cancelled
    before the next round's `tournament_race` (which makes the new race the current one of
    the line mode, so a cancel said after it went unsaid there)."""
    app = await start_server(**FAST)
    admin = await connect(app, "director")
    tid = (await create(admin, "swiss")).tournament_id
    players = {name: await connect(app, name) for name in ("ann", "bob", "cat")}
    for player in players.values():
        await player.send(JoinTournament(tournament_id=tid))
        await player.expect(TournamentView)
    await admin.send(WatchTournament(tournament_id=tid))
    await admin.expect(TournamentView)
    await admin.send(admin_act(tid, "start"))
    started = await admin.expect(TournamentView, lambda m: m.tournament.phase == "running")
    [match] = started.tournament.live
    racers = [p for p in players.values() if p.player_id in match.players]
    for racer in racers:
        await racer.expect(RaceStarted, lambda m: m.race_id == match.race_id)
    await admin.send(admin_act(tid, "forfeit", match_id=match.match_id, player_id=match.players[1]))
    second = await admin.expect(TournamentView, lambda m: len(m.tournament.rounds) == 2)
    [next_match] = second.tournament.rounds[1].matches
    for racer in (r for r in racers if r.player_id in next_match.players):
        notice = await racer.expect(TournamentRace, lambda m: m.round == 2)
        cancelled = await racer.expect(
            RaceUpdate, lambda m: m.race_id == match.race_id and m.race.status == "cancelled"
        )
        assert racer.received.index(cancelled) < racer.received.index(notice)
    for each in (admin, *players.values()):
        await each.close()
