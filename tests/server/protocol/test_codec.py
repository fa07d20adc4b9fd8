from __future__ import annotations

import contextlib
import sys
import typing
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from solrace.server.protocol import codec
from solrace.server.protocol.codec import (
    MAX_CLIENT_FIELDS,
    MAX_REASON_CHARS,
    _check_shape,
    decode_client,
    decode_server,
    encode,
    encode_raw,
    unpack_map,
)
from solrace.server.protocol.errors import DecodeError, SchemaError
from solrace.server.protocol.ids import PlayerId, RaceId
from solrace.server.protocol.messages import (
    CLIENT_ADAPTER,
    ClientMessage,
    CreateRace,
    Error,
    Hello,
    MakeMove,
    MoveAck,
    PileModel,
    Progress,
    ProgressEntry,
    Sync,
)
from solrace.server.protocol.vocab import RacerStateName

#: Nested nearly as deep as msgpack reads (1,024): its repr exceeds Python's recursion limit.
DEPTH = 1020
DEEP_ARRAY = b"\x91" * DEPTH + b"\x01"  # [[[...[1]...]]]
DEEP_MAP = b"\x81\xa1k" * DEPTH + b"\x01"  # {"k": {"k": ...{"k": 1}...}}


def map_of(*pairs: tuple[bytes, bytes]) -> bytes:
    """A msgpack map of already-packed keys and values (a deep value cannot be packed)."""
    assert len(pairs) <= 15
    return bytes([0x80 | len(pairs)]) + b"".join(key + value for key, value in pairs)


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What would be printed as 'Exception ignored in: ...' on stderr."""
    reported: list[str] = []

    def hook(info: sys.UnraisableHookArgs) -> None:
        reported.append(f"{info.exc_type.__name__}: {info.exc_value}")

    monkeypatch.setattr(sys, "unraisablehook", hook)
    return reported


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
        race_id=RaceId("r1"),
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


@given(
    race_id=st.text(min_size=1, max_size=24),
    epoch=st.text(max_size=24),
    version=st.integers(0, 2**53 - 1),
    player_id=st.text(min_size=1, max_size=24),
    state=st.sampled_from(typing.get_args(RacerStateName)),
    figures=st.lists(st.integers(-(2**63), 2**64 - 1), min_size=4, max_size=4),
)
def test_a_progress_event_packs_as_its_serializer_gives_it(
    race_id: str, epoch: str, version: int, player_id: str, state: str, figures: list[int]
) -> None:
    """`encode` packs a `Progress` from its fields directly: the same bytes as the model's
    serializer gives (field order, types), whatever the values."""
    on_foundations, total, moves, elapsed_ms = figures
    entry = ProgressEntry(
        player_id=PlayerId(player_id),
        state=state,  # type: ignore[arg-type]
        on_foundations=on_foundations,
        total=total,
        moves=moves,
        elapsed_ms=elapsed_ms,
    )
    event = Progress(race_id=RaceId(race_id), epoch=epoch, version=version, progress=entry)
    expected = msgpack.packb(event.model_dump(), use_bin_type=True)
    assert encode(event) == expected
    assert decode_server(expected) == event


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
        # A blank invite code made a "private" race anyone joined with the blank code.
        (
            {"type": "create_race", "game": "klondike", "seats": 2, "time_limit_s": 60}
            | {"invite_code": ""},
            "create_race",
        ),
        ({"type": "join_race", "race_id": "r1", "invite_code": " \t"}, "join_race"),
    ],
)
def test_invalid_messages_raise_schema_error(
    value: dict[str, object], request_type: str | None
) -> None:
    with pytest.raises(SchemaError) as caught:
        decode_client(encode_raw(value))
    assert caught.value.request_type == request_type


@pytest.mark.parametrize(
    ("frame", "request_type"),
    [
        (b"\x81\x01\x01", None),  # {1: 1}
        (encode_raw({"type": "ping", "nonce": 1, 2: 3}), "ping"),
        (encode_raw({"type": "move", b"seq": 1}), "move"),
        (b"\x81\x91\x01\x01", None),  # {[1]: 1}: a key no dict can hold
        (b"\x82\xa4type\xa4ping\xa5nonce\x81\x81\x01\x01\x01", "ping"),  # {{1: 1}: 1} inside
        (encode_raw({"type": "ping", "nonce": 1, "x": [[[[[[[[[[1]]]]]]]]]]}), "ping"),
    ],
)
def test_maps_with_keys_that_are_not_strings_are_invalid_messages(
    frame: bytes, request_type: str | None
) -> None:
    """A map is a map whatever its keys: the schema refuses it (`invalid_message`), the
    connection stays open."""
    with pytest.raises(SchemaError) as caught:
        decode_client(frame)
    assert caught.value.request_type == request_type


def test_a_map_with_more_keys_than_any_message_has_fields_is_refused_before_validation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Thousands of unknown keys fit in a 16 KiB frame; each would be one validation error
    (~1,000 times a normal message's cost): the count alone refuses them, naming the type."""

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("validated")

    monkeypatch.setattr(codec, "CLIENT_ADAPTER", SimpleNamespace(validate_python=never))
    flood = {"type": "ping", "nonce": 1, **{str(n): 0 for n in range(2800)}}
    frame = encode_raw(flood)
    assert len(frame) < 16 * 1024
    with pytest.raises(
        SchemaError, match=f"at most {MAX_CLIENT_FIELDS} fields, not 2802"
    ) as caught:
        decode_client(frame)
    assert caught.value.request_type == "ping"
    last = {**{str(n): 0 for n in range(2800)}, "type": "list_races"}  # found where it is
    with pytest.raises(SchemaError, match="not 2801") as caught:
        decode_client(encode_raw(last))
    assert caught.value.request_type == "list_races"
    extra = MAX_CLIENT_FIELDS - 1
    one_too_many = {"type": "ping", "nonce": 1, **{str(n): 0 for n in range(extra)}}
    with pytest.raises(SchemaError, match="fields, not") as caught:
        decode_client(encode_raw(one_too_many))
    assert caught.value.request_type == "ping"
    monkeypatch.undo()
    just_unknown = {"type": "ping", "nonce": 1, "x": 0}  # few keys: the schema says which
    with pytest.raises(SchemaError, match="Extra inputs"):
        decode_client(encode_raw(just_unknown))


