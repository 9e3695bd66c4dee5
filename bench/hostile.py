"""A healthy pair of players against a real server while one attack at a time runs beside them.

    .venv/bin/python bench/hostile.py [--duration 8] [--rate 10]

Starts the race server as a subprocess (its default limits; commands at 200 a second so that
the bench's own clients are never the ones limited), then for each phase opens a new room of two
players racing Spider at ``--rate`` moves a second each and measures their acknowledgement
latency while the attack runs.  Attackers connect from 127.0.0.2 (loopback, another address),
so the per-address limits apply to them and not to the pair.

Phases: ``baseline`` (no attack); ``slow readers`` (24 clients that never read, spectators in a
room where two players toggle ``ready`` as fast as they may, the finding of issue 11);
``bombs`` (connections sending the worst msgpack frames, reconnecting when closed);
``records`` (30 connections fetching a finished race's record, each within its command rate);
``half-open`` (300 TCP connections that never start their handshake).  Printed: the pair's p50,
p99 and max, and what the attack got (bytes, closes, refusals) with the server's memory.
Nothing here asserts a timing; the goal (issue 11) is a p99 under 50 ms in every phase.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import socket
import statistics
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import load  # noqa: E402  (bench/load.py: the server process, players that make legal moves)

ATTACKER = "127.0.0.2"


def server_cmd() -> list[str]:
    return [
        sys.executable, "-m", "server.cli", "--port", "0", "--certified-deals", "0", "--db", ":memory:",
        "--log-level", "info", "--rate", "200", "--burst", "400", "--countdown-ms", "300",
        "--joins-per-minute", "600000", "--races-per-minute", "600000",
        "--resumes-per-minute", "600000", "--connects-per-second", "100000", "--loop", "asyncio",
    ]  # fmt: skip


async def attacker_socket(url: str, rcvbuf: int = 0) -> socket.socket:
    host, port = url.removeprefix("ws://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((ATTACKER, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return sock


async def attacker(url: str, rcvbuf: int = 0) -> ClientConnection:
    ws = await connect(
        url, sock=await attacker_socket(url, rcvbuf), ping_interval=None, max_size=None
    )
    await ws.send(load.pack({"type": "hello", "seq": 0, "version": "1.0"}))
    await ws.recv()
    return ws


def metric(url: str, name: str) -> float:
    text = load.scrape(url) or ""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


# -- the healthy pair ------------------------------------------------------------------------------


async def healthy_pair(url: str, rate: float, duration: float, seed: int) -> list[float]:
    stats = load.Stats()
    room = load.Room()
    ann = await load.open_player(url, room, stats)
    joined = await ann.request({"type": "create_room", "name": "Ann", "settings": {}})
    ann.id = joined["you"]
    bob = await load.open_player(url, room, stats)
    j = await bob.request({"type": "join_room", "code": joined["room"]["code"], "name": "Bob"})
    bob.id = j["you"]
    for p in (ann, bob):
        await p.request({"type": "ready", "ready": True})
    await asyncio.gather(ann.started.wait(), bob.started.wait())
    start = time.monotonic()
    rng = random.Random(seed)
    await asyncio.gather(
        *(p.play(random.Random(rng.random()), rate, start, start + duration) for p in (ann, bob))
    )
    for p in (ann, bob):
        p.closing = True
        await p.ws.close()
    if stats.disconnects or stats.errors:
        print(f"   (healthy pair: {stats.errors} errors, {stats.disconnects} disconnects)")
    return stats.latencies


# -- attacks ----------------------------------------------------------------------------------------


async def slow_readers(url: str, stop: asyncio.Event, report: dict[str, Any]) -> None:
    stats = load.Stats()
    room = load.Room()
    ann = await load.open_player(url, room, stats)
    joined = await ann.request({"type": "create_room", "name": "Ann", "settings": {"seats": 2}})
    code = joined["room"]["code"]
    bob = await load.open_player(url, room, stats)
    await bob.request({"type": "join_room", "code": code, "name": "Bob"})
    readers = []
    for i in range(24):
        ws = await attacker(url, rcvbuf=1024)
        await ws.send(
            load.pack(
                {"type": "join_room", "seq": 1, "code": code, "name": f"s{i}", "spectate": True}
            )
        )
        await ws.recv()
        ws.transport.pause_reading()
        readers.append(ws)
    toggles = 0
    while not stop.is_set():
        await ann.request({"type": "ready", "ready": toggles % 2 == 0})
        toggles += 1
        await asyncio.sleep(0.01)
    report["toggles"] = toggles
    report["readers cut (4413)"] = int(metric(url, 'patience_race_closes_total{code="4413"}'))
    report["server output pending"] = (
        f"{metric(url, 'patience_race_output_pending_bytes') / 1024:.0f} KiB"
    )
    for ws in readers:
        ws.transport.abort()
    for p in (ann, bob):
        p.closing = True
        await p.ws.close()


BOMBS = [
    b"\xdc\x10\x00" * 1000,
    b"\x9f" * 65536,
    (b"\xdc\x10\x00" * 21846)[:65536],
    b"\x81\xa1a" * 21845,
]


async def bombs(url: str, stop: asyncio.Event, report: dict[str, Any]) -> None:
    sent = 0

    async def one() -> None:
        nonlocal sent
        while not stop.is_set():
            try:
                ws = await attacker(url)
                while not stop.is_set():
                    await ws.send(BOMBS[sent % len(BOMBS)])
                    sent += 1
                    await ws.recv()
            except (ConnectionClosed, OSError):
                await asyncio.sleep(0.01)

    await asyncio.gather(*(one() for _ in range(4)))
    report["bombs sent"] = sent


async def records(url: str, stop: asyncio.Event, report: dict[str, Any], race_id: str) -> None:
    received = 0
    refused = 0

    async def one() -> None:
        nonlocal received, refused
        seq = 1
        while not stop.is_set():
            try:
                ws = await attacker(url)
                while not stop.is_set():
                    await ws.send(load.pack({"type": "get_race", "seq": seq, "race_id": race_id}))
                    seq += 1
                    frame = await ws.recv()
                    received += len(frame)
                    if isinstance(frame, bytes) and b"rate_limited" in frame[:64]:
                        refused += 1
                    await asyncio.sleep(1 / 15)  # within the command rate
                await ws.close()
            except (ConnectionClosed, OSError):
                await asyncio.sleep(0.1)  # (refused: over the address's limit) try again

    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(30)))
    report["record bytes/s"] = f"{received / (time.monotonic() - t0) / 1024:.0f} KiB"
    report["refused"] = refused


async def half_open(url: str, stop: asyncio.Event, report: dict[str, Any]) -> None:
    socks = []
    refused = 0
    for _ in range(300):
        try:
            socks.append(await attacker_socket(url))
        except OSError:
            refused += 1
    await stop.wait()
    for s in socks:
        try:
            if s.recv(1) == b"":
                refused += 1
        except BlockingIOError:
            pass
        except OSError:
            refused += 1
        s.close()
    report["dropped at once or timed out"] = f"{refused} of 300"


# -- the run ---------------------------------------------------------------------------------------


async def phase(
    name: str,
    url: str,
    pid: int,
    args: argparse.Namespace,
    attack: Callable[[asyncio.Event, dict[str, Any]], Awaitable[None]] | None,
) -> None:
    stop = asyncio.Event()
    report: dict[str, Any] = {}
    rss0 = load.rss_bytes(pid)
    task = asyncio.create_task(attack(stop, report)) if attack else None
    await asyncio.sleep(0.5 if attack else 0)
    lat = await healthy_pair(url, args.rate, args.duration, seed=len(name))
    rss1 = load.rss_bytes(pid)
    stop.set()
    if task is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    extra = ", ".join(f"{k} {v}" for k, v in report.items())
    print(
        f"{name:13} acks {len(lat):5d}  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
        f"max {lat[-1] * 1000 if lat else 0:7.2f} ms  RSS {rss0 / 2**20:6.1f} -> "
        f"{rss1 / 2**20:6.1f} MiB  {extra}"
    )


async def run(args: argparse.Namespace) -> None:
    proc, url = load.start(server_cmd())
    try:
        http = url.replace("ws://", "http://")
        # a finished race with a record of some size, for the record phase
        race_id = await make_record(url, args.record_moves)
        with urllib.request.urlopen(f"{http}/races/{race_id}") as r:
            size = len(r.read())
        print(f"server {url} (pid {proc.pid}); record {race_id}: {size / 1024:.0f} KiB of JSON\n")
        await phase("baseline", url, proc.pid, args, None)
        await phase("slow readers", url, proc.pid, args, lambda s, r: slow_readers(url, s, r))
        await phase("bombs", url, proc.pid, args, lambda s, r: bombs(url, s, r))
        await phase("records", url, proc.pid, args, lambda s, r: records(url, s, r, race_id))
        await phase("half-open", url, proc.pid, args, lambda s, r: half_open(url, s, r))
        closes = [
            line
            for line in (load.scrape(url) or "").splitlines()
            if line.startswith(("patience_race_closes_total", "patience_race_refused_total"))
        ]
        print("\n" + "\n".join(closes))
    finally:
        proc.terminate()
        proc.wait(10)


async def make_record(url: str, moves: int) -> str:
    stats = load.Stats()
    room = load.Room()
    ann = await load.open_player(url, room, stats)
    joined = await ann.request({"type": "create_room", "name": "Ann", "settings": {}})
    ann.id = joined["you"]
    bob = await load.open_player(url, room, stats)
    j = await bob.request({"type": "join_room", "code": joined["room"]["code"], "name": "Bob"})
    bob.id = j["you"]
    for p in (ann, bob):
        await p.request({"type": "ready", "ready": True})
    await asyncio.gather(ann.started.wait(), bob.started.wait())
    start = time.monotonic()
    span = moves / 150
    await asyncio.gather(
        *(p.play(random.Random(i), 150, start, start + span) for i, p in enumerate((ann, bob)))
    )
    watcher = await load.open_player(url, room, stats)
    seen = await watcher.request(
        {"type": "join_room", "code": joined["room"]["code"], "name": "W", "spectate": True}
    )
    race_id = str(seen["room"]["race_id"])
    for p in (ann, bob):
        await p.request({"type": "move", "move": {"kind": "resign"}})
    await asyncio.sleep(0.3)  # the race ends
    for p in (ann, bob, watcher):
        p.closing = True
        await p.ws.close()
    return race_id


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=8.0, help="seconds per phase")
    p.add_argument("--rate", type=float, default=10.0, help="moves a second per healthy player")
    p.add_argument(
        "--record-moves", type=int, default=1500, help="moves a player in the fetched record"
    )
    args = p.parse_args()
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
