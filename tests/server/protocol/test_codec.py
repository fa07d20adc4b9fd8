from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solrace.server.protocol.codec import decode_client, decode_server, encode, encode_raw
from solrace.server.protocol.errors import DecodeError, SchemaError
from solrace.server.protocol.messages import (
    CreateRace,
    Error,
    Hello,
    MakeMove,
    MoveAck,
    PileModel,
    Sync,
)


@pytest.mark.parametrize(
    "message",
    [
        Hello(protocol=1, name="alice"),
        Hello(protocol=1, token="v1.p1.sig"),
        CreateRace(game="klondike", seats=4, time_limit_s=300, rated=True),
        MakeMove(race_id="r1", seq=7, move="t2-t5:3"),
        Sync(race_id="r1", epoch="e", since_version=4),
    ],
)
def test_client_messages_round_trip(message: object) -> None:
    assert decode_client(encode(message)) == message  # type: ignore[arg-type]


def test_server_messages_round_trip() -> None:
    ack = MoveAck(
        race_id="r1",
        seq=1,
        ply=0,
        move="deal",
        at_ms=5,
        piles=[PileModel(name="waste", down=0, cards=["AC"])],
        on_foundations=0,
        total=52,
        won=False,
        stuck=False,
    )
    assert decode_server(encode(ack)) == ack
    error = Error(code="x", message="y")
    assert decode_server(encode(error)) == error


@pytest.mark.parametrize(
    "frame", [b"", b"\xc1", b"\x93\x01\x02\x03", encode_raw("hello"), encode_raw(1) + b"x"]
)
def test_frames_that_are_not_one_map_raise_decode_error(frame: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_client(frame)


@pytest.mark.parametrize(
    ("value", "request_type"),
    [
        ({"type": "teleport"}, "teleport"),
        ({}, None),
        ({"type": "hello", "protocol": "1"}, "hello"),
        ({"type": "hello", "protocol": 1, "admin": True}, "hello"),
        ({"type": "move", "race_id": "r", "seq": 1.5, "move": "deal"}, "move"),
        ({"type": "move", "race_id": "r", "seq": 1, "move": "x" * 100}, "move"),
        ({"type": "hello", "protocol": 1, "name": "bad name!"}, "hello"),
    ],
)
def test_invalid_messages_raise_schema_error(
    value: dict[str, object], request_type: str | None
) -> None:
    with pytest.raises(SchemaError) as caught:
        decode_client(encode_raw(value))
    assert caught.value.request_type == request_type


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_fail_cleanly(data: bytes) -> None:
    with contextlib.suppress(DecodeError, SchemaError):
        decode_client(data)


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8) | st.none(),
        max_size=5,
    )
)
def test_any_map_decodes_or_fails_cleanly(value: dict[str, object]) -> None:
    with contextlib.suppress(DecodeError, SchemaError):
        decode_client(msgpack.packb(value))
