"""The tournament view's size: the whole view goes to every watcher after every change, so the
field a format may take (`largest_field`) keeps its final view within the budget."""

from __future__ import annotations

import random

import pytest

from solrace.server.protocol.codec import encode
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import PlayerId, TournamentId
from solrace.server.protocol.tournament_messages import TournamentView
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import Phase, TournamentSettings
from solrace.server.protocol.tournament_view import (
    VIEW_BUDGET_BYTES,
    build_view,
    estimated_view_bytes,
    largest_field,
)

CLIENT_FRAME_BYTES = 2**20
ADMIN = PlayerId("p" + "a" * 16)


def final_view_bytes(rules: FormatRules, count: int, *, ties: bool) -> int:
    """Play a whole tournament of `count` players with long ids and names (every race a tie
    of all its racers with `ties`, so matches play all the races they may) and encode its
    final view."""
    rng = random.Random(count)
    settings = TournamentSettings(rules, check_in_required=False, no_show_grace=None)
    t = Tournament.create(
        TournamentId("t000001"),
        "klondike",
        settings,
        admin=ADMIN,
        now=0.0,
        deal_source=lambda r, n: str(10**16 + 100 * r + n),
    )
    players = [PlayerId(f"p{i:016x}") for i in range(count)]
    for player in players:
        t.register(player, now=0.0)
    t.start(ADMIN, now=0.0)
    while t.phase is not Phase.FINISHED:
        for match in t.live_matches():
            assert match.pending_race is not None
            racers = list(match.racing)
            rng.shuffle(racers)
            groups = [racers] if ties else [[p] for p in racers]
            cards = {p: rng.randint(10, 52) for p in racers}
            result = RaceResult.from_groups(groups, cards)
            t.record_race(match.match_id, match.pending_race, result, now=1.0)
    names: dict[str, str] = {p: f"name-{i:019d}" for i, p in enumerate(players)}  # 24 chars
    view = build_view(t, version=1, name="n" * 64, time_limit_s=600, names=names)
    return len(encode(TournamentView(tournament=view)))


@pytest.mark.parametrize(
    ("rules", "ties"),
    [
        (FormatRules(Format.SWISS), False),  # the default limit, 256, is a Swiss's own
        (FormatRules(Format.ROUND_ROBIN), False),  # a round robin grows with the square
        (FormatRules(Format.SINGLE_ELIMINATION, best_of=3), True),  # and sudden deaths
        (FormatRules(Format.DOUBLE_ELIMINATION), True),  # both brackets, grand finals
        (FormatRules(Format.HEATS), False),  # every round seats everyone left
        (FormatRules(Format.HEATS, heat_size=8, advance_per_heat=3, best_of=3), True),
    ],
    ids=lambda v: v.format.value if isinstance(v, FormatRules) else str(v),
)
def test_the_final_view_of_the_largest_field_stays_within_the_budget(
    rules: FormatRules, ties: bool
) -> None:
    count = largest_field(rules, 256)
    size = final_view_bytes(rules, count, ties=ties)
    assert size <= estimated_view_bytes(rules, count) <= VIEW_BUDGET_BYTES < CLIENT_FRAME_BYTES


def test_the_field_is_the_server_s_limit_unless_the_format_outgrows_the_budget() -> None:
    assert largest_field(FormatRules(Format.SWISS), 256) == 256
    assert largest_field(FormatRules(Format.SINGLE_ELIMINATION, best_of=9), 256) == 256
    assert largest_field(FormatRules(Format.SWISS), 40) == 40
    assert 50 < largest_field(FormatRules(Format.ROUND_ROBIN), 256) < 100
    longer = largest_field(FormatRules(Format.ROUND_ROBIN, best_of=3), 256)
    assert longer < largest_field(FormatRules(Format.ROUND_ROBIN), 256)
    assert largest_field(FormatRules(Format.SWISS, swiss_rounds=64), 256) < 256
    assert largest_field(FormatRules(Format.ROUND_ROBIN, best_of=9), 2) == 2
