"""Load test: how far one race server process goes, against a bare echo server in the same run.

    .venv/bin/python bench/load.py --rooms 250 --players 8 --rate 1 --duration 30

Starts the race server as a subprocess (or targets ``--server URL``, without CPU and memory
figures), opens R rooms of P players (plus S spectators each) over real WebSockets on loopback,
races them on Spider with each player making random legal moves at ``--rate`` moves a second
(one in flight at a time, as a person plays), for ``--duration`` seconds, and reports:

- moves acknowledged per second; acknowledgement latency p50 / p95 / p99 / max;
- progress broadcast delay: from a move's acknowledgement to the first progress event showing it
  at each other player of the room;
- errors and disconnects (must be zero) and moves lost (acknowledged but not counted by the server);
- server CPU per acknowledged move and resident memory per connection (from /proc).

Then the same clients drive ``bench/echo_server.py`` with frames of the same size at the same
rate, and every figure is also printed as a ratio to the echo's.  Everything is bounded in count
and time and stops by itself; all traffic stays on 127.0.0.1.  ``--check`` exits non-zero on any
error, disconnect or lost move (the CI smoke test), never on timing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing as mp
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from protocol import cards  # noqa: E402
from protocol.config import GameConfig  # noqa: E402
from protocol.game import GameState, state_class  # noqa: E402
from protocol.messages import PROTOCOL_VERSION, BoardView  # noqa: E402
from protocol.moves import Kind, Move, Placed  # noqa: E402

KINDS = {Kind.TABLEAU: "tableau", Kind.FOUNDATION: "foundation", Kind.DEAL: "deal"}
CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def pack(d: dict[str, Any]) -> bytes:
    return msgpack.packb(d, use_bin_type=True)


# -- the server process ------------------------------------------------------------------


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"(ws://127\.0\.0\.1:\d+)", line)
        if m:
            # keep draining stderr so the server never blocks on a full pipe
            import threading

            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
            return proc, m.group(1)
    proc.kill()
    raise SystemExit(f"the server did not start: {' '.join(cmd)}")


def race_server_cmd(args: argparse.Namespace) -> list[str]:
    profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
    return [
        sys.executable, *profile, "-m", "server.cli", "--port", "0", "--certified-deals", "0", "--db", args.db,
        "--log-level", "info", "--log-format", "text",
        "--max-connections", "50000", "--max-per-address", "50000", "--max-rooms", "10000",
        "--max-rooms-per-address", "10000", "--rooms-per-minute", "600000",
        "--joins-per-minute", "600000", "--resumes-per-minute", "600000",
        "--connects-per-second", "100000",
        "--races-per-minute", "600000",
        "--rate", "200", "--burst", "400", "--countdown-ms", "300",
        "--loop", args.loop,
    ]  # fmt: skip


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


# -- one client process: some of the rooms ----------------------------------------------------


@dataclass
class Stats:
    acked: int = 0
    latencies: list[float] = field(default_factory=list)
    broadcast: list[float] = field(default_factory=list)
    errors: int = 0
    disconnects: int = 0
    stuck: int = 0
    connections: int = 0
    cpu: float = 0.0
    """CPU seconds this client process spent during the measured window."""
    error_samples: list[str] = field(default_factory=list)


class Player:
    def __init__(self, ws: ClientConnection, room: Room, stats: Stats, watch: bool = False) -> None:
        self.ws = ws
        self.room = room
        self.stats = stats
        self.watch = watch
        self.id = -1
        self.seq = 0
        self.state: GameState | None = None
        self.started = asyncio.Event()
        self.waiting: asyncio.Future[tuple[float, dict[str, Any]]] | None = None
        self.seen: dict[int, int] = {}
        self.measuring = False
        self.closing = False

    async def request(self, d: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        d["seq"] = self.seq
        self.waiting = asyncio.get_running_loop().create_future()
        await self.ws.send(pack(d))
        _, answer = await asyncio.wait_for(self.waiting, 30)
        return answer

    async def read(self) -> None:
        try:
            async for frame in self.ws:
                now = time.monotonic()
                d = msgpack.unpackb(frame, raw=False)
                t = d["type"]
                if ("seq" in d and t != "error") or (t == "error" and d.get("seq") is not None):
                    if self.waiting is not None and not self.waiting.done():
                        self.waiting.set_result((now, d))
                    if t == "error":
                        self.stats.errors += 1
                        if len(self.stats.error_samples) < 5:
                            self.stats.error_samples.append(f"{d['code']}: {d['message']}")
                elif t == "progress":
                    self.on_progress(now, d)
                elif t == "race_start":
                    if d["board"] is not None:
                        view = BoardView.model_validate(d["board"])
                        config = GameConfig(view.game, view.options)
                        self.state = state_class(config).from_view(config, view)
                    self.started.set()
                elif t == "error":
                    self.stats.errors += 1
        except ConnectionClosed:
            if not self.closing:
                self.stats.disconnects += 1

    def on_progress(self, now: float, d: dict[str, Any]) -> None:
        for p in d["players"]:
            pid, moves = p["id"], p["moves"]
            last = self.seen.get(pid, 0)
            if moves > last:
                self.seen[pid] = moves
                if pid != self.id and self.measuring:
                    for n in range(last + 1, moves + 1):
                        t = self.room.acks.get((pid, n))
                        if t is not None:
                            self.stats.broadcast.append(now - t)

    def choose(self, rng: random.Random) -> Move | None:
        state = self.state
        assert state is not None
        legal = state.legal_moves()
        if not legal:
            return None
        plays = [m for m in legal if m.kind != Kind.DEAL]
        if plays and rng.random() < 0.97:
            return rng.choice(plays)
        return rng.choice(legal)

    async def play(self, rng: random.Random, rate: float, start: float, end: float) -> None:
        interval = 1 / rate
        t_next = start + rng.random() * interval
        while True:
            now = time.monotonic()
            if t_next >= end:
                return
            if t_next > now:
                await asyncio.sleep(t_next - now)
            t_next += interval * rng.uniform(0.9, 1.1)
            move = self.choose(rng)
            if move is None:
                self.stats.stuck += 1
                return
            t0 = time.monotonic()
            wire = {"kind": KINDS[move.kind], "src": move.src, "dst": move.dst, "count": move.count}
            answer = await self.request({"type": "move", "move": wire})
            t1 = time.monotonic()
            if answer["type"] != "moved":
                continue
            self.stats.acked += 1
            self.stats.latencies.append(t1 - t0)
            state = self.state
            assert state is not None
            state.apply(move)
            for s in answer["shown"]:
                state.show(Placed(s["pile"], s["index"], cards.parse(s["card"])))
            self.room.acks[(self.id, state.moves)] = t1


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """No garbage collection in a load process during the measured window: its pauses would
    show as server latency.  (The window is bounded; the process ends soon after.)"""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


@dataclass
class Room:
    acks: dict[tuple[int, int], float] = field(default_factory=dict)


async def open_player(url: str, room: Room, stats: Stats, watch: bool = False) -> Player:
    ws = await connect(url, max_size=2**20, open_timeout=30, ping_interval=None)
    stats.connections += 1
    p = Player(ws, room, stats, watch)
    asyncio.get_running_loop().create_task(p.read())
    await p.request({"type": "hello", "version": PROTOCOL_VERSION, "client": "bench"})
    return p


async def race_rooms(url: str, n_rooms: int, players: int, spectators: int, game: dict[str, Any],
                     rate: float, duration: float, barrier: Any, go: Any, seed: int) -> dict[str, Any]:  # fmt: skip
    stats = Stats()
    rng = random.Random(seed)
    everyone: list[Player] = []
    racers: list[Player] = []

    async def one_room() -> None:
        room = Room()
        host = await open_player(url, room, stats)
        joined = await host.request({"type": "create_room", "name": "p0", "settings": game})
        host.id = joined["you"]
        code = joined["room"]["code"]
        members = [host]
        for i in range(1, players):
            p = await open_player(url, room, stats)
            j = await p.request(
                {"type": "join_room", "code": code, "name": f"p{i}", "spectate": False}
            )
            p.id = j["you"]
            members.append(p)
        for i in range(spectators):
            s = await open_player(url, room, stats, watch=True)
            await s.request({"type": "join_room", "code": code, "name": f"s{i}", "spectate": True})
            everyone.append(s)
        everyone.extend(members)
        racers.extend(members)
        for p in members:
            await p.request({"type": "ready", "ready": True})

    sem = asyncio.Semaphore(20)

    async def limited() -> None:
        async with sem:
            await one_room()

    await asyncio.gather(*(limited() for _ in range(n_rooms)))
    await asyncio.gather(*(p.started.wait() for p in racers))
    await asyncio.to_thread(
        barrier.wait
    )  # every client process set up: the parent samples the server
    start = await asyncio.to_thread(go.get)  # the measurement window, from the parent
    for p in everyone:
        p.measuring = True
    end = start + duration
    cpu0 = time.process_time()
    with quiet_gc():
        await asyncio.gather(
            *(p.play(random.Random(rng.random()), rate, start, end) for p in racers)
        )
    stats.cpu = time.process_time() - cpu0
    await asyncio.sleep(0.5)  # the last progress events
    for p in everyone:
        p.closing = True
    await asyncio.gather(*(p.ws.close() for p in everyone), return_exceptions=True)
    return stats.__dict__


async def echo_clients(url: str, rooms: int, players: int, spectators: int, size: int, rate: float, duration: float, barrier: Any, go: Any, seed: int) -> dict[str, Any]:  # fmt: skip
    """The same connections as the race (players send, spectators stay idle), echoing frames."""
    stats = Stats()
    rng = random.Random(seed)
    frame = os.urandom(size)
    conns = []
    idle = []
    for _ in range(rooms):
        for _ in range(players):
            conns.append(await connect(url, max_size=2**20, open_timeout=30, ping_interval=None))
        for _ in range(spectators):
            idle.append(await connect(url, max_size=2**20, open_timeout=30, ping_interval=None))
    stats.connections = len(conns) + len(idle)
    await asyncio.to_thread(barrier.wait)
    start = await asyncio.to_thread(go.get)
    end = start + duration
    cpu0 = time.process_time()

    async def loop(ws: ClientConnection, r: random.Random) -> None:
        interval = 1 / rate
        t_next = start + r.random() * interval
        try:
            while t_next < end:
                now = time.monotonic()
                if t_next > now:
                    await asyncio.sleep(t_next - now)
                t_next += interval * r.uniform(0.9, 1.1)
                t0 = time.monotonic()
                await ws.send(frame)
                await ws.recv()
                stats.latencies.append(time.monotonic() - t0)
                stats.acked += 1
        except ConnectionClosed:
            stats.disconnects += 1

    with quiet_gc():
        await asyncio.gather(*(loop(ws, random.Random(rng.random())) for ws in conns))
    stats.cpu = time.process_time() - cpu0
    await asyncio.gather(*(ws.close() for ws in conns + idle), return_exceptions=True)
    return stats.__dict__


def worker(kind: str, url: str, share: int, args: argparse.Namespace, barrier: Any, go: Any, out: Any, seed: int) -> None:  # fmt: skip
    game = {"game": "spider", "options": {"suits": args.suits}, "seats": max(2, args.players)}
    try:
        if kind == "race":
            result = asyncio.run(
                race_rooms(
                    url,
                    share,
                    args.players,
                    args.spectators,
                    game,
                    args.rate,
                    args.duration,
                    barrier,
                    go,
                    seed,
                )
            )
        else:
            result = asyncio.run(
                echo_clients(
                    url,
                    share,
                    args.players,
                    args.spectators,
                    args.frame,
                    args.rate,
                    args.duration,
                    barrier,
                    go,
                    seed,
                )
            )
    except Exception as exc:  # report, do not hang the parent
        barrier.abort()
        result = {"failed": f"{type(exc).__name__}: {exc}"}
    out.put(result)


# -- the parent: one run against one server ------------------------------------------------------


def run(kind: str, url: str, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    procs = args.procs
    units = args.rooms
    shares = [units // procs + (1 if i < units % procs else 0) for i in range(procs)]
    shares = [s for s in shares if s]
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(shares) + 1)
    go = ctx.Queue()
    out = ctx.Queue()
    rss_idle = rss_bytes(pid) if pid else 0
    workers = [
        ctx.Process(target=worker, args=(kind, url, s, args, barrier, go, out, args.seed + i))
        for i, s in enumerate(shares)
    ]
    t_setup = time.monotonic()
    for w in workers:
        w.start()
    try:
        barrier.wait(timeout=max(60, units * 0.2))
    except Exception:
        results = [out.get(timeout=5) for _ in workers if not out.empty()]
        raise SystemExit(f"{kind}: clients failed to set up: {results}") from None
    setup_s = time.monotonic() - t_setup
    rss_loaded = rss_bytes(pid) if pid else 0
    start = time.monotonic() + 0.2
    for _ in workers:
        go.put(start)
    metrics0 = scrape(url) if kind == "race" else None
    cpu0 = cpu_seconds(pid) if pid else 0.0
    time.sleep(max(0.0, start + args.duration - time.monotonic()))
    cpu1 = cpu_seconds(pid) if pid else 0.0
    metrics1 = scrape(url) if kind == "race" else None
    results = [out.get(timeout=args.duration + 120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    failed = [r["failed"] for r in results if "failed" in r]
    if failed:
        raise SystemExit(f"{kind}: a client process failed: {failed}")
    merged = Stats()
    for r in results:
        for k, v in r.items():
            cur = getattr(merged, k)
            setattr(merged, k, cur + v)
    lat = sorted(merged.latencies)
    bc = sorted(merged.broadcast)

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")

    conns = merged.connections
    result = {
        "kind": kind,
        "connections": conns,
        "setup_s": setup_s,
        "acked": merged.acked,
        "acked_per_s": merged.acked / args.duration,
        "lat_p50": pct(lat, 0.50), "lat_p95": pct(lat, 0.95), "lat_p99": pct(lat, 0.99),
        "lat_max": lat[-1] * 1000 if lat else float("nan"),
        "bc_p50": pct(bc, 0.50), "bc_p95": pct(bc, 0.95), "bc_p99": pct(bc, 0.99),
        "bc_max": bc[-1] * 1000 if bc else float("nan"),
        "errors": merged.errors, "error_samples": merged.error_samples,
        "disconnects": merged.disconnects, "stuck": merged.stuck,
        "cpu_s": cpu1 - cpu0,
        "cpu_us_per_msg": (cpu1 - cpu0) / merged.acked * 1e6 if merged.acked and pid else float("nan"),
        "cpu_share": (cpu1 - cpu0) / args.duration if pid else float("nan"),
        "client_cpu_share": merged.cpu / args.duration / len(shares),
        "rss_idle_mib": rss_idle / 2**20,
        "rss_loaded_mib": rss_loaded / 2**20,
        "kib_per_conn": (rss_loaded - rss_idle) / 1024 / conns if pid and conns else float("nan"),
        **server_side(metrics0, metrics1),
    }  # fmt: skip
    if kind == "echo":  # one frame in and one out per message
        result["frames_per_move"] = 1.0
        frames = 2 * merged.acked
    else:
        sent, received = result.get("srv_frames_sent"), result.get("srv_frames_received")
        result["frames_per_move"] = sent / merged.acked if sent and merged.acked else float("nan")
        frames = (sent or 0) + (received or 0)
    result["cpu_us_per_frame"] = result["cpu_s"] / frames * 1e6 if frames and pid else float("nan")
    return result


def scrape(url: str) -> str | None:
    """The server's /metrics page (None if it has none)."""
    http = url.replace("ws://", "http://").replace("wss://", "https://") + "/metrics"
    try:
        return urllib.request.urlopen(http, timeout=5).read().decode()
    except OSError:
        return None


