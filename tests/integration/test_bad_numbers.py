"""Integers past a field's bound, against the real server on loopback: every integer field of
every client message (found by walking the models, so a new one is walked too) with 2**63 and
2**64-1 (the largest msgpack carries) gets `invalid_message` naming the field, and the
connection stays open; none reaches a store or a timer."""

from __future__ import annotations

import logging
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from solrace.server.app import App
from solrace.server.protocol.codec import decode_client, encode_raw
from solrace.server.protocol.errors import SchemaError
from solrace.server.protocol.messages import ClientMessage, Error, Ping, Pong
from tests.integration.conftest import ServerFactory
from tests.integration.wsclient import Client

MODELS: tuple[type[BaseModel], ...] = typing.get_args(typing.get_args(ClientMessage)[0])
HUGE = (2**63, 2**64 - 1)

#: A valid map of each client message type, every integer field there.
EXAMPLES: dict[str, dict[str, Any]] = {
    "hello": {"protocol": 1, "name": "alice"},
    "ping": {"nonce": 7},
    "list_races": {},
    "create_race": {"game": "klondike", "seats": 2, "time_limit_s": 600},
    "join_race": {"race_id": "r5d2c1a9e07"},
    "leave_race": {"race_id": "r5d2c1a9e07"},
    "start_race": {"race_id": "r5d2c1a9e07"},
    "move": {"race_id": "r5d2c1a9e07", "seq": 1, "move": "deal"},
    "resign": {"race_id": "r5d2c1a9e07"},
    "sync": {"race_id": "r5d2c1a9e07", "epoch": "9b1e44d0", "since_version": 3},
    "watch": {"race_id": "r5d2c1a9e07"},
    "unwatch": {"race_id": "r5d2c1a9e07"},
    "get_replay": {"race_id": "r5d2c1a9e07"},
    "get_leaderboard": {"game": "klondike", "limit": 20},
    "get_profile": {},
    "create_tournament": {
        "admin_token": "token",
        "name": "friday",
        "game": "klondike",
        "format": "swiss",
        "best_of": 1,
        "time_limit_s": 600,
        "min_players": 2,
        "max_players": 8,
        "no_show_grace_s": 120,
        "swiss_rounds": 3,
        "heat_size": 4,
        "advance_per_heat": 2,
    },
    "list_tournaments": {"skip_finished": 0},
    "watch_tournament": {"tournament_id": "t4c1d2e"},
    "unwatch_tournament": {"tournament_id": "t4c1d2e"},
    "join_tournament": {"tournament_id": "t4c1d2e"},
    "check_in": {"tournament_id": "t4c1d2e"},
    "leave_tournament": {"tournament_id": "t4c1d2e"},
    "tournament_admin": {
        "tournament_id": "t4c1d2e",
        "admin_token": "token",
        "act": "correct_result",
        "match_id": "W1-1",
        "race_number": 1,
        "placings": [["p3f0c9a1b2c3d4e5f"]],
        "cards": {"p3f0c9a1b2c3d4e5f": 52},
    },
}


def holding(annotation: Any, number: int) -> Any:
    """A wire value of `annotation` with `number` where it holds an integer (None if none)."""
    if annotation is int:
        return number
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return holding(args[0], number)
    if origin is list:
        inner = holding(args[0], number)
        return None if inner is None else [inner]
    if origin is dict:
        inner = holding(args[1], number)
        return None if inner is None else {"p3f0c9a1b2c3d4e5f": inner}
    for arg in args:  # a union (`int | None`): its first part that holds one
        inner = holding(arg, number)
        if inner is not None:
            return inner
    return None


def int_fields() -> list[tuple[str, str]]:
    """(message type, field) of every field of a client message that holds an integer."""
    found = []
    for model in MODELS:
        kind = model.model_fields["type"].default
        for name, field in model.model_fields.items():
            annotation = field.rebuild_annotation()
            if holding(annotation, 0) is not None:
                found.append((kind, name))
    return found


INT_FIELDS = int_fields()
CASES = [(kind, name, number) for kind, name in INT_FIELDS for number in HUGE]


def bad(kind: str, name: str, number: int) -> dict[str, Any]:
    model = next(m for m in MODELS if m.model_fields["type"].default == kind)
    value = holding(model.model_fields[name].rebuild_annotation(), number)
    return {"type": kind, **EXAMPLES[kind], name: value}


def test_every_message_has_a_valid_example_with_its_integer_fields() -> None:
    assert {m.model_fields["type"].default for m in MODELS} == set(EXAMPLES)
    for kind, example in EXAMPLES.items():
        decode_client(encode_raw({"type": kind, **example}))
    for kind, name in INT_FIELDS:
        assert name in EXAMPLES[kind], (kind, name)
    # The walk finds what it should (a field that holds integers in a map, too).
    assert ("list_tournaments", "skip_finished") in INT_FIELDS
    assert ("tournament_admin", "cards") in INT_FIELDS
    assert ("ping", "nonce") in INT_FIELDS


@pytest.mark.parametrize(("kind", "name", "number"), CASES)
def test_an_integer_past_its_field_s_bound_is_refused_by_the_codec(
    kind: str, name: str, number: int
) -> None:
    with pytest.raises(SchemaError) as refused:
        decode_client(encode_raw(bad(kind, name, number)))
    assert f"{kind}.{name}" in str(refused.value)
    assert refused.value.request_type == kind


async def test_every_integer_field_past_its_bound_gets_invalid_message_and_stays_open(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app = await start_server(rate_capacity=1000.0)
    client = await Client.open(f"ws://127.0.0.1:{app.port}")
    try:
        await client.hello("alice")
        for kind, name, number in CASES:
            await client.send_raw(encode_raw(bad(kind, name, number)))
            error = await client.expect(Error)
            assert (error.code, error.request) == ("invalid_message", kind), error
            assert f"{kind}.{name}" in error.message, error
        await client.send(Ping(nonce=1))
        await client.expect(Pong, lambda pong: pong.nonce == 1)
    finally:
        await client.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_list_tournaments_with_a_skip_past_64_bits_gets_invalid_message(
    start_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app: App = await start_server()
    client = await Client.open(f"ws://127.0.0.1:{app.port}")
    try:
        await client.hello()  # anonymous
        await client.send_raw(encode_raw({"type": "list_tournaments", "skip_finished": 2**64 - 1}))
        error = await client.expect(Error)
        assert (error.code, error.request) == ("invalid_message", "list_tournaments")
        assert "skip_finished" in error.message
        await client.send(Ping(nonce=2))
        await client.expect(Pong, lambda pong: pong.nonce == 2)
    finally:
        await client.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
