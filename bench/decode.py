"""What the worst command frames cost the server to refuse, as ratios to reading a normal move.

    python bench/decode.py [--rounds N]

Every figure is measured in this run on this machine, so the ratios compare like with like.  A
command frame may hold up to ``MAX_FRAME`` (64 KiB); each candidate below is a frame of that
size (or a known bomb) built to make the decoder work: nested containers, long headers, the
most values the shape check lets through, long strings, garbage.  The goal (issue 11): the worst
costs about what ordinary garbage does, and no more than a small multiple of a normal move.
The figures for ``msgpack.unpackb`` with the limits the server used before are printed beside.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

import msgpack

from protocol.codec import MAX_FRAME, DecodeError, decode_command


def old_decode(frame: bytes) -> None:
    """The server's decoding before issue 11 (pydantic aside): limits not derived from the schema."""
    msgpack.unpackb(
        frame,
        raw=False,
        strict_map_key=True,
        max_str_len=MAX_FRAME,
        max_bin_len=0,
        max_array_len=4096,
        max_map_len=256,
        max_ext_len=0,
    )


def fill(unit: bytes) -> bytes:
    return (unit * (MAX_FRAME // len(unit) + 1))[:MAX_FRAME]


def candidates() -> dict[str, bytes]:
    f = MAX_FRAME
    rng = random.Random(11)
    flat = {"type": "list_rooms", "seq": 1} | {f"k{i}": i for i in range(14)}
    options = {f"o{i}": i for i in range(14)}
    deep_ok = {
        "type": "create_room",
        "seq": 1,
        "name": "Ann",
        "settings": {"options": options, **{f"s{i}": i for i in range(14)}},
    }
    return {
        "garbage (0xc1)": b"\xc1" * f,
        "random bytes": os.urandom(f),
        "random bytes (seeded)": bytes(rng.getrandbits(8) for _ in range(f)),
        "array16 bomb x1000": b"\xdc\x10\x00" * 1000,
        "array16 bomb, full": fill(b"\xdc\x10\x00"),
        "array32 header": b"\xdd\xff\xff\xff\xff" + b"\x00" * (f - 5),
        "map32 header": b"\xdf\xff\xff\xff\xff" + b"\x00" * (f - 5),
        "fixarray nest": fill(b"\x9f"),
        "fixarray(1) nest": fill(b"\x91"),
        "fixmap nest": fill(b"\x81\xa1a"),
        "map16 nest": fill(b"\xde\x01\x00"),
        "fixarray of ints, repeated": fill(b"\x9f" + b"\x00" * 15),
        "map of 16 + padding": b"\xde\x00\x10" + b"\xa1a\x00" * 16 + b"\x00" * (f - 51),
        "16 fields, flat": msgpack.packb(flat),
        "deepest allowed, full": msgpack.packb(deep_ok),
        "long string field": msgpack.packb({"type": "list_rooms", "seq": 1, "pad": "x" * (f - 40)}),
        "long name": msgpack.packb(
            {"type": "join_room", "seq": 1, "code": "ABCDEFGH", "name": "é" * (f // 2 - 40)}
        ),
        "str32 header, short": b"\xdb\xff\xff\xff\xff" + b"x" * (f - 5),
        "nested 5 (just too deep)": msgpack.packb(
            {"type": "list_rooms", "seq": 1, "x": {"a": {"b": {"c": {"d": 1}}}}}
        ),
    }


def cost(fn: Callable[[bytes], object], frame: bytes, rounds: int) -> float:
    """Median seconds per call over ``rounds`` batches."""
    batch = 50
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            with contextlib.suppress(DecodeError, ValueError, Exception):
                fn(frame)
        samples.append((time.perf_counter() - t0) / batch)
    return statistics.median(samples)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    move = msgpack.packb(
        {
            "type": "move",
            "seq": int(time.time() * 1000),
            "move": {"kind": "tableau", "src": 3, "dst": 7, "count": 0},
        }
    )
    base = cost(decode_command, move, args.rounds)
    old_base = cost(old_decode, move, args.rounds)
    garbage = cost(decode_command, os.urandom(MAX_FRAME), args.rounds)
    print(f"normal move command: {base * 1e6:.1f} us (decode_command, pydantic included)")
    print(f"64 KiB of random bytes: {garbage / base:.2f} x a move\n")
    print(f"{'frame':32} {'bytes':>6} {'now (x move)':>13} {'before (x move)':>16}  refused as")
    worst = ("", 0.0)
    for name, frame in candidates().items():
        now = cost(decode_command, frame, args.rounds)
        before = cost(old_decode, frame, max(3, args.rounds // 3))
        try:
            decode_command(frame)
            verdict = "accepted"
        except DecodeError as exc:
            verdict = f"{exc.code}: {exc.message[:38]}"
        print(f"{name:32} {len(frame):6d} {now / base:13.2f} {before / old_base:16.1f}  {verdict}")
        if now > worst[1]:
            worst = (name, now)
    print(
        f"\nworst now: {worst[0]}: {worst[1] / base:.2f} x a normal move, "
        f"{worst[1] / garbage:.2f} x random garbage ({worst[1] * 1e6:.1f} us)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
