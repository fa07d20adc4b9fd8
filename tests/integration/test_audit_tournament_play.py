"""Audit: bots play whole tournaments of every format on a real node (SQLite on disk), with
fields of awkward sizes, and what the node shows is checked against the documented rules:
standings and tie-breaks recomputed from the matches the view lists, the same deal for every
race of a round (the stored races against the round's revealed numbers), and ratings,
leaderboard and profiles against the stored races the tournament played."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from solrace.server.app import App
from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.race import absent_racers, placings_of
from solrace.server.protocol.records import RaceRecord, RaceStatus
from solrace.server.protocol.tournament_messages import (
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    MatchModel,
    Profile,
    TournamentModel,
)
from solrace.server.tournament_live import Live
from tests.integration.conftest import ServerFactory
from tests.integration.test_tournaments import FAST, bots_play, connect


def points_of(view: TournamentModel) -> dict[PlayerId, float]:
    """Swiss and round-robin points from the matches: win 1, draw 1/2, bye 1."""
    points = {p: 0.0 for p in view.seeds}
    for rnd in view.rounds:
        for player in rnd.byes:
            points[player] += 1.0
        for match in rnd.matches:
            for player in match.players:
                if match.winner == player:
                    points[player] += 1.0
                elif match.winner is None and not match.forfeited:
                    points[player] += 0.5
    return points


def cards_of(view: TournamentModel) -> dict[PlayerId, int]:
    cards = {p: 0 for p in view.seeds}
    for rnd in view.rounds:
        for match in rnd.matches:
            for race in match.races:
                for player, count in race.cards.items():
                    cards[player] += count
    return cards


def tiebreak_of(view: TournamentModel, points: dict[PlayerId, float]) -> dict[PlayerId, float]:
    """Buchholz (Swiss: opponents' points) or Sonneborn-Berger (round robin: beaten
    opponents' points plus half the drawn ones')."""
    score = {p: 0.0 for p in view.seeds}
    for rnd in view.rounds:
        for match in rnd.matches:
            for player in match.players:
                for other in match.players:
                    if other == player:
                        continue
                    if view.format == "swiss" or match.winner == player:
                        score[player] += points[other]
                    elif match.winner is None and not match.forfeited:
                        score[player] += points[other] / 2
    return score


def check_scored_standings(view: TournamentModel) -> None:
    points = points_of(view)
    tiebreak = tiebreak_of(view, points)
    cards = cards_of(view)
    seed = {p: i for i, p in enumerate(view.seeds)}
    expected = sorted(view.seeds, key=lambda p: (-points[p], -tiebreak[p], -cards[p], seed[p]))
    assert [s.player_id for s in view.standings] == expected
    for line in view.standings:
        assert line.points == points[line.player_id]
        assert line.tiebreak == pytest.approx(tiebreak[line.player_id])
        assert line.cards == cards[line.player_id]
    assert view.champion == expected[0]


def lost_matches(view: TournamentModel) -> Counter[PlayerId]:
    """Matches each player lost, but the third-place match (played by two who are out)."""
    lost: Counter[PlayerId] = Counter()
    for rnd in view.rounds:
        for match in rnd.matches:
            if match.match_id == "3P":
                continue
            for player in match.players:
                if match.winner is not None and match.winner != player:
                    lost[player] += 1
    return lost


def check_elimination(view: TournamentModel) -> None:
    lost = lost_matches(view)
    champion = view.champion
    assert champion is not None and view.standings[0].player_id == champion
    most = 1 if view.format == "single_elimination" else 2
    if view.format == "single_elimination":
        assert lost[champion] == 0
    else:
        assert lost[champion] <= 1
    # Everyone but the champion is out, after exactly the losses the format allows; without
    # a bracket reset, a grand final the losers-bracket champion wins puts the other out at
    # his first loss.
    grand_final = [m for r in view.rounds for m in r.matches if m.match_id == "GF"]
    decided_once = [m for m in grand_final if m.winner is not None and lost[m.winner] == 1]
    for player in view.seeds:
        if player == champion:
            continue
        if player in view.dropped:  # out when he left
            assert lost[player] <= most
        elif any(player in m.players for m in decided_once) and not any(
            m.match_id == "GF2" for r in view.rounds for m in r.matches
        ):
            assert lost[player] == 1, (player, lost)
        else:
            assert lost[player] == most, (player, lost)
    assert [s.is_eliminated for s in view.standings] == [False] + [True] * (len(view.seeds) - 1)
    third = [m for r in view.rounds for m in r.matches if m.match_id == "3P"]
    for match in third:  # its winner is third, its loser fourth
        assert [s.player_id for s in view.standings[2:4]] == match.ranking
        assert [s.rank for s in view.standings[:4]] == [1, 2, 3, 4]
    # Nobody plays two matches of one round.
    for rnd in view.rounds:
        seated = [p for m in rnd.matches for p in m.players]
        assert len(seated) == len(set(seated))


def check_heats(view: TournamentModel, heat_size: int, advance: int) -> None:
    field = list(view.seeds)
    for rnd in view.rounds:
        seated = [p for m in rnd.matches for p in m.players]
        assert sorted([*seated, *rnd.byes]) == sorted(field)
        assert all(2 <= len(m.players) <= heat_size for m in rnd.matches)
        if rnd.matches[-1].match_id.endswith("-F"):
            final: MatchModel = rnd.matches[-1]
            assert view.champion == final.ranking[0] == view.standings[0].player_id
            assert [s.player_id for s in view.standings[: len(final.ranking)]] == final.ranking
            break
        through = list(rnd.byes)
        for match in rnd.matches:
            through += match.ranking[: min(advance, len(match.players) - 1)]
        field = [p for p in view.seeds if p in through]
    else:
        raise AssertionError("no final heat")


async def tournament_races(app: App, view: TournamentModel) -> list[tuple[int, int, RaceRecord]]:
    """Every race the tournament requested: (round, race number, stored record)."""
    stored = await app.store.get_tournament(view.tournament_id)
    assert stored is not None
    live = Live.from_record(stored, app.tournaments._deal)
    races = []
    for race_id, link in live.links.items():
        record = await app.store.get_race(race_id)
        assert record is not None
        races.append((link.round_number, link.race_number, record))
    return races


async def check_deals_and_ratings(app: App, views: list[TournamentModel]) -> None:
    """Each race was dealt its round's number for its race number; each player's klondike
    rating counts exactly the rated races he took part in that someone won over someone, and
    the leaderboard and profiles say the same."""
    races: Counter[PlayerId] = Counter()
    wins: Counter[PlayerId] = Counter()
    recent: dict[PlayerId, set[str]] = defaultdict(set)
    for view in views:
        numbers = {rnd.number: rnd.game_numbers for rnd in view.rounds}
        for round_number, race_number, record in await tournament_races(app, view):
            if record.status is not RaceStatus.FINISHED:
                assert record.status is RaceStatus.CANCELLED
                continue
            assert record.game_number == numbers[round_number][str(race_number)]
            assert record.rated
            absent = absent_racers(record)
            groups = [[p for p in g if p not in absent] for g in placings_of(record)]
            groups = [g for g in groups if g]
            if len(groups) < 2:
                continue
            for group in groups:
                for player in group:
                    races[player] += 1
                    recent[player].add(record.race_id)
            for player in groups[0]:
                wins[player] += 1
    watcher = await connect(app, "auditor")
    try:
        await watcher.send(GetLeaderboard(game="klondike", limit=100))
        board = await watcher.expect(Leaderboard)
        assert {e.player_id: (e.races, e.wins) for e in board.entries} == {
            p: (races[p], wins[p]) for p in races
        }
        shown = [e.rating for e in board.entries]
        established = [e.provisional for e in board.entries]
        assert established == sorted(established)  # established players first
        for provisional in (False, True):
            part = [e.rating for e in board.entries if e.provisional is provisional]
            assert part == sorted(part, reverse=True)
        for entry in board.entries:
            await watcher.send(GetProfile(player_id=entry.player_id))
            profile = await watcher.expect(Profile)
            [rating] = profile.ratings
            assert (rating.rating, rating.races, rating.wins) == (
                entry.rating,
                entry.races,
                entry.wins,
            )
            assert rating.provisional is entry.provisional is (entry.races < 10)
            assert {r.race_id for r in profile.recent} <= recent[entry.player_id]
            assert len(profile.recent) == min(10, races[entry.player_id])
        assert len(shown) == len(races)
    finally:
        await watcher.close()


SCORED = [
    ("swiss", 5, {"best_of": 3}),
    ("swiss", 7, {"swiss_rounds": 6}),
    ("round_robin", 5, {}),
]


@pytest.mark.parametrize(("fmt", "count", "options"), SCORED)
async def test_swiss_and_round_robin_standings_follow_the_documented_tie_breaks(
    start_server: ServerFactory, fmt: str, count: int, options: dict[str, Any]
) -> None:
    app = await start_server(**FAST)
    views = await bots_play(app, fmt, count, **options)
    final = views[0]
    assert final.phase == "finished" and all(v.champion == final.champion for v in views)
    check_scored_standings(final)
    if fmt == "swiss":
        pairs = [frozenset(m.players) for r in final.rounds for m in r.matches]
        assert len(set(pairs)) == len(pairs)  # no rematch
        byes = [p for r in final.rounds for p in r.byes]
        assert len(byes) == len(set(byes)) == (len(final.rounds) if count % 2 else 0)
    else:
        pairs = [frozenset(m.players) for r in final.rounds for m in r.matches]
        assert sorted(map(sorted, pairs)) == sorted(
            sorted([a, b]) for i, a in enumerate(final.seeds) for b in final.seeds[i + 1 :]
        )
    await check_deals_and_ratings(app, [final])


ELIMINATION = [
    ("single_elimination", 5, {"best_of": 3, "third_place_match": True}),
    ("double_elimination", 3, {}),
    ("double_elimination", 7, {"bracket_reset": False}),
]


@pytest.mark.parametrize(("fmt", "count", "options"), ELIMINATION)
async def test_elimination_brackets_put_out_everyone_but_the_champion(
    start_server: ServerFactory, fmt: str, count: int, options: dict[str, Any]
) -> None:
    app = await start_server(**FAST)
    views = await bots_play(app, fmt, count, **options)
    final = views[0]
    assert final.phase == "finished" and all(v.champion == final.champion for v in views)
    check_elimination(final)
    assert final.bracket[-1].state in ("played", "empty")
    await check_deals_and_ratings(app, [final])


HEATS = [(3, 2, 1, 2), (17, 4, 2, 1)]


@pytest.mark.parametrize(("count", "heat_size", "advance", "best_of"), HEATS)
async def test_heats_send_the_top_of_each_heat_through_to_a_final(
    start_server: ServerFactory, count: int, heat_size: int, advance: int, best_of: int
) -> None:
    app = await start_server(**FAST)
    views = await bots_play(
        app, "heats", count, heat_size=heat_size, advance_per_heat=advance, best_of=best_of
    )
    final = views[0]
    assert final.phase == "finished" and all(v.champion == final.champion for v in views)
    check_heats(final, heat_size, advance)
    await check_deals_and_ratings(app, [final])