def buckets(text: str, name: str) -> list[tuple[float, int]]:
    return [
        (float(le), int(n))
        for le, n in re.findall(rf'^{name}_bucket{{le="([^"]+)"}} (\d+)$', text, re.M)
    ]


def bucket_quantile(
    before: list[tuple[float, int]], after: list[tuple[float, int]], q: float
) -> float:
    """The upper bound (ms) of the bucket holding quantile ``q`` of what was observed between
    two scrapes of a cumulative Prometheus histogram."""
    old = dict(before)
    delta = [(le, n - old.get(le, 0)) for le, n in after]
    total = delta[-1][1] if delta else 0
    if not total:
        return float("nan")
    for le, n in delta:
        if n >= q * total:
            return le * 1000
    return float("inf")


def server_side(before: str | None, after: str | None) -> dict[str, Any]:
    """What the server measured itself during the window: command handling and loop lag."""
    out: dict[str, Any] = {}
    if not before or not after:
        return out
    for key, name in (
        ("srv_cmd", "patience_race_command_seconds"),
        ("srv_lag", "patience_race_loop_lag_seconds"),
        ("srv_gcp", "patience_race_gc_pause_seconds"),
    ):
        b, a = buckets(before, name), buckets(after, name)
        if a:
            out[f"{key}_p50"] = bucket_quantile(b, a, 0.50)
            out[f"{key}_p99"] = bucket_quantile(b, a, 0.99)
            out[f"{key}_max"] = bucket_quantile(b, a, 1.0)
    for direction in ("sent", "received"):
        pattern = rf'^patience_race_frames_total{{direction="{direction}"}} (\d+)$'
        b, a = re.search(pattern, before, re.M), re.search(pattern, after, re.M)
        if a and b:
            out[f"srv_frames_{direction}"] = int(a.group(1)) - int(b.group(1))
    for gen in (0, 1, 2):
        pattern = rf'^patience_race_gc_collections_total{{generation="{gen}"}} (\d+)$'
        b, a = re.search(pattern, before, re.M), re.search(pattern, after, re.M)
        if a and b:
            out[f"srv_gc{gen}"] = int(a.group(1)) - int(b.group(1))
    return out


