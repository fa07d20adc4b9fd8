"""`Racer` (the live seat) and `RacerRecord` (the stored one) carry the same fields, so a save
drops none of them and a load fills all of them."""

from __future__ import annotations

from dataclasses import MISSING, fields

from solrace.server.protocol.ids import PlayerId
from solrace.server.protocol.race import Racer
from solrace.server.protocol.records import RacerRecord, RacerState


def test_a_racer_and_its_record_have_the_same_fields() -> None:
    assert {f.name for f in fields(Racer)} == set(RacerRecord.model_fields)


def test_a_racer_and_its_record_have_the_same_defaults() -> None:
    live = {f.name: f.default for f in fields(Racer) if f.default is not MISSING}
    stored = {
        name: info.default
        for name, info in RacerRecord.model_fields.items()
        if not info.is_required()
    }
    # The record has no default state (a stored seat always says it); the live seat starts joined.
    assert live.pop("state") is RacerState.JOINED
    assert live == stored


def test_every_field_survives_a_save_and_a_load() -> None:
    racer = Racer(
        PlayerId("p1"),
        "ann",
        RacerState.FINISHED,
        state_at_ms=9000,
        on_foundations=52,
        total=52,
        moves=140,
        reached_at_ms=8990,
        connected=False,
        disconnected_at_ms=9100,
        holder="node-a:7",
    )
    fresh = Racer(PlayerId("p1"), "ann")
    # Every field is set to something other than its default, so none can pass by luck.
    same = [f.name for f in fields(Racer)[2:] if getattr(racer, f.name) == getattr(fresh, f.name)]
    assert same == []
    record = racer.to_record()
    assert record.model_dump() == {f.name: getattr(racer, f.name) for f in fields(Racer)}
    assert Racer.from_record(record) == racer
