"""Any msgpack value, and any bytes, as a client's frame (server/protocol/codec.py), property
tests: each is a message, a `DecodeError` (the transport closes 1007) or a `SchemaError`
(answered with an `invalid_message` error that can be sent), never another exception.
The examples are derandomized (tests/conftest.py): the same ones on every run."""

from __future__ import annotations

import typing
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from solrace.server.protocol.codec import (
    MAX_REASON_CHARS,
    MAX_TYPE_CHARS,
    decode_client,
    encode,
    encode_raw,
)
from solrace.server.protocol.errors import DecodeError, ErrorCode, SchemaError
from solrace.server.protocol.messages import ClientMessage, Error, Hello, MakeMove, Ping

MODELS = typing.get_args(typing.get_args(ClientMessage)[0])
#: Every client message's type, and every field any of them has: maps drawn from these reach
#: the validators of each message, not only the refusal of an unknown type.
TYPES = sorted(model.model_fields["type"].default for model in MODELS)
FIELDS = sorted({name for model in MODELS for name in model.model_fields})

INTS = st.integers(-(2**63), 2**64 - 1)  # what msgpack packs
SCALARS = (
    INTS
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=8)
    | st.booleans()
    | st.none()
    | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=4))
    | st.sampled_from(TYPES)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=5) | INTS, inner, max_size=4)
    ),
    max_leaves=12,
)
MESSAGE_LIKE = st.builds(
    lambda kind, fields: {"type": kind, **fields},
    st.sampled_from(TYPES),
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6),
)


def refusal_is_sendable(exc: SchemaError) -> None:
    """The transport's answer to a `SchemaError` is built and encoded without error, and
    quotes a bounded part of the request."""
    assert len(str(exc)) <= MAX_REASON_CHARS
    assert exc.request_type is None or len(exc.request_type) <= MAX_TYPE_CHARS
    error = Error(code=ErrorCode.INVALID_MESSAGE.value, message=str(exc), request=exc.request_type)
    assert encode(error)


def decoded_or_refused(data: bytes) -> ClientMessage | DecodeError | SchemaError:
    """`decode_client(data)`: the message or the refusal; any other exception escapes."""
    try:
        return decode_client(data)
    except (DecodeError, SchemaError) as exc:
        return exc


@settings(max_examples=150)
@given(VALUES | MESSAGE_LIKE)
def test_any_msgpack_value_is_a_message_or_a_refusal(value: Any) -> None:
    """Not a map: `DecodeError`. A map: a message, which encodes back to itself, or a
    `SchemaError` whose answer can be sent."""
    answer = decoded_or_refused(encode_raw(value))
    if not isinstance(value, dict):
        assert isinstance(answer, DecodeError)
    elif isinstance(answer, SchemaError):
        refusal_is_sendable(answer)
    else:
        assert not isinstance(answer, DecodeError), answer
        assert decode_client(encode(answer)) == answer


def packed_map(pairs: list[tuple[Any, Any]]) -> bytes:
    """A msgpack map of `pairs`, whose keys may be arrays or maps (no Python dict holds)."""
    packer = msgpack.Packer(use_bin_type=True)
    return packer.pack_map_header(len(pairs)) + b"".join(
        packer.pack(key) + packer.pack(value) for key, value in pairs
    )


@settings(max_examples=100)
@given(
    st.lists(
        st.tuples(
            st.just("type") | st.lists(INTS, max_size=2) | st.dictionaries(INTS, INTS, max_size=1),
            VALUES,
        ),
        max_size=20,
    )
)
def test_a_map_keyed_by_arrays_or_maps_is_refused_as_a_schema_error(
    pairs: list[tuple[Any, Any]],
) -> None:
    answer = decoded_or_refused(packed_map(pairs))
    if any(not isinstance(key, str) for key, _ in pairs):
        assert isinstance(answer, SchemaError)
    if isinstance(answer, SchemaError):
        refusal_is_sendable(answer)


VALID_FRAMES = [
    encode(Ping(nonce=7)),
    encode(Hello(protocol=1, name="alice")),
    encode(MakeMove(race_id="r1234567890", seq=3, move="deal")),
]


@st.composite
def damaged_frames(draw: st.DrawFn) -> bytes:
    """A valid frame with a few bytes overwritten, inserted, deleted, or cut short."""
    frame = bytearray(draw(st.sampled_from(VALID_FRAMES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(frame)))
        edit = draw(st.sampled_from(["set", "insert", "delete", "cut"]))
        if edit == "set" and at < len(frame):
            frame[at] = draw(st.integers(0, 255))
        elif edit == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif edit == "delete":
            del frame[at : at + draw(st.integers(1, 3))]
        else:
            del frame[at:]
    return bytes(frame)


@settings(max_examples=300)
@given(st.binary(max_size=64) | damaged_frames())
def test_any_bytes_are_a_message_or_a_refusal(data: bytes) -> None:
    answer = decoded_or_refused(data)
    if isinstance(answer, SchemaError):
        refusal_is_sendable(answer)
    elif isinstance(answer, DecodeError):
        assert str(answer).startswith(("not a msgpack frame", "a frame must be a msgpack map"))
