"""The msgpack codec: the one module that touches msgpack.

A frame is one msgpack map. Decoding a frame is two steps with two errors: bytes that are not
one map raise `DecodeError`; a map that is not a valid message raises `SchemaError`.
"""

from __future__ import annotations

import threading
import typing
from typing import Any

import msgpack
from pydantic import BaseModel, ValidationError

from solrace.server.protocol.errors import DecodeError, SchemaError
from solrace.server.protocol.ids import RaceId
from solrace.server.protocol.messages import (
    CLIENT_ADAPTER,
    SERVER_ADAPTER,
    ClientMessage,
    MakeMove,
    PileFields,
    Progress,
    ServerMessage,
)
from solrace.server.protocol.wire import MAX_ID_CHARS

_packers = threading.local()
_MOVE_VALIDATOR = MakeMove.__pydantic_validator__
#: The most fields a client message has (`type` included). A map with more keys is refused
#: before validation: thousands of unknown keys in one 16 KiB frame cost pydantic ~1,000 times
#: a normal message (an error each), within the rate budget.
MAX_CLIENT_FIELDS = max(
    len(model.model_fields) for model in typing.get_args(typing.get_args(ClientMessage)[0])
)


def _packer() -> msgpack.Packer:
    # One reused packer per thread: a packer is not thread-safe, and creating one per frame
    # costs as much as packing a small map.
    packer: msgpack.Packer | None = getattr(_packers, "packer", None)
    if packer is None:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    return packer


def encode(message: BaseModel) -> bytes:
    """Serialize a message model as one msgpack map.

    The same bytes as `msgpack.packb(message.model_dump(), use_bin_type=True)`, a third
    cheaper (every frame a server sends goes through here): the model's serializer without
    `model_dump`'s Python wrapper, and one reused packer per thread. A `Progress` (one per
    progress batch, the most frequent race event) is packed from its fields directly."""
    if type(message) is Progress:
        return _encode_progress(message)
    data: bytes = _packer().pack(type(message).__pydantic_serializer__.to_python(message))
    return data


def _encode_progress(event: Progress) -> bytes:
    """The bytes `encode` gives a `Progress` through its serializer, from a map of its fields
    (`Progress` and `ProgressEntry` in their order; every field a string or an integer):
    ~1.7 us against ~2.6 us. A test holds both to equal bytes."""
    entry = event.progress
    data: bytes = _packer().pack(
        {
            "type": event.type,
            "race_id": event.race_id,
            "epoch": event.epoch,
            "version": event.version,
            "progress": {
                "player_id": entry.player_id,
                "state": entry.state,
                "on_foundations": entry.on_foundations,
                "total": entry.total,
                "moves": entry.moves,
                "elapsed_ms": entry.elapsed_ms,
            },
        }
    )
    return data


def encode_move_ack(
    *,
    race_id: RaceId,
    seq: int,
    ply: int,
    move: str,
    at_ms: int,
    piles: list[PileFields],
    on_foundations: int,
    total: int,
    won: bool,
    stuck: bool,
) -> bytes:
    """The bytes of `encode(MoveAck(...))` with these fields (`duplicate` false), without
    building the models: every accepted move sends one, and with its piles as models (a stock
    click sends the whole waste back) it cost ~14 us against ~4 us this way (21-card waste).
    The map's keys are `MoveAck`'s fields in their order; a test holds both to equal bytes."""
    data: bytes = _packer().pack(
        {
            "type": "move_ack",
            "race_id": race_id,
            "seq": seq,
            "ply": ply,
            "move": move,
            "at_ms": at_ms,
            "piles": piles,
            "on_foundations": on_foundations,
            "total": total,
            "won": won,
            "stuck": stuck,
            "duplicate": False,
        }
    )
    return data


def encode_raw(value: Any) -> bytes:
    """Serialize any msgpack-able value (tests use it to forge bad frames)."""
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


class _Pairs(list[tuple[Any, Any]]):
    """A map read as its (key, value) pairs: keys that are arrays or maps cannot key a dict."""


