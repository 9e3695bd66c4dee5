"""msgpack frames <-> protocol messages.  Pure: bytes in, models out, and the reverse.

Limits are per direction.  Commands (client to server) are small, flat maps: the server reads
them with :func:`decode_command`, whose limits come from the schema (no command holds an
array, a map of more than a dozen fields or anything nested more than three deep), so that the
worst frame of the size limit costs about what ordinary garbage costs to refuse.  Events
(server to client) can be large, a race record above all: :func:`decode` reads them with
generous limits that are still bounded (:data:`MAX_EVENT_FRAME`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgpack
from pydantic import ValidationError

from .messages import WIRE, Command, ErrorCode, Event

MAX_FRAME = 64 * 1024
"""Bytes in one command frame; the server's websocket refuses larger frames (close code 1009)."""

MAX_EVENT_FRAME = 16 * 1024 * 1024
"""Bytes in one event frame the server sends (a race record is the largest); clients read up to
this.  A record that would not fit is refused (``record_too_large``): fetch it over HTTP."""

MAX_COMMAND_DEPTH = 4
"""Containers nested in a command: ``create_room`` holds ``settings`` holding ``options`` (3)."""

MAX_COMMAND_STR = 1024
"""Bytes in one string of a command: the longest field (``client``, a name) is 64 characters."""

MAX_COMMAND_OBJECTS = 128
"""msgpack objects (keys, values, containers) in one command: the largest has about 40."""


@dataclass(frozen=True)
class DecodeLimits:
    max_frame: int
    max_str_len: int
    max_array_len: int
    max_map_len: int
    check_shape: bool
    """Walk a frame that could nest deeper than :data:`MAX_COMMAND_DEPTH` before unpacking it."""
    drop_unknown_fields: bool = False
    """Read a message with fields this version does not know as if they were not there: a newer
    minor version of the protocol only adds optional fields, which a client ignores
    (docs/protocol.md, Versioning).  A server never does: a command is exactly its schema."""


COMMAND_LIMITS = DecodeLimits(
    max_frame=MAX_FRAME,
    # the longest string a command holds is 64 characters (256 bytes of UTF-8): a longer name is
    # refused by the schema, with the command's seq, but a string past this is not decoded at all
    # (decoding 64 KiB of UTF-8 costs twenty normal moves)
    max_str_len=MAX_COMMAND_STR,
    max_array_len=16,
    max_map_len=16,  # the most fields a command (or its settings) has is 9
    check_shape=True,
)
EVENT_LIMITS = DecodeLimits(
    max_frame=MAX_EVENT_FRAME,
    max_str_len=MAX_EVENT_FRAME,
    max_array_len=1 << 20,  # a record's move list: past 4,096 moves a player
    max_map_len=4096,
    check_shape=False,
    drop_unknown_fields=True,
)


