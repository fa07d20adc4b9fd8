"""Ratings at run time against a real server on loopback: who a finished rated race rates.

A racer who was away when the race ended, without a single move, took no part in it (`gone`
once away past the reconnect grace, `timed_out` if the time limit came first): he is left out of
its rating, and a race with fewer than two racers left, or whose racers all tied, is not rated
at all. A racer who
resigned without a move, or was there when time ran out, did take part.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from solrace.server.app import App
from solrace.server.protocol.codec import encode_raw
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import Error, Progress, RaceFinished, RaceUpdate, Resign
from solrace.server.protocol.records import RaceRecord
from solrace.server.protocol.tournament_messages import (
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    Profile,
)
from tests.integration.conftest import ServerFactory
from tests.integration.helpers import play, start_race
from tests.integration.solver import scoring_line
from tests.integration.wsclient import WAIT_S, Client


def known_deals(app: App) -> App:
    """A rated race's deal is drawn secretly; here from a seeded generator, so that every run
    plays the same deal (drawn at random, 2% of Klondike deals give no card to the foundations
    by turning the stock alone, 0.1-0.2% none within `scoring_line`'s budget)."""
    app.hub.rng = random.Random(0)
    return app


@pytest.fixture
async def app(start_server: ServerFactory) -> App:
    return known_deals(await start_server(grace_s=0.3, spectator_delay_rated_s=0.0))


async def connect(app: App, name: str) -> Client:
    client = await Client.open(f"ws://127.0.0.1:{app.port}")
    await client.hello(name)
    return client


def finishes(app: App) -> asyncio.Queue[RaceRecord]:
    """Each finished race, once every finish hook before this one (ratings included) ran."""
    queue: asyncio.Queue[RaceRecord] = asyncio.Queue()

    async def hook(record: RaceRecord) -> None:
        await queue.put(record)

    app.hub.plug_in(race_finished=hook)
    return queue


async def away_for_good(watcher: Client, race_id: str, player_id: str | None) -> None:
    """The racer's reconnect grace ran out: he is `gone`."""
    await watcher.expect(
        Progress,
        lambda m: (
            m.race_id == race_id
            and m.progress.player_id == player_id
            and m.progress.state == "gone"
        ),
    )


async def score_a_card(app: App, racer: Client, race_id: RaceId) -> None:
    deal_number = app.hub.races[race_id].race.record.game_number  # secret: read on the server
    await play(racer, race_id, scoring_line("klondike", deal_number))


async def test_a_racer_gone_without_a_move_is_left_out_of_the_rating(app: App) -> None:
    finished = finishes(app)
    ann, bob, cid = [await connect(app, name) for name in ("ann", "bob", "cid")]
    await ann.send(GetLeaderboard(game="klondike"))
    assert (await ann.expect(Leaderboard)).entries == []  # kept for a while: see below
    race_id = await start_race(ann, [bob, cid], rated=True, game_number=None)
    await cid.close()  # cid never plays
    await away_for_good(ann, race_id, cid.player_id)
    await score_a_card(app, ann, race_id)
    for player in (ann, bob):  # bob resigns without a move: he took part
        await player.send(Resign(race_id=race_id))
    result = await ann.expect(RaceFinished, lambda m: m.race_id == race_id)
    assert {r.name: r.state for r in result.results} == {
        "ann": "resigned",
        "bob": "resigned",
        "cid": "gone",
    }
    record = await asyncio.wait_for(finished.get(), WAIT_S)
    assert record.race_id == race_id

    rated = {}
    for player in (ann, bob, cid):
        assert player.player_id is not None
        rated[player.player_id] = await app.store.get_ratings(player.player_id)
    assert [r.races for r in rated[ann.player_id]] == [1]
    assert [r.races for r in rated[bob.player_id]] == [1]
    assert rated[cid.player_id] == []  # absent: his rating is not touched
    assert ann.player_id is not None
    recent = await app.store.get_recent_results(ann.player_id, 5)
    assert [(r.race_id, r.rank, r.racers) for r in recent] == [(race_id, 1, 2)]
    # The leaderboard kept before the race is dropped once this node rated one of its game.
    await ann.send(GetLeaderboard(game="klondike"))
    board = await ann.expect(Leaderboard)
    assert [(e.name, e.races) for e in board.entries] == [("ann", 1), ("bob", 1)]
    for player in (ann, bob):
        await player.close()


async def test_a_leaderboard_of_no_game_and_a_profile_of_nobody_are_refused(app: App) -> None:
    """As a race of an unknown game is (a board of nothing used to come back empty, and an
    empty player id to be taken for the sender's own)."""
    ann = await connect(app, "ann")
    for game in ("nope", "", "\x00" * 64):
        await ann.send(GetLeaderboard(game=game))
        refusal = await ann.expect(Error)
        assert (refusal.code, refusal.request) == ("unknown_game", "get_leaderboard")
        assert "klondike" in refusal.message  # it says which games there are
    await ann.send(GetProfile(player_id=""))
    assert (await ann.expect(Error)).code == "unknown_player"
    await ann.send(GetProfile())  # without an id: one's own
    assert (await ann.expect(Profile)).name == "ann"
    await ann.close()


async def test_a_profile_is_found_by_a_name_the_server_registered(app: App) -> None:
    """By name, whatever its case: any player the server registered; a name nobody owns is
    `unknown_player` naming it, and a request naming a player twice is refused."""
    ann, bob = await connect(app, "ann"), await connect(app, "Bob")
    await bob.close()
    for asked in ("Bob", "bob"):
        await ann.send(GetProfile(name=asked))
        found = await ann.expect(Profile)
        assert (found.name, found.player_id) == ("Bob", bob.player_id)
    await ann.send(GetProfile(name="bobby"))
    refusal = await ann.expect(Error)
    assert (refusal.code, refusal.message) == ("unknown_player", "no player named 'bobby'")
    both = {"type": "get_profile", "player_id": bob.player_id, "name": "Bob"}
    await ann.send_raw(encode_raw(both))
    assert (await ann.expect(Error)).code == "invalid_message"
    await ann.close()


async def test_a_race_with_one_racer_who_took_part_is_not_rated(app: App) -> None:
    finished = finishes(app)
    ann, dee = await connect(app, "ann"), await connect(app, "dee")
    race_id = await start_race(ann, [dee], rated=True, game_number=None)
    await dee.close()  # dee never plays
    await away_for_good(ann, race_id, dee.player_id)
    await score_a_card(app, ann, race_id)
    await ann.send(Resign(race_id=race_id))
    await ann.expect(RaceFinished, lambda m: m.race_id == race_id)
    record = await asyncio.wait_for(finished.get(), WAIT_S)
    assert record.race_id == race_id
    for player in (ann, dee):
        assert player.player_id is not None
        assert await app.store.get_ratings(player.player_id) == []  # a win over nobody
    assert await app.store.races_to_rate() == []  # settled: nothing left to rate
    await ann.close()


async def test_a_race_every_racer_tied_is_not_rated(app: App) -> None:
    """Both resign without a card out: they tie. Rated, each got a win and a higher displayed
    rating (the fuzz audit: two accounts resigning at once again and again climb the board)."""
    finished = finishes(app)
    ann, dee = await connect(app, "ann"), await connect(app, "dee")
    race_id = await start_race(ann, [dee], rated=True, game_number=None)
    for player in (ann, dee):
        await player.send(Resign(race_id=race_id))
    await ann.expect(RaceFinished, lambda m: m.race_id == race_id)
    record = await asyncio.wait_for(finished.get(), WAIT_S)
    assert record.race_id == race_id
    for player in (ann, dee):
        assert player.player_id is not None
        assert await app.store.get_ratings(player.player_id) == []
    assert await app.store.races_to_rate() == []  # settled: nothing left to rate
    for player in (ann, dee):
        await player.close()


async def test_a_racer_away_when_a_race_shorter_than_the_grace_times_out_took_no_part(
    start_server: ServerFactory,
) -> None:
    """The time limit comes before the reconnect grace: a racer who never played ends the race
    `timed_out`, not `gone`. Away, he took no part (he used to be rated a loss, and in a
    tournament it was a lost race instead of a no-show); one who was there took part, even
    without a move (bob; ann puts a card out, since a race every racer tied is not rated)."""
    app = known_deals(await start_server(grace_s=600.0))
    finished = finishes(app)
    ann, bob, cid = [await connect(app, name) for name in ("ann", "bob", "cid")]
    # Long enough for ann's card on a busy machine (the line is searched first).
    race_id = await start_race(ann, [bob, cid], rated=True, game_number=None, time_limit_s=8)
    line = scoring_line("klondike", app.hub.races[race_id].race.record.game_number)
    await cid.close()  # cid never plays; ann and bob stay, bob without a move
    await play(ann, race_id, line)
    await ann.expect(
        RaceUpdate,
        lambda m: (
            m.race_id == race_id
            and any(r.player_id == cid.player_id and not r.connected for r in m.race.racers)
        ),
    )
    # The time limit ends it, 8 s after the start: the default 10 s wait, begun just after the
    # start, would leave 2 s for the tick, the finish's writes and their delivery.
    result = await ann.expect(RaceFinished, lambda m: m.race_id == race_id, within=30)
    assert {r.name: r.state for r in result.results} == dict.fromkeys(
        ("ann", "bob", "cid"), "timed_out"
    )
    record = await asyncio.wait_for(finished.get(), WAIT_S)
    assert record.race_id == race_id
    assert {r.name: (r.moves > 0, r.connected) for r in record.racers} == {
        "ann": (True, True),
        "bob": (False, True),
        "cid": (False, False),
    }
    rated = {}
    for name, player in (("ann", ann), ("bob", bob), ("cid", cid)):
        assert player.player_id is not None
        rated[name] = [r.races for r in await app.store.get_ratings(player.player_id)]
    assert rated == {"ann": [1], "bob": [1], "cid": []}
    for player in (ann, bob):
        await player.close()


async def test_a_race_finished_just_before_a_crash_is_rated_at_the_next_start(
    start_server: ServerFactory,
) -> None:
    """The finish is saved, then the node dies before rating the race (here: its rating hook
    taken out, which leaves the store as such a crash does). It used to stay unrated for good;
    the next start on the same data rates it, once."""
    app = known_deals(await start_server())
    app.hub.keeper.remove_finish_hook(app.ratings.race_finished)
    finished = finishes(app)
    ann, bob = await connect(app, "ann"), await connect(app, "bob")
    race_id = await start_race(ann, [bob], rated=True, game_number=None)
    await score_a_card(app, ann, race_id)
    for player in (ann, bob):
        await player.send(Resign(race_id=race_id))
    await asyncio.wait_for(finished.get(), WAIT_S)
    for player in (ann, bob):
        await player.close()
    assert ann.player_id is not None and bob.player_id is not None
    assert await app.store.get_ratings(ann.player_id) == []  # the crash's state
    assert await app.store.races_to_rate() == [race_id]
    await app.stop()

    again = await start_server()  # the same data folder
    for player_id, wins in ((ann.player_id, 1), (bob.player_id, 0)):
        [rating] = await again.store.get_ratings(player_id)
        assert (rating.races, rating.wins) == (1, wins)
    assert await again.store.races_to_rate() == []
    await again.ratings.rate_due()  # a second round finds nothing to do
    assert [r.races for r in await again.store.get_ratings(ann.player_id)] == [1]