def server_moves_ok(url: str) -> int | None:
    text = scrape(url)
    if text is None:
        return None
    m = re.search(r'patience_race_moves_total\{result="ok"\} (\d+)', text)
    return int(m.group(1)) if m else 0


def report(race: dict[str, Any], echo: dict[str, Any] | None, args: argparse.Namespace) -> None:
    def ratio(key: str) -> str:
        if echo is None or not echo.get(key) or echo[key] != echo[key]:
            return ""
        return f"{race[key] / echo[key]:.2f}x"

    print(f"\nload: {args.rooms} rooms x {args.players} players + {args.spectators} spectators each "
          f"= {race['connections']} connections, {args.rate:g} moves/s each, {args.duration:g} s, Spider {args.suits} suit(s)")  # fmt: skip
    rows = [
        ("moves acknowledged / s", "acked_per_s", "{:,.0f}"),
        ("ack latency p50 (ms)", "lat_p50", "{:.1f}"),
        ("ack latency p95 (ms)", "lat_p95", "{:.1f}"),
        ("ack latency p99 (ms)", "lat_p99", "{:.1f}"),
        ("ack latency max (ms)", "lat_max", "{:.1f}"),
        ("progress delay p50 (ms)", "bc_p50", "{:.1f}"),
        ("progress delay p95 (ms)", "bc_p95", "{:.1f}"),
        ("progress delay p99 (ms)", "bc_p99", "{:.1f}"),
        ("progress delay max (ms)", "bc_max", "{:.1f}"),
        ("server CPU per move (us)", "cpu_us_per_msg", "{:.0f}"),
        ("frames sent per move", "frames_per_move", "{:.2f}"),
        ("server CPU per frame in or out (us)", "cpu_us_per_frame", "{:.0f}"),
        ("server CPU busy (share of 1 core)", "cpu_share", "{:.2f}"),
        ("each load process busy (of 1 core)", "client_cpu_share", "{:.2f}"),
        ("server RSS idle (MiB)", "rss_idle_mib", "{:.1f}"),
        ("server RSS loaded (MiB)", "rss_loaded_mib", "{:.1f}"),
        ("server memory per connection (KiB)", "kib_per_conn", "{:.1f}"),
        ("server: command handled p50 (ms, <=)", "srv_cmd_p50", "{:g}"),
        ("server: command handled p99 (ms, <=)", "srv_cmd_p99", "{:g}"),
        ("server: command handled max (ms, <=)", "srv_cmd_max", "{:g}"),
        ("server: loop wake-up lag p99 (ms, <=)", "srv_lag_p99", "{:g}"),
        ("server: loop wake-up lag max (ms, <=)", "srv_lag_max", "{:g}"),
        ("server: GC runs, gen 0/1/2", "srv_gc", "{}"),
        ("server: GC pause max (ms, <=)", "srv_gcp_max", "{:g}"),
        ("errors", "errors", "{}"),
        ("disconnects", "disconnects", "{}"),
    ]
    if "srv_gc0" in race:
        race["srv_gc"] = f"{race['srv_gc0']}/{race['srv_gc1']}/{race['srv_gc2']}"
    else:
        rows = [r for r in rows if not r[1].startswith("srv_")]
    print(f"{'':38}{'race server':>14}{'bare echo':>12}{'ratio':>9}")
    for label, key, fmt in rows:
        own = key.startswith(("bc_", "srv_"))  # no echo counterpart
        e = fmt.format(echo[key]) if echo is not None and key in echo and not own else ""
        r = ratio(key) if not own and key not in ("errors", "disconnects") else ""
        print(f"{label:38}{fmt.format(race[key]):>14}{e:>12}{r:>9}")
    if race["error_samples"]:
        print("error samples:", "; ".join(race["error_samples"]))
    print(
        f"lost moves: {race.get('lost', 'not checked')}   players out of moves: {race['stuck']}   set-up {race['setup_s']:.1f} s"
    )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rooms", type=int, default=25)
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--spectators", type=int, default=0)
    ap.add_argument("--rate", type=float, default=1.0, help="moves a second per player")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of racing measured")
    ap.add_argument("--suits", type=int, default=4, choices=(1, 2, 4))
    ap.add_argument(
        "--procs", type=int, default=1, help="client processes (the server has its own)"
    )
    ap.add_argument(
        "--server", help="target this server instead of starting one (no CPU/memory figures)"
    )
    ap.add_argument(
        "--db",
        help="the started server's database (default: a new SQLite file in a temporary "
        "directory, written as in production; ':memory:' for none)",
    )
    ap.add_argument("--no-baseline", action="store_true", help="skip the bare echo run")
    ap.add_argument(
        "--frame", type=int, default=0, help="echo frame size (default: a move command's)"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", metavar="FILE", help="run the server under cProfile, writing FILE")
    ap.add_argument(
        "--loop",
        default="asyncio",
        choices=("asyncio", "uvloop"),
        help="the event loop of the race server and of the echo server",
    )
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument(
        "--check", action="store_true", help="exit 1 on any error, disconnect or lost move"
    )
    args = ap.parse_args()
    if args.rooms * (args.players + args.spectators) > 6000 or args.duration > 600:
        ap.error("bounded: at most 6000 connections and 600 s")
    if not args.frame:
        args.frame = len(
            pack(
                {
                    "type": "move",
                    "seq": 123456789012,
                    "move": {"kind": "tableau", "src": 3, "dst": 7, "count": 1},
                }
            )
        )

    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory(prefix="patience-race-load-")
        args.db = str(Path(tmp.name) / "races.sqlite3")
    if args.server:
        proc, url = None, args.server
    else:
        proc, url = start(race_server_cmd(args))
    try:
        before = server_moves_ok(url) or 0
        race = run("race", url, proc.pid if proc else None, args)
        after = server_moves_ok(url)
        race["lost"] = None if after is None else race["acked"] - (after - before)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        if tmp is not None:
            tmp.cleanup()
    echo = None
    if not args.no_baseline:
        eproc, eurl = start(
            [sys.executable, str(ROOT / "bench" / "echo_server.py"), "--loop", args.loop]
        )
        try:
            echo = run("echo", eurl, eproc.pid, args)
        finally:
            eproc.terminate()
            eproc.wait(timeout=30)
    report(race, echo, args)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"args": vars(args), "race": race, "echo": echo}, indent=1, default=str)
        )
    if args.check:
        bad = (
            race["errors"]
            or race["disconnects"]
            or race["lost"] not in (0, None)
            or race["acked"] == 0
        )
        if bad:
            print(
                "load check FAILED: errors, disconnects, lost moves or no move at all",
                file=sys.stderr,
            )
            return 1
        print("load check passed: no error, no disconnect, no lost move")
    return 0


if __name__ == "__main__":
    sys.exit(main())