class DecodeError(ValueError):
    """A frame that is not a valid message; ``code`` is the protocol error code, ``seq`` the
    command's sequence number when the frame could be read far enough to find it."""

    def __init__(self, code: ErrorCode, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.seq = seq


def _too_big(value: object) -> object:
    """msgpack integers hold 64 bits; a deal number reaches 10**20: send it as its decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def encode(message: Command | Event) -> bytes:
    return msgpack.packb(message.model_dump(mode="python"), use_bin_type=True, default=_too_big)


def encode_value(value: Any) -> bytes:
    """Any plain value (a dumped model) as msgpack, big integers as strings like :func:`encode`."""
    return msgpack.packb(value, use_bin_type=True, default=_too_big)


# -- the shape check ---------------------------------------------------------------------------

_CONTAINER_BYTES = bytes([*range(0x80, 0xA0), 0xDC, 0xDD, 0xDE, 0xDF])
_NOT_CONTAINER = bytes(b for b in range(256) if b not in _CONTAINER_BYTES)

# bytes following the type byte, for fixed-size types
_FIXED = {
    0xC0: 0, 0xC2: 0, 0xC3: 0,  # nil, false, true
    0xCA: 4, 0xCB: 8,  # float 32/64
    0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,  # uint
    0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8,  # int
}  # fmt: skip
# (length bytes) for str/bin/ext with a length field
_SIZED = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}


class _Shape(Exception):
    pass


def _check_shape(frame: bytes, max_depth: int, max_objects: int) -> None:
    """Refuse a frame nested deeper than ``max_depth`` or holding more than ``max_objects``
    objects, reading only type bytes and lengths (strings are skipped, never copied).

    Most frames skip this: a frame can only nest as deep as it has bytes that could be container
    headers, and for a small frame one C pass (``bytes.translate``) counts those.  A large one is
    walked at once: the walk stops within ``max_objects`` values, whatever the frame's size."""
    if len(frame) <= 2048 and len(frame.translate(None, _NOT_CONTAINER)) <= max_depth:
        return
    pos = 0
    end = len(frame)
    # remaining items of each open container, innermost last
    stack: list[int] = []
    objects = 0
    while True:
        if pos >= end:
            raise _Shape("truncated")
        b = frame[pos]
        pos += 1
        objects += 1
        if objects > max_objects:
            raise _Shape(f"more than {max_objects} values")
        items = 0
        if b <= 0x7F or b >= 0xE0:
            pass
        elif b <= 0x8F:
            items = 2 * (b & 0x0F)
        elif b <= 0x9F:
            items = b & 0x0F
        elif b <= 0xBF:
            pos += b & 0x1F
        elif b in _FIXED:
            pos += _FIXED[b]
        elif b in _SIZED:
            n = _SIZED[b]
            pos += n + int.from_bytes(frame[pos : pos + n], "big")
        elif b in (0xDC, 0xDE):
            items = int.from_bytes(frame[pos : pos + 2], "big") * (2 if b == 0xDE else 1)
            pos += 2
        elif b in (0xDD, 0xDF):
            items = int.from_bytes(frame[pos : pos + 4], "big") * (2 if b == 0xDF else 1)
            pos += 4
        else:  # ext types and the reserved byte: refused by the unpacker anyway
            raise _Shape("not a command value")
        if items:
            if len(stack) >= max_depth:
                raise _Shape(f"nested deeper than {max_depth}")
            if items > max_objects:
                raise _Shape(f"more than {max_objects} values")
            stack.append(items)
            continue
        # a value is complete: close every container it completes
        while stack:
            stack[-1] -= 1
            if stack[-1]:
                break
            stack.pop()
        if not stack:
            return  # the top-level value is complete (trailing bytes: the unpacker says)


# -- decoding --------------------------------------------------------------------------------


def decode(frame: bytes | str, limits: DecodeLimits = EVENT_LIMITS) -> Command | Event:
    """One message from one frame, or :class:`DecodeError` saying what is wrong with it.

    The default limits are an event's (what a client reads); the server reads commands with
    :func:`decode_command`."""
    if isinstance(frame, str):
        raise DecodeError("bad_frame", "frames are binary msgpack, not text")
    if len(frame) > limits.max_frame:
        raise DecodeError("bad_frame", f"frame of {len(frame)} bytes is over {limits.max_frame}")
    try:
        if limits.check_shape:
            _check_shape(frame, MAX_COMMAND_DEPTH, MAX_COMMAND_OBJECTS)
        data: Any = msgpack.unpackb(
            frame,
            raw=False,
            strict_map_key=True,
            max_str_len=limits.max_str_len,
            max_bin_len=0,
            max_array_len=limits.max_array_len,
            max_map_len=limits.max_map_len,
            max_ext_len=0,
        )
    except _Shape as exc:
        raise DecodeError("bad_frame", f"not a command: {exc}") from None
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise DecodeError("bad_frame", _unreadable(exc)) from exc
    if not isinstance(data, dict):
        raise DecodeError("bad_frame", "a message is a msgpack map with a 'type' field")
    raw_seq = data.get("seq")
    seq = (
        raw_seq
        if type(raw_seq) is int and 0 <= raw_seq <= 2**53  # the schema's Seq
        else None
    )
    kind = data.get("type")
    if not isinstance(kind, str):
        # no command to speak of: nothing to answer by its seq
        raise DecodeError("bad_message", "a message needs a 'type' field naming it")
    try:
        return _validate(data, limits.drop_unknown_fields)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if any(e["type"] == "union_tag_invalid" for e in errors):
            raise DecodeError("unknown_type", f"unknown message type {kind[:40]!r}", seq) from exc
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        # a name the schema refuses (too long, not a string) is a bad name, as the hub would say
        too = first["type"] in ("string_too_long", "string_too_short")
        code: ErrorCode = "bad_name" if too and first["loc"][-1:] == ("name",) else "bad_message"
        raise DecodeError(code, f"{kind[:40]}: {where}: {first['msg']}", seq) from exc


def _validate(data: dict[str, Any], drop_unknown_fields: bool) -> Command | Event:
    """The message ``data`` holds; with ``drop_unknown_fields``, the fields the schema does not
    know (and only those) taken out first, where the schema says they are."""
    try:
        return WIRE.validate_python(data)
    except ValidationError as exc:
        if not drop_unknown_fields:
            raise
        errors = exc.errors(include_url=False)
        if not all(e["type"] == "extra_forbidden" for e in errors):
            raise
        for e in errors:
            _drop(data, e["loc"][1:])  # loc[0] is the union's tag: the message type
        return WIRE.validate_python(data)


def _drop(data: Any, loc: tuple[int | str, ...]) -> None:
    """Take the field at ``loc`` out of the nested maps and arrays of ``data``.  A step of
    ``loc`` that is no key there is a union's tag (pydantic names the member it tried): skipped."""
    *path, last = loc
    for key in path:
        in_map = isinstance(data, dict) and key in data
        in_list = isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data)
        if in_map or in_list:
            data = data[key]
    if isinstance(data, dict):
        data.pop(last, None)


_PAST_LIMIT = re.compile(r"(\d+) exceeds max_(str|bin|array|map|ext)_len\((\d+)\)")
_WHAT = {
    "str": "a string of {n} bytes: at most {limit}",
    "array": "an array of {n} items: at most {limit}",
    "map": "a map of {n} fields: at most {limit}",
    "bin": "a binary value: none allowed",
    "ext": "an extension value: none allowed",
}


def _unreadable(exc: Exception) -> str:
    """Why msgpack could not read a frame, in words: which limit it is past, or that it is not
    msgpack at all."""
    past = _PAST_LIMIT.search(str(exc)) if isinstance(exc, ValueError) else None
    if past is None:
        return f"not a msgpack message ({type(exc).__name__})"
    n, kind, limit = past.groups()
    return "past a limit: " + _WHAT[kind].format(n=f"{int(n):,}", limit=f"{int(limit):,}")


def decode_command(frame: bytes | str) -> Command | Event:
    """A frame from a client, read with the strict :data:`COMMAND_LIMITS`."""
    return decode(frame, COMMAND_LIMITS)
