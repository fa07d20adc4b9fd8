"""The service's side of a tournament (`tournament_live.py`): an admin correction's cards on
foundations (kept when not given, checked when given) and the document's note of the rounds
whose deals may still be held."""

from __future__ import annotations

import json

import pytest

from solrace.server.protocol.competition_records import TournamentRecord
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.tournament import Tournament
from solrace.server.protocol.tournament_errors import (
    InvalidResultError,
    MatchId,
    PlayerId,
    TournamentId,
    UnknownMatchError,
)
from solrace.server.protocol.tournament_events import RaceRequested
from solrace.server.protocol.tournament_messages import TournamentAdmin
from solrace.server.protocol.tournament_model import Format, FormatRules, RaceResult
from solrace.server.protocol.tournament_state import TournamentSettings
from solrace.server.protocol.wire import MAX_WIRE_INT
from solrace.server.tournament_live import Live, RaceLink, admin_command
from solrace.server.tournament_views import view_of

ADMIN = PlayerId("admin")
ANN, BOB = PlayerId("ann"), PlayerId("bob")


def deals(round_number: int, race_number: int) -> str:
    return str(10**16 + 1000 * round_number + race_number)


def final_of_three(game: str = "klondike") -> tuple[Live, MatchId]:
    """Ann and Bob in a started best-of-3 final whose first race Ann won 7 cards to 3."""
    settings = TournamentSettings(
        FormatRules(Format.SINGLE_ELIMINATION, best_of=3), check_in_required=False
    )
    t = Tournament.create(
        TournamentId("t1"), game, settings, admin=ADMIN, now=0.0, deal_source=deals
    )
    for player in (ANN, BOB):
        t.register(player, now=1.0)
    (request,) = [e for e in t.start(ADMIN, now=2.0) if isinstance(e, RaceRequested)]
    t.record_race(request.match_id, 1, RaceResult.from_order([ANN, BOB], {ANN: 7, BOB: 3}), now=3.0)
    return Live(t, version=1, name="cup", time_limit_s=60, created_at_ms=0), request.match_id


def correct(live: Live, match_id: MatchId, **fields: object) -> RaceResult:
    """Apply an admin correction (of race 1 unless `race_number` is given) to `live`: race
    1's result after it."""
    message = TournamentAdmin.model_validate(
        {
            "tournament_id": "t1",
            "admin_token": "x",
            "act": "correct_result",
            "match_id": match_id,
            "race_number": 1,
            **fields,
        }
    )
    admin_command(message, {}, now=4.0)(live)
    return live.tournament.find_match(match_id)[1].races[0]


def test_a_correction_without_cards_keeps_the_race_s_recorded_cards() -> None:
    live, match_id = final_of_three()
    result = correct(live, match_id, placings=[[BOB], [ANN]], reason="scorer error")
    assert result.placings == ((BOB,), (ANN,))
    assert dict(result.cards) == {ANN: 7, BOB: 3}  # they feed tie-breaks


def test_cards_given_replace_the_recorded_ones_of_those_players_only() -> None:
    live, match_id = final_of_three()
    result = correct(live, match_id, placings=[[BOB], [ANN]], cards={BOB: 9})
    assert dict(result.cards) == {ANN: 7, BOB: 9}
    result = correct(live, match_id, placings=[[ANN, BOB]], cards={ANN: 0, BOB: 52})
    assert dict(result.cards) == {ANN: 0, BOB: 52}


@pytest.mark.parametrize(
    ("cards", "complaint"),
    [
        ({ANN: 53}, "'ann': 53; a klondike game has 0 to 52"),
        ({ANN: 99}, "0 to 52"),
        ({BOB: MAX_WIRE_INT}, "0 to 52"),  # the largest the wire takes
        ({ANN: -1}, "0 to 52"),
        ({"cid": 3}, "'cid', who is not in the match"),
    ],
)
def test_cards_out_of_the_game_or_of_another_player_are_refused(
    cards: dict[str, int], complaint: str
) -> None:
    live, match_id = final_of_three()
    before = live.document()
    with pytest.raises(InvalidResultError, match=complaint):
        correct(live, match_id, placings=[[BOB], [ANN]], cards=cards)
    assert live.document() == before  # refused before anything changed


