"""Ratings: openskill Plackett-Luce updates from finishing orders, display and leaderboard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solrace.server.protocol.competition_records import RatingRecord
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.ratings import (
    DEFAULT_CONFIG,
    Rating,
    RatingConfig,
    build_rating_update,
    leaderboard,
    rate_order,
    rate_race,
    to_rating,
)
from solrace.server.protocol.tournament_errors import PlayerId, RatingError


def ids(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def test_new_players_start_at_the_offset_and_are_provisional() -> None:
    fresh = DEFAULT_CONFIG.new_rating()
    assert fresh.display() == 1000  # mu - 3 sigma is 0 for openskill's defaults
    assert fresh.is_provisional()
    assert not Rating(25.0, 2.0, races=10).is_provisional()
    assert Rating(25.0, 2.0, races=3).is_provisional(RatingConfig(provisional_races=3)) is False


def test_winner_goes_up_and_loser_down() -> None:
    a, b = ids(2)
    changes = rate_order({}, [a, b])
    assert [c.player for c in changes] == [a, b]
    win, loss = changes
    assert win.after.mu > win.before.mu and loss.after.mu < loss.before.mu
    assert win.after.sigma < win.before.sigma + DEFAULT_CONFIG.tau
    assert (win.after.races, win.after.wins, loss.after.races, loss.after.wins) == (1, 1, 1, 0)
    assert win.after.display() > win.before.display() > loss.after.display()


def test_an_upset_moves_ratings_more_than_an_expected_result() -> None:
    strong, weak = ids(2)
    table = {strong: Rating(32.0, 3.0, 20, 15), weak: Rating(20.0, 3.0, 20, 5)}
    expected = rate_order(table, [strong, weak])[0]
    upset = rate_order(table, [weak, strong])[1]
    gain = expected.after.mu - expected.before.mu
    drop = upset.before.mu - upset.after.mu
    assert 0 < gain < drop


def test_n_player_order_ranks_everyone_in_one_update() -> None:
    order = ids(6)
    changes = rate_order({}, order)
    mus = [c.after.mu for c in changes]
    assert mus == sorted(mus, reverse=True) and len(set(mus)) == 6
    assert [c.place for c in changes] == [1, 2, 3, 4, 5, 6]


def test_tied_players_share_a_place_and_get_the_same_update() -> None:
    a, b, c, d = ids(4)
    changes = {ch.player: ch for ch in rate_race({}, [[a], [b, c], [d]])}
    assert changes[b].after == changes[c].after
    assert changes[b].place == changes[c].place == 2
    assert changes[a].after.mu > changes[b].after.mu > changes[d].after.mu
    everyone_tied = rate_race({}, [[a, b]])
    assert everyone_tied[0].after.mu == pytest.approx(DEFAULT_CONFIG.mu)
    assert all(ch.after.wins == 1 for ch in everyone_tied)  # a shared first place is a win


def test_existing_ratings_are_used_and_not_modified() -> None:
    a, b = ids(2)
    table = {a: Rating(30.0, 4.0, 12, 8)}
    snapshot = dict(table)
    changes = rate_order(table, [b, a])
    assert table == snapshot
    assert changes[1].before == Rating(30.0, 4.0, 12, 8)
    assert changes[0].before == DEFAULT_CONFIG.new_rating()
    assert rate_order(table, [b, a]) == changes  # deterministic


def test_bad_orders_are_refused() -> None:
    a, b = ids(2)
    with pytest.raises(RatingError, match="twice"):
        rate_order({}, [a, a])
    with pytest.raises(RatingError, match="at least two"):
        rate_order({}, [a])
    with pytest.raises(RatingError, match="empty group"):
        rate_race({}, [[a], [], [b]])


def test_a_rating_update_holds_each_racers_before_after_and_recent_result() -> None:
    a, b, c = ids(3)
    stored = {b: RatingRecord(player_id=b, game="klondike", mu=30.0, sigma=4.0, races=12, wins=8)}
    placings = [[a, b], [c]]
    update = build_rating_update(RaceId("r7"), "klondike", placings, stored, at_ms=5_000)
    expected = rate_race({b: to_rating(stored[b])}, placings)
    assert (update.race_id, update.game) == ("r7", "klondike")
    assert [ch.player_id for ch in update.changes] == [a, b, c]  # finishing order
    for change, rated in zip(update.changes, expected, strict=True):
        assert change.before == stored.get(change.player_id)  # None: a new racer
        assert to_rating(change.after) == rated.after
        assert (change.after.game, change.after.updated_at_ms) == ("klondike", 5_000)
        result = change.result
        assert (result.race_id, result.game, result.at_ms, result.racers) == (
            "r7",
            "klondike",
            5_000,
            3,
        )
        assert result.rank == rated.place
        assert result.rating_before == rated.before.display()
        assert result.rating_after == rated.after.display()
    assert [ch.result.rank for ch in update.changes] == [1, 1, 3]
    assert build_rating_update(RaceId("r7"), "klondike", placings, stored, 5_000) == update


def test_a_rating_update_rates_and_shows_with_one_config() -> None:
    """New racers start from the service's config, not openskill's defaults, and are shown by
    it: the model and the display never disagree about where a rating starts."""
    config = RatingConfig(mu=40.0, sigma=5.0, display_offset=0.0)
    a, b = ids(2)
    update = build_rating_update(RaceId("r8"), "klondike", [[a], [b]], {}, 1, config)
    fresh = config.new_rating()
    assert all(ch.result.rating_before == fresh.display(config) for ch in update.changes)
    assert update.changes[0].after.mu > fresh.mu > update.changes[1].after.mu


def test_leaderboard_puts_provisional_players_last_and_breaks_ties() -> None:
    table = {
        PlayerId("veteran"): Rating(30.0, 2.0, 40, 20),
        PlayerId("rookie"): Rating(40.0, 2.0, 3, 3),
        PlayerId("steady-b"): Rating(27.0, 2.0, 15, 5),
        PlayerId("steady-a"): Rating(27.0, 2.0, 15, 5),
    }
    board = leaderboard(table)
    assert [e.player for e in board] == ["veteran", "steady-a", "steady-b", "rookie"]
    assert [e.rank for e in board] == [1, 2, 3, 4]
    assert board[-1].is_provisional and board[0].rating == Rating(30.0, 2.0).display()
    established = leaderboard(table, include_provisional=False, limit=2)
    assert [e.player for e in established] == ["veteran", "steady-a"]


def test_rating_round_trips_through_a_dict() -> None:
    rating = rate_order({}, ids(3))[0].after
    assert Rating.from_dict(rating.to_dict()) == rating


@settings(max_examples=50, deadline=None)
@given(size=st.integers(2, 10), seed=st.integers(0, 1000))
def test_many_races_separate_a_consistent_winner(size: int, seed: int) -> None:
    players = ids(size)
    table: dict[PlayerId, Rating] = {}
    for race in range(12):
        rotation = (seed + race) % (size - 1)
        rest = players[1:]
        order = [players[0], *rest[rotation:], *rest[:rotation]]  # p1 always wins
        table.update({c.player: c.after for c in rate_order(table, order)})
    board = leaderboard(table)
    assert board[0].player == "p1" and not board[0].is_provisional
    assert all(r.races == 12 for r in table.values())
