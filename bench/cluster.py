"""Cluster benchmark: bench/load.py's load against one node and against two nodes, same run.

    .venv/bin/python bench/cluster.py --players 1000,2000,3000 --duration 10

Starts a real Redis (on a Unix socket in a temporary folder) and cluster nodes as subprocesses
(``patience-race-server --node``), then, for each total number of racing players asked for, runs
the same load (rooms of ``--room-size`` players, ``--rate`` random legal Spider moves a second
each, bench/load.py's clients) against one node, then against two nodes with the rooms split
evenly between them (each client talks to the node holding its room, as after a redirect).
It reports, for each:

- acknowledgement latency p50 / p99 and whether p99 stays under ``--p99-ms`` (50 ms);
- the node processes' CPU per acknowledged move, and its ratio to one node's;
- the players held: the most players at which p99 stays under the bound, for one node and for
  two, and their ratio (the goal: two nodes hold at least 1.7 times the players of one).

The client processes need CPU too: on a machine with fewer cores than nodes plus clients, two
nodes compete with their own load for it, and the ratio measures the machine as much as the
server (docs/performance.md says what was run and on what).  Bounded in count and time; all
traffic stays on this machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import (
    Stats,
    cpu_seconds,
    pack,
    race_server_cmd,
    server_moves_ok,
    start,
    worker,
)


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(exe).exists():
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    sock = folder / "redis.sock"
    proc = subprocess.Popen(
        [exe, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not sock.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit("redis-server did not start")
        time.sleep(0.01)
    return proc, f"unix://{sock}"


def start_node(
    args: argparse.Namespace, name: str, redis: str, folder: Path
) -> tuple[subprocess.Popen[str], str]:
    args.db = str(folder / f"{name}.sqlite3")
    node = ["--node", name, "--redis", redis, "--node-url", "ws://127.0.0.1:{port}"]
    return start([*race_server_cmd(args), *node])


def run_nodes(
    nodes: list[tuple[subprocess.Popen[str], str]], rooms: int, args: argparse.Namespace
) -> dict[str, Any]:
    """bench/load.py's race load, ``rooms`` rooms split evenly over ``nodes``, measured in one
    window; the CPU of every node process summed."""
    procs = max(args.procs, len(nodes))
    shares = [rooms // procs + (1 if i < rooms % procs else 0) for i in range(procs)]
    jobs = [(nodes[i % len(nodes)][1], s) for i, s in enumerate(shares) if s]
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(jobs) + 1)
    go = ctx.Queue()
    out = ctx.Queue()
    args.players = args.room_size
    workers = [
        ctx.Process(target=worker, args=("race", url, s, args, barrier, go, out, args.seed + i))
        for i, (url, s) in enumerate(jobs)
    ]
    moves0 = sum(server_moves_ok(url) or 0 for _, url in nodes)
    for w in workers:
        w.start()
    try:
        barrier.wait(timeout=max(60, rooms * 0.3))
    except Exception:
        raise SystemExit("clients failed to set up") from None
    begin = time.monotonic() + 0.2
    for _ in workers:
        go.put(begin)
    cpu0 = [cpu_seconds(p.pid) for p, _ in nodes]
    time.sleep(max(0.0, begin + args.duration - time.monotonic()))
    cpu1 = [cpu_seconds(p.pid) for p, _ in nodes]
    results = [out.get(timeout=args.duration + 120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    failed = [r["failed"] for r in results if "failed" in r]
    if failed:
        raise SystemExit(f"a client process failed: {failed}")
    merged = Stats()
    for r in results:
        for k, v in r.items():
            setattr(merged, k, getattr(merged, k) + v)
    lat = sorted(merged.latencies)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")

    moves1 = sum(server_moves_ok(url) or 0 for _, url in nodes)
    cpu = sum(b - a for a, b in zip(cpu0, cpu1, strict=True))
    return {
        "nodes": len(nodes),
        "players": rooms * args.room_size,
        "acked_per_s": merged.acked / args.duration,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "errors": merged.errors,
        "disconnects": merged.disconnects,
        "lost": merged.acked - (moves1 - moves0),
        "cpu_us_per_move": cpu / merged.acked * 1e6 if merged.acked else float("nan"),
        "node_cpu_share": cpu / args.duration,
        "client_cpu_share": merged.cpu / args.duration,
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--players", default="200,400,800", help="total racing players, comma-separated levels"
    )
    ap.add_argument("--room-size", type=int, default=8)
    ap.add_argument("--rate", type=float, default=1.0, help="moves a second per player")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds measured per run")
    ap.add_argument("--suits", type=int, default=4, choices=(1, 2, 4))
    ap.add_argument(
        "--procs", type=int, default=2, help="client processes (the same for one node and two)"
    )
    ap.add_argument("--p99-ms", type=float, default=50.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    args = ap.parse_args()
    levels = sorted({int(x) for x in args.players.split(",") if x.strip()})
    if not levels or max(levels) > 4000 or args.duration > 120:
        ap.error("bounded: at most 4000 players and 120 s a run")
    # what bench/load.py's workers read from its own arguments
    args.spectators = 0
    args.profile = None
    args.frame = len(pack({"type": "move", "seq": 1, "move": {"kind": "tableau"}}))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="patience-race-cluster-") as tmp:
        folder = Path(tmp)
        redis, redis_url = start_redis(folder)
        try:
            for level in levels:
                rooms = max(1, level // args.room_size)
                for count in (1, 2):
                    # fresh nodes for every run: nothing left over from the last one
                    sub = folder / f"{level}-{count}"
                    sub.mkdir()
                    nodes = [
                        start_node(args, f"n{level}-{count}-{i}", redis_url, sub)
                        for i in range(count)
                    ]
                    try:
                        row = run_nodes(nodes, rooms, args)
                    finally:
                        for proc, _ in nodes:
                            proc.terminate()
                        for proc, _ in nodes:
                            proc.wait(timeout=30)
                    rows.append(row)
                    print(
                        f"{row['players']:>5} players on {count} node(s): "
                        f"{row['acked_per_s']:>6.0f} moves/s, ack p50 {row['p50']:5.1f} ms, "
                        f"p99 {row['p99']:6.1f} ms, node CPU {row['cpu_us_per_move']:5.0f} us/move "
                        f"({row['node_cpu_share']:.2f} cores), clients {row['client_cpu_share']:.2f} "
                        f"cores, errors {row['errors']}, disconnects {row['disconnects']}, "
                        f"lost {row['lost']}",
                        flush=True,
                    )
        finally:
            redis.terminate()
            redis.wait(timeout=10)
    report(rows, args)
    return 0


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    one = {r["players"]: r for r in rows if r["nodes"] == 1}
    two = {r["players"]: r for r in rows if r["nodes"] == 2}
    print(
        "\n| players | 1 node p99 (ms) | 2 nodes p99 (ms) | 1 node CPU/move (us) | "
        "2 nodes CPU/move (us) | CPU/move ratio |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for players in sorted(one):
        a, b = one[players], two.get(players)
        if b is None:
            continue
        print(
            f"| {players} | {a['p99']:.1f} | {b['p99']:.1f} | {a['cpu_us_per_move']:.0f} | "
            f"{b['cpu_us_per_move']:.0f} | {b['cpu_us_per_move'] / a['cpu_us_per_move']:.2f}x |"
        )

    def held(table: dict[int, dict[str, Any]]) -> int:
        """The most players under the bound, at that level and every smaller one tried."""
        best = 0
        for players in sorted(table):
            row = table[players]
            if row["p99"] >= args.p99_ms or row["errors"] or row["disconnects"]:
                break
            best = players
        return best

    h1, h2 = held(one), held(two)
    ratio = f"{h2 / h1:.2f}x" if h1 else "n/a"
    top = max(one) if one else 0
    note = " (the largest level tried: more levels would find the limit)" if top in (h1, h2) else ""
    print(
        f"\nplayers held at p99 under {args.p99_ms:g} ms: one node {h1}, two nodes {h2}: "
        f"{ratio}{note} (goal 1.7x)"
    )


if __name__ == "__main__":
    sys.exit(main())
