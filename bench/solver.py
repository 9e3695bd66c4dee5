"""Solver benchmark: for each game and option set, how many deals it solves and how fast.

    .venv/bin/python bench/solver.py [--deals 100] [--first 1] [--budget S] [--nodes N]
                                     [--procs 1|2] [--only spider-s4 ...]

For each option set, deals ``--first`` .. ``--first + --deals - 1`` (PySolFC numbering) are solved
from their start with the time budget of that set (``--budget`` overrides them all).  Printed as a
markdown table: share solved, share proved unwinnable, median and 95th percentile time (a deal not
solved counts with the time it used), nodes per second, median solution length, and the goal.
Every solution is verified through the rules engine by the solver itself before it counts.

Goals (issue 14, on the project's 2-core machine): Spider 1 suit 100 % solved with median under
1 s; 2 suits 95 % within 10 s; 4 suits 70 % within 30 s; St. Helena and Louis measured.
The machine is shared: use at most 2 processes (``--procs``), and modest samples while iterating.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any

from protocol.config import GameConfig
from protocol.solver import SOLVED, UNWINNABLE, solve_deal


@dataclass(frozen=True)
class Case:
    name: str
    game: str
    options: dict[str, Any]
    budget: float
    goal: str


CASES = [
    Case("spider-s1", "spider", {"suits": 1}, 10.0, "100 % solved, median < 1 s"),
    Case("spider-s2", "spider", {"suits": 2}, 10.0, "95 % within 10 s"),
    Case("spider-s4", "spider", {"suits": 4}, 30.0, "70 % within 30 s"),
    Case("spider-s1-r1", "spider", {"suits": 1, "relaxed": 1}, 10.0, "measured"),
    Case("spider-s1-r2", "spider", {"suits": 1, "relaxed": 2}, 10.0, "measured"),
    Case("spider-s2-r1", "spider", {"suits": 2, "relaxed": 1}, 10.0, "measured"),
    Case("spider-s2-r2", "spider", {"suits": 2, "relaxed": 2}, 10.0, "measured"),
    Case("spider-s4-r1", "spider", {"suits": 4, "relaxed": 1}, 30.0, "measured"),
    Case("spider-s4-r2", "spider", {"suits": 4, "relaxed": 2}, 30.0, "measured"),
    Case("helena-suit", "st-helena", {"build": "suit", "spaces": "none"}, 10.0, "measured"),
    Case("helena-suit-spaces", "st-helena", {"build": "suit", "spaces": "any"}, 10.0, "measured"),
    Case("helena-any", "st-helena", {"build": "any", "spaces": "none"}, 10.0, "measured"),
    Case("helena-any-spaces", "st-helena", {"build": "any", "spaces": "any"}, 10.0, "measured"),
    Case("louis-suit", "louis", {"build": "suit"}, 10.0, "measured"),
    Case("louis-any", "louis", {"build": "any"}, 10.0, "measured"),
]


def solve_one(job: tuple[str, dict[str, Any], int, float, int]) -> tuple[str, float, int, int]:
    game, options, number, budget, nodes = job
    result = solve_deal(GameConfig(game, options), number, nodes=nodes, seconds=budget)
    return result.status, result.seconds, result.nodes, len(result.moves)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--deals", type=int, default=100)
    ap.add_argument("--first", type=int, default=1, help="the first deal number")
    ap.add_argument("--budget", type=float, default=None, metavar="S", help="seconds per deal")
    ap.add_argument("--nodes", type=int, default=10**9, help="node budget per deal")
    ap.add_argument("--procs", type=int, default=1, choices=(1, 2))
    ap.add_argument("--only", nargs="*", default=None, metavar="CASE", help="case names")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or c.name in args.only]
    if not cases:
        sys.exit(f"no such case: choose from {', '.join(c.name for c in CASES)}")
    print(
        f"{args.deals} deals from #{args.first}, {args.procs} process(es)"
        + (f", budget {args.budget:g} s" if args.budget else "")
    )
    print()
    print(
        "| game | budget | solved | unwinnable | median time | p95 time | nodes/s "
        "| median length | goal |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    misses: list[str] = []
    with Pool(args.procs) as pool:
        for case in cases:
            budget = args.budget or case.budget
            jobs = [
                (case.game, case.options, n, budget, args.nodes)
                for n in range(args.first, args.first + args.deals)
            ]
            results = pool.map(solve_one, jobs, chunksize=1)
            solved = [r for r in results if r[0] == SOLVED]
            missed = [job[2] for job, r in zip(jobs, results, strict=True) if r[0] != SOLVED]
            if missed:
                misses.append(f"{case.name}: " + " ".join(f"#{n}" for n in missed))
            unwinnable = sum(1 for r in results if r[0] == UNWINNABLE)
            times = [r[1] for r in results]
            rate = sum(r[2] for r in results) / max(sum(times), 1e-9)
            length = statistics.median(r[3] for r in solved) if solved else 0
            n = len(results)
            print(
                f"| {case.name} | {budget:g} s | {100 * len(solved) / n:.0f} % "
                f"| {100 * unwinnable / n:.0f} % | {statistics.median(times):.2f} s "
                f"| {percentile(times, 0.95):.2f} s | {rate:,.0f} | {length:.0f} | {case.goal} |",
                flush=True,
            )
    if misses:
        print()
        print("not solved within the budget: " + "; ".join(misses))


if __name__ == "__main__":
    main()
