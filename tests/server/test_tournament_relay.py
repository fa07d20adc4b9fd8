"""The notice nodes exchange after a tournament change (server/tournament_relay.py): it
reads back as written, ignores fields a newer node adds, and one that does not read is None
(a gap for the reader) instead of an error."""

from __future__ import annotations

import json

from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.tournament_messages import TournamentRace
from solrace.server.tournament_relay import ChangeNotice


def race_notice() -> TournamentRace:
    return TournamentRace(
        tournament_id="t1",
        match_id="r1-m1",
        round=1,
        race_number=0,
        race_id=RaceId("t1-1"),
        players=[PlayerId("p1"), PlayerId("p2")],
    )


def test_a_notice_reads_back_as_written() -> None:
    notice = ChangeNotice(tournament_id="t1", version=7, node="n1", races=[race_notice()])
    assert ChangeNotice.decode(notice.encode()) == notice


def test_a_field_a_newer_node_adds_is_ignored() -> None:
    raw = json.loads(ChangeNotice(tournament_id="t1", version=2, node="n2").encode())
    raw["added_later"] = {"x": 1}
    decoded = ChangeNotice.decode(json.dumps(raw).encode())
    assert decoded == ChangeNotice(tournament_id="t1", version=2, node="n2")


def test_a_notice_that_does_not_read_is_none() -> None:
    for data in (b"not json", b"[]", b'{"tournament_id": "t1", "version": "seven", "node": 1}'):
        assert ChangeNotice.decode(data) is None