def unpack_map(data: bytes) -> dict[str, Any]:
    """Bytes to a map, or `DecodeError`.

    Keys of any type are read (not only strings): a map keyed by numbers is a map, which the
    message schema then refuses (`SchemaError`), as it refuses an unknown field. So is a map
    keyed by arrays or maps. Nesting deeper than msgpack's decoder goes (1,024 levels) cannot
    be read at all: `DecodeError`."""
    value = _unpack(data)
    if not isinstance(value, dict):
        raise DecodeError(f"a frame must be a msgpack map, not {type(value).__name__}")
    return value


def _unpack(data: bytes) -> Any:
    """Bytes to one msgpack value, or `DecodeError` (a map keyed by arrays or maps at the top:
    `SchemaError`)."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except TypeError:  # an unhashable key (an array or a map); read it again as pairs
        return _unpack_pairs(data)
    except msgpack.StackError:
        raise DecodeError("not a msgpack frame: nested too deep") from None
    except Exception as exc:  # msgpack raises a few bare exception types on garbage
        raise _not_msgpack(exc) from None


def _not_msgpack(exc: Exception) -> DecodeError:
    """The refusal of bytes msgpack could not read, saying why (a byte no value starts with,
    0xc1, comes with no message of its own)."""
    if isinstance(exc, msgpack.FormatError) and not str(exc):
        return DecodeError("not a msgpack frame: a byte no msgpack value starts with")
    return DecodeError(f"not a msgpack frame: {exc or type(exc).__name__}")


def _unpack_pairs(data: bytes) -> Any:
    """A frame whose maps have unhashable keys: a map at the top is a `SchemaError`."""
    try:
        value = msgpack.unpackb(
            data, raw=False, strict_map_key=False, object_pairs_hook=_Pairs, use_list=True
        )
    except Exception as exc:
        raise _not_msgpack(exc) from None
    if isinstance(value, _Pairs):
        kind = next((v for k, v in value if k == "type"), None)
        raise SchemaError("a map's keys must be strings", _request_type({"type": kind}))
    return value


#: The longest `type` a map may carry to be validated (and named in the answer): the longest
#: message type is far shorter.
MAX_TYPE_CHARS = 32


def _request_type(value: dict[str, Any]) -> str | None:
    kind = value.get("type")
    return kind if isinstance(kind, str) and len(kind) <= MAX_TYPE_CHARS else None


def _request_race(value: dict[str, Any]) -> str | None:
    """The map's `race_id`, if it is one a request may name (a string of 1 to
    `MAX_ID_CHARS` characters), for the reply to name it."""
    race_id = value.get("race_id")
    return race_id if isinstance(race_id, str) and 0 < len(race_id) <= MAX_ID_CHARS else None


def _not_a_message(value: dict[Any, Any]) -> SchemaError | None:
    """The refusal of a map no message is, whatever its values: one with a key that is not a
    string (a number, or binary: msgpack's bin type is bytes, not text), or one without a
    `type`; None for any other map. Said plainly, before pydantic's words about the union's
    tag ("Unable to extract tag using discriminator")."""
    if not all(isinstance(key, str) for key in value):
        return SchemaError("a map's keys must be strings", _request_type(value))
    if "type" not in value:
        return SchemaError('a message needs a "type"')
    return None


def _check_type(value: dict[str, Any]) -> None:
    """`SchemaError` for a `type` that is there but not a short string, before pydantic sees
    it: its error about an unknown tag quotes the tag's repr, and the repr of an array nested
    ~1,000 deep (msgpack reads up to 1,024) fails with a RecursionError that pydantic reports
    as an "Exception ignored" traceback on stderr (six lines a frame, for any client to flood
    the log with). Other fields are never repr'd: their errors say what was expected."""
    if "type" not in value or _request_type(value) is not None:
        return
    raise SchemaError(
        f"type: Input should be a message type (a string of at most {MAX_TYPE_CHARS} "
        f"characters), not {_wire_kind(value['type'])}"
    )


def _check_shape(value: dict[Any, Any]) -> None:
    """`SchemaError` for a map no message is (`_not_a_message`) or whose `type` is not a
    short string (`_check_type`)."""
    shape = _not_a_message(value)
    if shape is not None:
        raise shape
    _check_type(value)


def _wire_kind(value: Any) -> str:
    """What a decoded msgpack value is, in msgpack's terms (never its repr)."""
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, (dict, _Pairs)):
        return "a map"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, bytes):
        return "binary"
    if value is None:
        return "nil"
    return "an extension value"


