"""msgpack frames <-> protocol messages.  Pure: bytes in, models out, and the reverse."""

from __future__ import annotations

from typing import Any

import msgpack
from pydantic import ValidationError

from .messages import WIRE, Command, Event

MAX_FRAME = 64 * 1024
"""Bytes in one frame; the server's websocket refuses larger frames (close code 1009)."""


class DecodeError(ValueError):
    """A frame that is not a valid message; ``code`` is the protocol error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _too_big(value: object) -> object:
    """msgpack integers hold 64 bits; a deal number reaches 10**20: send it as its decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def encode(message: Command | Event) -> bytes:
    return msgpack.packb(message.model_dump(mode="python"), use_bin_type=True, default=_too_big)


def decode(frame: bytes | str) -> Command | Event:
    """One message from one frame, or :class:`DecodeError` saying what is wrong with it."""
    if isinstance(frame, str):
        raise DecodeError("bad_frame", "frames are binary msgpack, not text")
    if len(frame) > MAX_FRAME:
        raise DecodeError("bad_frame", f"frame of {len(frame)} bytes is over {MAX_FRAME}")
    try:
        data: Any = msgpack.unpackb(
            frame,
            raw=False,
            strict_map_key=True,
            max_str_len=MAX_FRAME,
            max_bin_len=0,
            max_array_len=4096,
            max_map_len=256,
            max_ext_len=0,
        )
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise DecodeError("bad_frame", f"not a msgpack message ({type(exc).__name__})") from exc
    if not isinstance(data, dict):
        raise DecodeError("bad_message", "a message is a msgpack map with a 'type' field")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise DecodeError("bad_message", "a message needs a 'type' field naming it")
    try:
        return WIRE.validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if any(e["type"] == "union_tag_invalid" for e in errors):
            raise DecodeError("unknown_type", f"unknown message type {kind[:40]!r}") from exc
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        raise DecodeError("bad_message", f"{kind}: {where}: {first['msg']}") from exc
