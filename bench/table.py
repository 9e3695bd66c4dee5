"""Markdown table of ``bench/load.py --json`` results, one column group per run.

    .venv/bin/python bench/table.py run100.json run1000.json run2000.json

Each run shows the race server's figure, the bare echo's and their ratio, as in
docs/performance.md.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

ROWS: list[tuple[str, str, str, bool]] = [
    # label, key, format, has an echo counterpart
    ("moves acknowledged / s", "acked_per_s", "{:,.0f}", True),
    ("ack latency p50 (ms)", "lat_p50", "{:.1f}", True),
    ("ack latency p95 (ms)", "lat_p95", "{:.1f}", True),
    ("ack latency p99 (ms)", "lat_p99", "{:.1f}", True),
    ("ack latency max (ms)", "lat_max", "{:.0f}", True),
    ("progress delay p50 / p99 (ms)", "bc", "", False),
    ("server CPU per move (us)", "cpu_us_per_msg", "{:.0f}", True),
    ("frames sent per move", "frames_per_move", "{:.2f}", True),
    ("server CPU per frame in or out (us)", "cpu_us_per_frame", "{:.0f}", True),
    ("server CPU busy (cores)", "cpu_share", "{:.2f}", True),
    ("each load process busy (cores)", "client_cpu_share", "{:.2f}", True),
    ("memory per connection (KiB)", "kib_per_conn", "{:.1f}", True),
    ("server: command handled p99 (ms, <=)", "srv_cmd_p99", "{:g}", False),
    ("server: loop lag p99 / max (ms, <=)", "lag", "", False),
    ("server: GC runs gen 0/1/2, longest (ms, <=)", "gc", "", False),
    ("errors, disconnects, lost moves", "bad", "", True),
]


def cell(run: dict[str, Any], key: str, fmt: str) -> str:
    if key == "bc":
        return f"{run.get('bc_p50', math.nan):.0f} / {run.get('bc_p99', math.nan):.0f}"
    if key == "lag":
        return f"{run.get('srv_lag_p99', math.nan):g} / {run.get('srv_lag_max', math.nan):g}"
    if key == "gc":
        if "srv_gc0" not in run:
            return ""
        longest = run.get("srv_gcp_max", math.nan)
        pause = "-" if longest != longest else f"{longest:g}"
        return f"{run['srv_gc0']}/{run['srv_gc1']}/{run['srv_gc2']}, {pause}"
    if key == "bad":
        lost = run.get("lost")
        return f"{run['errors']}, {run['disconnects']}, {'-' if lost is None else lost}"
    value = run.get(key)
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return fmt.format(value)


def ratio(race: dict[str, Any], echo: dict[str, Any] | None, key: str) -> str:
    if echo is None:
        return ""
    a, b = race.get(key), echo.get(key)
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b or a != a:
        return ""
    return f"{a / b:.2f}x"


def main(paths: list[str]) -> int:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    heads, rule = ["figure"], ["---"]
    for r in runs:
        a = r["args"]
        players = a["rooms"] * a["players"]
        loop = "" if a.get("loop", "asyncio") == "asyncio" else f", {a['loop']}"
        heads += [f"{players:,} players{loop}", "echo", "ratio"]
        rule += ["---:", "---:", "---:"]
    print("| " + " | ".join(heads) + " |")
    print("| " + " | ".join(rule) + " |")
    for label, key, fmt, paired in ROWS:
        row = [label]
        for r in runs:
            race, echo = r["race"], r.get("echo")
            row.append(cell(race, key, fmt))
            row.append(cell(echo, key, fmt) if paired and echo else "")
            row.append(ratio(race, echo, key) if paired and key != "bad" else "")
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
