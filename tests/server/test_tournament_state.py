"""The stored tournament document: documents written by earlier code load and store unchanged.

`data/stored_tournaments.json` holds, as literal data, the `Tournament.to_dict()` of each
scenario below as the hand-written serializers (before commit "Tournament state serialized
from one declaration") wrote it. It is never regenerated: a change of the stored shape needs a
new `SCHEMA_VERSION` and a migration, and these documents must keep loading.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import MatchId, PlayerId, TournamentId
from solrace.server.protocol.tournament_events import (
    GameNumberNeeded,
    RaceRequested,
    TournamentEvent,
)
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import TournamentSettings

STORED = Path(__file__).parent / "data" / "stored_tournaments.json"
ADMIN = PlayerId("admin")


def deals(round_number: int, race_number: int) -> str:
    return str(10**16 + 1000 * round_number + race_number)


def players(count: int) -> list[PlayerId]:
    return [PlayerId(f"p{i}") for i in range(1, count + 1)]


def create(
    rules: FormatRules, *, deal_source: Callable[[int, int], str] | None = deals, **kw: Any
) -> Tournament:
    settings = TournamentSettings(rules, **kw)
    return Tournament.create(
        TournamentId("t-" + rules.format.value),
        "klondike",
        settings,
        admin=ADMIN,
        now=1_700_000_000.25,
        deal_source=deal_source,
    )


def checked_in(rules: FormatRules, count: int, **kw: Any) -> Tournament:
    t = create(rules, **kw)
    for p in players(count):
        t.register(p, now=1_700_000_001.5)
    t.open_check_in(ADMIN, now=1_700_000_002.0)
    for p in players(count):
        t.check_in(p, now=1_700_000_003.0)
    return t


def requests(events: list[TournamentEvent]) -> list[RaceRequested]:
    return [e for e in events if isinstance(e, RaceRequested)]


def by_seed(request: RaceRequested) -> list[PlayerId]:
    return sorted(request.players, key=lambda p: int(p[1:]))


def cards_for(order: list[PlayerId]) -> dict[PlayerId, int]:
    return {p: 52 - 9 * i for i, p in enumerate(order)}


def play_out(t: Tournament, events: list[TournamentEvent], now: float) -> float:
    """Answer every requested race (better seed first, except p2 beats p1) until none is left."""
    queue = requests(events)
    while queue:
        request = queue.pop(0)
        now += 1.5
        order = by_seed(request)
        if order[:2] == ["p1", "p2"]:
            order[:2] = order[1::-1]
        result = RaceResult.from_order(order, cards_for(order))
        queue += requests(t.record_race(request.match_id, request.race_number, result, now=now))
    return now


# --- the scenarios --------------------------------------------------------------------------


def registration() -> Tournament:
    t = create(
        FormatRules(Format.SWISS, best_of=3, swiss_rounds=3),
        min_players=3,
        max_players=8,
        check_in_required=False,
        no_show_grace=None,
        rated=False,
    )
    for p in players(4):
        t.register(p, now=1_700_000_010.0)
    t.unregister(PlayerId("p2"), now=1_700_000_011.0)
    return t


def check_in() -> Tournament:
    t = create(
        FormatRules(Format.SINGLE_ELIMINATION, third_place_match=True, bracket_reset=False),
        no_show_grace=90.5,
    )
    for p in players(5):
        t.register(p, now=1_700_000_010.0)
    t.open_check_in(ADMIN, now=1_700_000_020.0)
    for p in (PlayerId("p4"), PlayerId("p1"), PlayerId("p3")):
        t.check_in(p, now=1_700_000_030.0)
    return t


def swiss_running() -> Tournament:
    """Odd field (byes), best of 3, a drop-out, a correction, a forfeit, a race left, paused."""
    t = checked_in(FormatRules(Format.SWISS, best_of=3, swiss_rounds=3), 5, no_show_grace=30.0)
    events = t.start(
        ADMIN, now=1_700_000_100.0, ratings={p: 2000.0 - i for i, p in enumerate(players(5))}
    )
    one, two = requests(events)
    t.report_present(one.players[0], now=1_700_000_101.0)
    t.record_race(one.match_id, 1, RaceResult.from_order(by_seed(one)), now=1_700_000_102.0)
    t.record_race(one.match_id, 2, RaceResult.from_order(by_seed(one)), now=1_700_000_103.0)
    t.drop(two.players[1], actor=ADMIN, now=1_700_000_104.0)  # round 2 starts
    rnd = t.rounds[-1]
    t.pause(ADMIN, now=1_700_000_105.0)
    t.resume(ADMIN, now=1_700_000_106.0)
    first = next(iter(rnd.matches.values()))
    order = list(first.players)
    t.record_race(
        first.match_id, 1, RaceResult.from_order(order, cards_for(order)), now=1_700_000_107.0
    )
    upset = order[::-1]
    t.correct_result(
        ADMIN, first.match_id, 1, RaceResult.from_order(upset), now=1_700_000_108.0, reason="x"
    )
    t.report_present(order[0], now=1_700_000_109.0)
    t.forfeit(ADMIN, MatchId("R2-2"), PlayerId("p5"), now=1_700_000_110.0)
    t.pause(ADMIN, now=1_700_000_111.0)
    return t


def heats_without_deals() -> Tournament:
    """No deal source (asked race numbers, deals given out of order), ties, forfeits."""
    t = checked_in(
        FormatRules(Format.HEATS, best_of=2, heat_size=3, advance_per_heat=1), 7, deal_source=None
    )
    events = t.start(ADMIN, now=1_700_000_100.0)
    assert [e for e in events if isinstance(e, GameNumberNeeded)]
    t.provide_game_number(1, 2, "ms2147483648", now=1_700_000_101.0)
    events = t.provide_game_number(1, 1, "32000", now=1_700_000_102.0)
    heat = requests(events)[0]
    a, b, c = heat.players
    tied = RaceResult.from_groups([[b, a], [c]], {a: 40, b: 40, c: 0})
    t.record_race(heat.match_id, 1, tied, now=1_700_000_103.0)
    t.tick(now=1_700_000_500.0)  # every racer of the other heats is a no-show
    return t


def double_elimination_finished() -> Tournament:
    t = checked_in(FormatRules(Format.DOUBLE_ELIMINATION, bracket_reset=True), 4)
    events = t.start(ADMIN, now=1_700_000_100.0)
    play_out(t, events, 1_700_000_100.0)
    return t


def round_robin_finished_with_draws() -> Tournament:
    t = checked_in(FormatRules(Format.ROUND_ROBIN), 3, rated=False)
    events = t.start(ADMIN, now=1_700_000_100.0)
    now = 1_700_000_100.0
    queue = requests(events)
    while queue:
        request = queue.pop(0)
        now += 0.125
        order = by_seed(request)
        result = RaceResult.from_order(order, cards_for(order))
        if request.round_number != 2:
            result = RaceResult.from_groups([order], cards_for(order))  # a tie: a draw
        queue += requests(t.record_race(request.match_id, request.race_number, result, now=now))
    return t


SCENARIOS: dict[str, Callable[[], Tournament]] = {
    "registration": registration,
    "check_in": check_in,
    "swiss_running": swiss_running,
    "heats_without_deals": heats_without_deals,
    "double_elimination_finished": double_elimination_finished,
    "round_robin_finished_with_draws": round_robin_finished_with_draws,
}


def stored() -> dict[str, Any]:
    documents: dict[str, Any] = json.loads(STORED.read_text(encoding="utf-8"))
    return documents


def structure(value: Any) -> Any:
    """`value` as nested tuples naming every type, so a list is not a tuple, nor "1" a 1."""
    kind = type(value).__name__
    if isinstance(value, enum.Enum) or value is None:
        return (kind, value)
    if isinstance(value, bool | int | float | str):
        return (kind, value)
    if isinstance(value, dict):
        return (kind, sorted((structure(k), structure(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return (kind, sorted(structure(x) for x in value))
    if isinstance(value, list | tuple):
        return (kind, [structure(x) for x in value])
    if dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):
        state = {k: v for k, v in vars(value).items() if not k.startswith("_")}
        return (kind, sorted((k, structure(v)) for k, v in state.items()))
    raise TypeError(f"no structure for {value!r}")


# --- the tests ------------------------------------------------------------------------------


def test_every_scenario_has_a_stored_document() -> None:
    assert sorted(stored()) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_stored_document_loads_and_stores_unchanged(name: str) -> None:
    document = stored()[name]
    loaded = Tournament.from_dict(document, deal_source=deals)
    again = loaded.to_dict()
    assert again == document
    assert json.dumps(again) == json.dumps(document)  # key order, 1.0 vs 1, lists


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_stored_document_loads_as_the_tournament_that_wrote_it(name: str) -> None:
    live = SCENARIOS[name]()
    assert json.dumps(live.to_dict()) == json.dumps(stored()[name])
    loaded = Tournament.from_dict(stored()[name], deal_source=deals)
    assert structure(loaded) == structure(live)


# --- malformed documents fail, whole ------------------------------------------------------


DATA_MAPPINGS = {"game_numbers", "cards"}
"""Stored mappings whose keys are data (race numbers, players), not fields."""


def records(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The path of every stored record (a dataclass's fields) in a document."""
    found: list[tuple[str | int, ...]] = []
    if isinstance(value, dict):
        found.append(path)
        for key, item in value.items():
            if key not in DATA_MAPPINGS:
                found += records(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += records(item, (*path, i))
    return found


def at(document: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_document_missing_any_field_anywhere_is_refused(name: str) -> None:
    document = stored()[name]
    checked = 0
    for path in records(document):
        for key in at(document, path):
            if path == () and key == "schema":
                continue
            broken = json.loads(json.dumps(document))
            del at(broken, path)[key]
            with pytest.raises(ValidationError, match=f"missing {key}"):
                Tournament.from_dict(broken)
            checked += 1
    assert checked >= 13


def edit(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(stored()["swiss_running"]))
    change(document)
    return document


def match_of(document: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = document["rounds"][1]["matches"][0]
    return first


@pytest.mark.parametrize(
    "document",
    [
        edit(lambda d: d.update(phase="paused")),
        edit(lambda d: d.update(created_at="yesterday")),
        edit(lambda d: d.update(checked_in="p1")),
        edit(lambda d: d.update(is_paused="perhaps")),
        edit(lambda d: d["settings"]["rules"].update(format="ladder")),
        edit(lambda d: d["settings"].update(no_show_grace=[30])),
        edit(lambda d: d["rounds"][0].update(game_numbers={"first": "1"})),
        edit(lambda d: d["rounds"][0].update(asked=[1.5])),
        edit(lambda d: d["rounds"][0]["plan"].update(byes=[None])),
        edit(lambda d: d["rounds"][1]["matches"].append(match_of(d))),  # an id twice
        edit(lambda d: d["rounds"][1]["matches"].append("R2-3")),
        edit(lambda d: match_of(d).update(players=7)),
        edit(lambda d: match_of(d).update(pending_race=2.5)),
        edit(lambda d: match_of(d)["races"][0].update(placings=[["p2", 2]])),
        edit(lambda d: match_of(d)["races"][0].update(cards={"p2": -0.5})),
        edit(lambda d: d["audit"].append({"at": 1.0, "actor": "admin", "act": 3, "detail": ""})),
        edit(lambda d: d.update(rounds={})),
    ],
)
def test_a_document_with_a_wrong_value_is_refused(document: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Tournament.from_dict(document)
