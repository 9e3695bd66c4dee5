"""``patience-race solve GAME NUMBER``: solve a deal with every card known (protocol.solver).

Prints the result, the solution's length, the nodes searched and the moves; with ``--json``, the
solution as a game record (docs/records.md) that ``patience-race replay FILE`` accepts, and the
summary line on stderr.  Exits 0 when solved, 1 when not (not found within the budget, or
unwinnable).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from protocol.config import GAMES
from protocol.solver import DEFAULT_NODES, DEFAULT_SECONDS, solution_record, solve_deal


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the budget must be more than 0 seconds")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the node budget must be at least 1")
    return value


def add_solve_parser(sub: Any) -> None:
    """Register ``solve`` on ``patience-race``'s subcommands."""
    from .args import add_game_arguments

    p = sub.add_parser("solve", help="solve a deal (every card known) and print the solution")
    p.add_argument("game", choices=GAMES, metavar="GAME", help=" | ".join(GAMES))
    p.add_argument("number", help="deal number: 1 to 10^20 (xpat2: 0 to 999999999)")
    add_game_arguments(p)
    p.add_argument(
        "--budget",
        type=positive_float,
        default=DEFAULT_SECONDS,
        metavar="SECONDS",
        help=f"time budget (default {DEFAULT_SECONDS:g} s)",
    )
    p.add_argument(
        "--nodes",
        type=positive_int,
        default=DEFAULT_NODES,
        metavar="N",
        help=f"node budget: states expanded (default {DEFAULT_NODES:,})",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the solution as a game record (for patience-race replay FILE)",
    )
    p.set_defaults(func=cmd_solve)


def cmd_solve(args: argparse.Namespace) -> int:
    from .args import make_config

    config = make_config(args.game, args)
    number = config.check_number(args.number)
    result = solve_deal(config, number, nodes=args.nodes, seconds=args.budget)
    rate = result.nodes / result.seconds if result.seconds > 0 else 0.0
    summary = (
        f"{config.title} #{number}: {result.message} "
        f"({result.nodes:,} nodes searched in {result.seconds:.2f} s, {rate:,.0f} nodes/s)"
    )
    if args.json:
        print(summary, file=sys.stderr)
        if result.solved:
            print(solution_record(config, number, result).dumps(), end="")
        else:
            out = {
                "status": result.status,
                "nodes": result.nodes,
                "seconds": round(result.seconds, 3),
            }
            print(json.dumps(out))
        return 0 if result.solved else 1
    print(summary)
    if result.solved:
        print(f"solution ({len(result.moves)} moves):")
        for i in range(0, len(result.moves), 12):
            print("  " + " ".join(result.moves[i : i + 12]))
    return 0 if result.solved else 1