#: The longest reason an `invalid_message` gives (its errors may quote the request).
MAX_REASON_CHARS = 1000


def _describe(exc: ValidationError, tag: str | None = None) -> str:
    """The first errors, each where (`move.seq`: the union's tag, then the field) and what."""
    parts = []
    for error in exc.errors()[:3]:
        loc = error["loc"] if tag is None else (tag, *error["loc"])
        where = ".".join(str(p) for p in loc) or "message"
        # A validator's own words, without pydantic's "Value error, " before them.
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    text = "; ".join(parts)
    # An error may quote what was sent (an unknown type's tag): never all of it back.
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _declared_map_size(data: bytes) -> int | None:
    """The entry count a frame's leading msgpack map header declares (map16 or map32;
    a fixmap holds at most 15), or None."""
    if len(data) >= 3 and data[0] == 0xDE:
        return int.from_bytes(data[1:3], "big")
    if len(data) >= 5 and data[0] == 0xDF:
        return int.from_bytes(data[1:5], "big")
    return None


def _too_many_fields(data: bytes, declared: int) -> SchemaError:
    """The refusal of a map (map16 or map32) declaring more entries than any message has
    fields, naming its type; `DecodeError` if the frame is not one msgpack map after all
    (truncated, or bytes after it: 1007 like any other). Never validated: thousands of
    unknown keys fit in a 16 KiB frame, an error each for pydantic. Its entries are read as
    one flat array of keys and values, not a dict: ~0.1 ms for 2,800 keys, a quarter of what
    a dict costs (msgpack interns a dict's string keys)."""
    body = data[3:] if data[0] == 0xDE else data[5:]
    flat: list[Any] = _unpack(b"\xdd" + (2 * declared).to_bytes(4, "big") + body)
    keys = flat[0::2]
    kind = None
    if "type" in keys:  # the last one, as a dict keeps it
        kind = flat[2 * (len(keys) - 1 - keys[::-1].index("type")) + 1]
    return SchemaError(
        f"a message has at most {MAX_CLIENT_FIELDS} fields, not {declared}",
        _request_type({"type": kind}),
    )


def decode_client(data: bytes) -> ClientMessage:
    """A frame from a client to its message; `DecodeError` or `SchemaError` if it is not one."""
    declared = _declared_map_size(data)
    if declared is not None and 2 * declared > len(data):  # an entry takes 2 bytes at least
        raise DecodeError(f"not a msgpack frame: a map of {declared} entries in {len(data)} bytes")
    if declared is not None and declared > MAX_CLIENT_FIELDS:
        raise _too_many_fields(data, declared)
    value = unpack_map(data)
    if value.get("type") == "move":
        # Most frames are moves: their model's validator directly, not the union's dispatch.
        # The same checks; errors get the tag the union puts first in their location.
        try:
            move: MakeMove = _MOVE_VALIDATOR.validate_python(value)
        except ValidationError as exc:
            shape = _not_a_message(value)  # checked here, off the path of valid moves
            if shape is not None:
                raise shape from None
            raise SchemaError(_describe(exc, "move"), "move", _request_race(value)) from None
        return move
    _check_shape(value)
    try:
        return CLIENT_ADAPTER.validate_python(value)
    except ValidationError as exc:
        raise SchemaError(_describe(exc), _request_type(value), _request_race(value)) from None


def decode_server(data: bytes) -> ServerMessage:
    """A frame from the server to its message (used by clients and tests)."""
    value = unpack_map(data)
    _check_shape(value)
    try:
        return SERVER_ADAPTER.validate_python(value)
    except ValidationError as exc:
        raise SchemaError(_describe(exc), _request_type(value)) from None
