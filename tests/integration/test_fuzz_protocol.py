"""The protocol fuzzer's core (`bench/fuzz.py`) for a fixed seed and number of steps: a real
node (`solrace serve` in a subprocess, SQLite on disk), ten clients sending random messages
of every kind, schema-invalid ones and garbage beside an honest race, without rate limits
then (a new node on the same data) with the default ones, then a restart; every invariant the
fuzzer checks must hold (the violations are the assertion's message). Once on one node on
SQLite, once on two nodes on one redis-server."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz import Heard, Ledger, Phase, check_acks, check_frames, check_log, fuzz, report

from solrace.server.protocol.codec import encode
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import Error
from solrace.server.protocol.records import RaceRecord, RaceStatus


async def test_a_seeded_fuzz_run_breaks_no_invariant(tmp_path: Path) -> None:
    phases = [Phase("open", steps=150), Phase("default", steps=25)]
    ledger = await fuzz(tmp_path, phases, clients=10, seed=11)
    assert not ledger.violations, report(ledger)
    # It did exercise the node: moves acked and read back from the store, refusals of each
    # kind of bad input, and closes for the garbage.
    assert ledger.honest_acks >= 20
    assert len(ledger.acks) >= ledger.honest_acks
    assert ledger.answers["error invalid_message"] > 0
    assert ledger.answers["move_rejected illegal_move"] + ledger.answers["error unknown_race"] > 0
    assert ledger.closes["1007"] > 0


@pytest.mark.redis
@pytest.mark.usefixtures("redis_binary")
async def test_a_seeded_fuzz_run_on_two_nodes_breaks_no_invariant(tmp_path: Path) -> None:
    """The same on two nodes sharing one redis-server (`--nodes 2`): the clients and their
    second connections spread over both, the honest pair one on each, the acked moves read
    back from Redis."""
    phases = [Phase("open", steps=100), Phase("default", steps=20)]
    ledger = await fuzz(tmp_path, phases, clients=10, seed=12, nodes=2)
    assert not ledger.violations, report(ledger)
    assert ledger.honest_acks >= 20
    assert len(ledger.acks) >= ledger.honest_acks
    assert ledger.closes["4003"] > 0  # a second connection (mostly on the other node) took over


def test_the_checks_report_what_breaks_an_invariant() -> None:
    """The fuzzer's checks on what it saw: a game number in a frame before its reveal, an
    acked move the store lacks, an ERROR line in the log."""
    number = "12345678901234567"
    race = RaceRecord(
        race_id=RaceId("r0123456789"),
        game="klondike",
        seats=2,
        time_limit_s=600,
        rated=False,
        invite_code=None,
        game_number=number,
        salt="s",
        commitment="c",
        creator=PlayerId("p0123456789abcdef"),
        status=RaceStatus.RUNNING,
        created_at_ms=0,
        countdown_ms=0,
        grace_ms=60_000,
        spectator_delay_ms=0,
    )
    ledger = Ledger()
    leak = Error(code="not_allowed", message=f"deal {number}")
    ledger.heard.append(Heard(0, 1, None, encode(leak), leak))
    ledger.acks[(race.race_id, "p0123456789abcdef", 0)] = (0, "deal")
    check_frames(ledger, {race.race_id: race}, {})
    check_acks(ledger, {})
    check_log("2026-01-01 00:00:00,000 ERROR solrace.server: boom\nTraceback (most", ledger)
    assert sorted(ledger.violations) == [
        f"acked move missing from the store: {race.race_id} p0123456789abcdef ply 0",
        f"game number {number} in a error before its reveal",
        "log: 2026-01-01 00:00:00,000 ERROR solrace.server: boom",
        "log: Traceback (most",
    ]
