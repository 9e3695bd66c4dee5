"""One certification, as a process of its own: ``python -m server.certify GAME OPTIONS NUMBERING
SECONDS`` draws a secret random deal, runs the solver on it and prints one JSON line,
``{"number": ..., "solution": [...]}`` (``solution`` null when it was not won in time).

The deal pool (``server.pool``) runs it at a low priority: the solver never runs in the server's
own process, and a process of its own needs nothing from whatever program hosts the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

from protocol.config import GameConfig
from protocol.solver import solve_deal

from .race import random_number


def main(argv: list[str]) -> int:
    game, options, numbering, seconds = argv
    with contextlib.suppress(OSError):
        os.nice(10)
    config = GameConfig(game, json.loads(options), numbering)
    number = random_number(config)
    result = solve_deal(config, number, seconds=float(seconds))
    solution = list(result.moves) if result.solved else None
    print(json.dumps({"number": str(number), "solution": solution}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