def packed(pairs: list[tuple[object, object]]) -> list[bytes]:
    return [encode_raw(key) + encode_raw(value) for key, value in pairs]


def map16(entries: list[bytes]) -> bytes:
    """A map16 (as msgpack packs 16 entries or more) of entries packed already (key and
    value): keys no dict holds and values too deep to pack fit in too."""
    return b"\xde" + len(entries).to_bytes(2, "big") + b"".join(entries)


def map32(entries: list[bytes]) -> bytes:
    """A map32 (valid msgpack for any count, if not the shortest)."""
    return b"\xdf" + len(entries).to_bytes(4, "big") + b"".join(entries)


MANY = packed([("type", "ping"), ("nonce", 1), *((f"x{n}", n) for n in range(16))])  # 18


@pytest.mark.parametrize("header", [map16, map32])
def test_a_frame_with_too_many_fields_that_is_not_one_map_is_a_decode_error(
    header: Callable[[list[bytes]], bytes],
) -> None:
    """The field cap used to answer from the header alone: a truncated map, or one with bytes
    after it, got `invalid_message` (no request) instead of 1007 when it declared 18 entries,
    and 1007 when it declared 17."""
    whole = header(MANY)
    for frame in (whole + b"\xc1", whole + b"\x00", whole[: len(whole) // 2 + 4], whole[:-1]):
        with pytest.raises(DecodeError, match="not a msgpack frame"):
            decode_client(frame)
    with pytest.raises(SchemaError, match="at most 17 fields, not 18") as caught:
        decode_client(whole)
    assert caught.value.request_type == "ping"
    with pytest.raises(DecodeError):
        decode_client(header(MANY[:17]) + b"\xc1")
    with pytest.raises(DecodeError, match="nested too deep"):
        decode_client(header([*MANY[:17], encode_raw("deep") + b"\x91" * 3000 + b"\xc0"]))


@pytest.mark.parametrize(
    ("entries", "request_type"),
    [
        ([*MANY[1:], *packed([("type", "x" * 33)])], None),  # too long to name
        ([*MANY[1:], *packed([("type", [1])])], None),
        ([*MANY[1:], encode_raw("type") + DEEP_ARRAY], None),  # never repr'd
        ([*packed([("type", "sync")]), *MANY[1:], *packed([("type", "ping")])], "ping"),
        ([*MANY, *packed([("x", {"k": {"j": 1}})])], "ping"),
        ([*MANY[:17], b"\x91\x01\x01"], "ping"),  # [1]: 1, a key no dict holds
        ([*MANY[:17], b"\xa1y\x81\x91\x01\x01"], "ping"),  # "y": {[1]: 1}
    ],
)
def test_a_map_with_too_many_fields_names_its_type_when_it_has_a_short_one(
    entries: list[bytes], request_type: str | None, unraisable: list[str]
) -> None:
    """The last `type`, as a dict keeps it; whatever the keys are."""
    with pytest.raises(SchemaError, match="at most 17 fields, not") as caught:
        decode_client(map16(entries))
    assert caught.value.request_type == request_type
    assert unraisable == []


def test_a_map_header_declaring_more_than_the_frame_holds_is_not_a_map() -> None:
    """A map32 header for 4 billion entries and nothing after: truncated, not one msgpack
    map (1007), rather than a message with too many fields (it used to be the latter)."""
    for frame in (b"\xdf\xff\xff\xff\xff", b"\xde\x00\x40" + b"\xa1x\x00" * 3):
        with pytest.raises(DecodeError, match="entries in"):
            decode_client(frame)


def test_a_frame_nested_deeper_than_the_decoder_goes_is_not_a_map() -> None:
    deep = b"\x82\xa4type\xa4ping\xa1x" + b"\x91" * 3000 + b"\xc0"
    with pytest.raises(DecodeError, match="nested too deep"):
        decode_client(deep)
    with pytest.raises(DecodeError):
        decode_client(b"\x81\x91\x01")  # an array key, then nothing: truncated


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


@pytest.mark.parametrize(
    ("frame", "reason", "request_type"),
    [
        (encode_raw({}), 'a message needs a "type"', None),
        (encode_raw({"nonce": 1}), 'a message needs a "type"', None),
        (b"\x81\x01\x01", "a map's keys must be strings", None),  # {1: 1}
        (encode_raw({b"type": b"ping", "nonce": 1}), "a map's keys must be strings", None),
        (encode_raw({b"type": "ping"}), "a map's keys must be strings", None),
        (encode_raw({"type": "ping", "nonce": 1, 2: 3}), "a map's keys must be strings", "ping"),
        (encode_raw({"type": "move", b"seq": 1}), "a map's keys must be strings", "move"),
        (b"\x81\x91\x01\x01", "a map's keys must be strings", None),  # {[1]: 1}
    ],
)
def test_a_map_without_a_string_type_says_plainly_what_is_wrong(
    frame: bytes, reason: str, request_type: str | None
) -> None:
    """No `type`, or keys that are not strings (binary ones too: msgpack's bin type is not a
    string): the answer says so, not the schema's words about a union's tag."""
    with pytest.raises(SchemaError) as caught:
        decode_client(frame)
    assert (str(caught.value), caught.value.request_type) == (reason, request_type)


# --- moves skip the union: the same answers as through it --------------------------------


def decode_through_the_union(data: bytes) -> ClientMessage:
    """`decode_client` as it was before moves got their own path: every map through the
    whole client union, errors described the same way (a map with a key that is not a
    string, or no type, or a type that is not a short string refused before it)."""
    value = unpack_map(data)
    _check_shape(value)
    try:
        return CLIENT_ADAPTER.validate_python(value)
    except ValidationError as exc:
        parts = []
        for error in exc.errors()[:3]:
            where = ".".join(str(p) for p in error["loc"]) or "message"
            parts.append(f"{where}: {error['msg']}")
        kind = value.get("type")
        request_type = kind if isinstance(kind, str) and len(kind) <= 32 else None
        raise SchemaError("; ".join(parts), request_type) from None


def outcome(decode: Any, data: bytes) -> tuple[str, object, object]:
    try:
        message = decode(data)
    except SchemaError as exc:
        return ("schema", str(exc), exc.request_type)
    except DecodeError as exc:
        return ("decode", str(exc), None)
    return ("message", type(message), message)


def assert_same_as_the_union(value: object) -> None:
    data = encode_raw(value)
    assert outcome(decode_client, data) == outcome(decode_through_the_union, data)


GOOD_MOVE: dict[str, Any] = {"type": "move", "race_id": "r1", "seq": 7, "move": "t2-t5:3"}


@pytest.mark.parametrize(
    "value",
    [
        GOOD_MOVE,
        {**GOOD_MOVE, "seq": 0, "move": "deal"},
        {**GOOD_MOVE, "seq": 2**53 - 1, "race_id": "r" * 32, "move": "m" * 32},
        # wrong types (strict: no coercion)
        {**GOOD_MOVE, "seq": "7"},
        {**GOOD_MOVE, "seq": 7.0},
        {**GOOD_MOVE, "seq": True},
        {**GOOD_MOVE, "seq": None},
        {**GOOD_MOVE, "race_id": 5},
        {**GOOD_MOVE, "race_id": b"r1"},
        {**GOOD_MOVE, "move": ["deal"]},
        {**GOOD_MOVE, "move": {"src": "w"}},
        # out of range
        {**GOOD_MOVE, "seq": -1},
        {**GOOD_MOVE, "seq": 2**53},
        {**GOOD_MOVE, "race_id": ""},
        {**GOOD_MOVE, "race_id": "r" * 33},
        {**GOOD_MOVE, "move": ""},
        {**GOOD_MOVE, "move": "m" * 33},
        # extra fields
        {**GOOD_MOVE, "admin": True},
        {**GOOD_MOVE, "x": 1, "y": 2, "z": 3},
        # missing fields
        {"type": "move"},
        {"type": "move", "race_id": "r1"},
        {"type": "move", "seq": 1, "move": "deal"},
        # several errors at once: only the first three are described
        {"type": "move", "race_id": "", "seq": -1, "move": "", "extra": 1},
        # not a move after all
        {**GOOD_MOVE, "type": "Move"},
        {**GOOD_MOVE, "type": b"move"},
        {**GOOD_MOVE, "type": "resign"},
        {k: v for k, v in GOOD_MOVE.items() if k != "type"},
    ],
)
def test_a_move_decodes_as_through_the_union(value: dict[str, object]) -> None:
    assert_same_as_the_union(value)


def test_a_bad_move_names_the_field_under_its_type() -> None:
    with pytest.raises(SchemaError) as caught:
        decode_client(encode_raw({**GOOD_MOVE, "seq": "7", "extra": 1}))
    assert str(caught.value) == (
        "move.seq: Input should be a valid integer; move.extra: Extra inputs are not permitted"
    )
    assert caught.value.request_type == "move"


MSGPACK_INTS = st.integers(-(2**63), 2**64 - 1)
FIELD_VALUES = (
    MSGPACK_INTS
    | st.text(max_size=40)
    | st.binary(max_size=4)
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False)
    | st.lists(MSGPACK_INTS, max_size=2)
)


@settings(derandomize=True, database=None, max_examples=400)
@given(
    st.fixed_dictionaries(
        {"type": st.just("move")},
        optional={"race_id": FIELD_VALUES, "seq": FIELD_VALUES, "move": FIELD_VALUES},
    ),
    st.dictionaries(st.sampled_from(["extra", "seq2", "Type", "at_ms"]), FIELD_VALUES, max_size=2),
)
def test_any_move_map_decodes_as_through_the_union(
    fields: dict[str, object], extra: dict[str, object]
) -> None:
    assert_same_as_the_union({**fields, **extra})


def test_a_refusal_quotes_no_more_than_its_limit_of_what_was_sent() -> None:
    """A 15 KB unknown type came back whole in the refusal's text (as large as the request)."""
    with pytest.raises(SchemaError) as caught:
        decode_client(encode_raw({"type": "x" * 15_000}))
    assert len(str(caught.value)) <= MAX_REASON_CHARS
    assert caught.value.request_type is None  # a type that long is not named either


# --- nothing a client sends is repr'd: a deep value cannot flood the log ---------------------


@pytest.mark.parametrize("deep", [DEEP_ARRAY, DEEP_MAP], ids=["array", "map"])
def test_a_deeply_nested_type_is_refused_before_validation(
    deep: bytes, unraisable: list[str]
) -> None:
    """pydantic's error for an unknown tag quotes its repr, which a type nested ~1,000 deep
    fails to make: it printed a six-line RecursionError traceback per frame."""
    with pytest.raises(SchemaError) as caught:
        decode_client(map_of((encode_raw("type"), deep)))
    assert unraisable == []
    kind = "an array" if deep is DEEP_ARRAY else "a map"
    assert str(caught.value) == (
        "type: Input should be a message type (a string of at most 32 characters), not " + kind
    )
    assert caught.value.request_type is None
    with pytest.raises(SchemaError, match="type: Input should be a message type"):
        decode_server(map_of((encode_raw("type"), deep)))
    assert unraisable == []


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        (None, "nil"),
        (1, "an integer"),
        (True, "a boolean"),
        (1.5, "a float"),
        (b"ping", "binary"),
        ([1], "an array"),
        ({"a": 1}, "a map"),
        ("x" * 33, "a string of 33 characters"),
    ],
)
def test_a_type_that_is_not_a_short_string_says_what_it_is(kind: object, said: str) -> None:
    with pytest.raises(SchemaError) as caught:
        decode_client(encode_raw({"type": kind, "nonce": 1}))
    assert str(caught.value).endswith(f"), not {said}")
    assert caught.value.request_type is None