@pytest.mark.parametrize("count", [7, 53, -1, MAX_WIRE_INT])
@pytest.mark.parametrize(
    ("other_match", "race_number", "complaint"),
    [("W9-9", 1, "no match 'W9-9'"), (None, 2, "has no recorded race 2")],
)
def test_a_correction_of_a_race_that_does_not_exist_is_refused_as_such_whatever_its_cards(
    count: int, other_match: str | None, race_number: int, complaint: str
) -> None:
    """The race is looked up before the cards are checked: the refusal names the problem
    (`unknown_match`), not cards that would be out of range for any race."""
    live, match_id = final_of_three()
    with pytest.raises(UnknownMatchError, match=complaint):
        correct(
            live,
            MatchId(other_match or match_id),
            race_number=race_number,
            placings=[[BOB], [ANN]],
            cards={ANN: count},
        )


def test_a_two_deck_game_counts_its_104_cards() -> None:
    live, match_id = final_of_three("colorado")
    assert correct(live, match_id, placings=[[ANN], [BOB]], cards={ANN: 104}).cards[ANN] == 104
    with pytest.raises(InvalidResultError, match="0 to 104"):
        correct(live, match_id, placings=[[ANN], [BOB]], cards={ANN: 105})


def test_the_document_notes_the_rounds_whose_deals_may_be_held() -> None:
    live, _ = final_of_three()
    live.held_deals = {1: 5}
    record = live.to_record()
    assert Live.may_hold_deals(record)
    assert Live.from_record(record, deals).held_deals == {1: 5}
    live.held_deals = {}
    assert not Live.may_hold_deals(live.to_record())


def test_a_document_stored_before_the_note_counts_every_ended_round_as_held() -> None:
    live, match_id = final_of_three()
    live.tournament.record_race(match_id, 2, RaceResult.from_order([ANN, BOB]), now=5.0)
    assert live.tournament.rounds[0].is_ended
    document = json.loads(live.document())
    del document["held_deals"]
    old = TournamentRecord(
        tournament_id="t1",
        version=3,
        phase="finished",
        created_at_ms=0,
        document=json.dumps(document),
    )
    assert Live.may_hold_deals(old)
    assert Live.from_record(old, deals).held_deals == {1: 0}


def test_a_refusal_names_the_players_as_the_tournament_knows_them() -> None:
    """The state machine names players by id; the admin reads their names."""
    live, match_id = final_of_three()
    live.names = {ANN: "Ann", BOB: "Bob"}
    with pytest.raises(InvalidResultError) as refused:
        correct(live, match_id, placings=[[ANN], ["adm-9"]])
    assert str(refused.value).endswith("missing ['Bob'], not in the match ['adm-9']")
    with pytest.raises(InvalidResultError, match="'Ann': 99; a klondike game has 0 to 52"):
        correct(live, match_id, placings=[[BOB], [ANN]], cards={ANN: 99})


def test_a_race_number_requested_again_is_the_newer_race_s_after_a_reload() -> None:
    """Two corrections void race 3 and reopen the match, so race 3 is requested again (as the
    tournament's tenth race; its ninth was the voided one). Loaded from the store, the
    tournament still knows the tenth as the match's race, though the document sorts race ids
    as text, "t1-10" before "t1-9"."""
    live, match_id = final_of_three()
    t = live.tournament
    t.record_race(match_id, 2, RaceResult.from_order([BOB, ANN]), now=3.0)
    t.record_race(match_id, 3, RaceResult.from_order([ANN, BOB]), now=3.0)  # Ann's, 2-1
    correct(live, match_id, race_number=2, placings=[[ANN], [BOB]])  # 2-0: race 3 voided
    correct(live, match_id, race_number=2, placings=[[BOB], [ANN]])  # 1-1: race 3 again
    (match,) = t.live_matches()
    assert match.pending_race == 3
    for number, race_number in ((7, 1), (8, 2), (9, 3), (10, 3)):
        live.links[RaceId(f"t1-{number}")] = RaceLink(match_id, 1, race_number)
    live.next_race = 11

    loaded = Live.from_record(live.to_record(), deals)
    assert loaded.pending_race_id(match) == "t1-10"
    assert [m.race_id for m in view_of(loaded).tournament.live] == ["t1-10"]