def client_fields() -> list[tuple[str, str]]:
    models = typing.get_args(typing.get_args(ClientMessage)[0])
    return [
        (model.model_fields["type"].default, name)
        for model in models
        for name in [*model.model_fields, "unknown"]
        if name != "type"
    ]


@pytest.mark.parametrize(("tag", "field"), client_fields())
def test_a_deeply_nested_value_in_any_field_is_an_invalid_message_and_never_repr_d(
    tag: str, field: str, unraisable: list[str]
) -> None:
    for deep in (DEEP_ARRAY, DEEP_MAP):
        frame = map_of((encode_raw("type"), encode_raw(tag)), (encode_raw(field), deep))
        with pytest.raises(SchemaError) as caught:
            decode_client(frame)
        assert caught.value.request_type == tag
    assert unraisable == []


@pytest.mark.parametrize("frame", [b"\xc1", b"\x81\xa4type", b"hello", b"\x92", b"\xc7\x01\x00"])
def test_every_unreadable_frame_says_why(frame: bytes) -> None:
    """The close reason names what is wrong: a byte no value starts with (0xc1) gave
    `not a msgpack frame: ` with nothing after it."""
    with pytest.raises(DecodeError) as caught:
        decode_client(frame)
    prefix, _, why = str(caught.value).partition(": ")
    assert prefix == "not a msgpack frame" and why.strip(), str(caught.value)
