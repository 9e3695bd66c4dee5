"""The bot's strength: win rate per level on Spider (1, 2, 4 suits), St. Helena and Louis.

    .venv/bin/python bench/bots.py [--deals 100] [--deals-for spider4=40,...]
                                   [--levels easy,normal,strong]
                                   [--games spider1,spider2,spider4,st-helena,louis]
                                   [--first 1] [--procs 2] [--log FILE [--table-only]]

Offline, with the engine alone (no server): each game is played by ``client.bot.play_offline``,
where the bot keeps its own copy of its board built from the real game's ``view()`` (face-down
cards and stock UNKNOWN) and learns each card only when the real game shows it, as over the
network; ``choose_move`` masks hidden cards once more besides.  Deals are numbers ``first`` to
``first + deals - 1`` (PySolFC numbering), the same for every level.  Prints, for each game and
level: games won, average score, average moves, thinking seconds per game, milliseconds per move,
the longest single decision, and the time to finish a game: simulated, as it would be in a room at
the level's own pace (for each move, the longer of the level's mean pause and the bot's
thinking, since a bot thinks during its pause), in minutes, over every game and over the games
won.

Games are played deal by deal (every game and level of deal 1, then of deal 2...), so a run
stopped early still has the first deals of everything; with ``--log FILE`` each game is written
as it ends, a run started again with the same log plays only what is missing, and
``--table-only`` prints the table of what the log holds (for each game, the deals every level has
played).

The strong level dominates the time: it asks the solver at key decisions, 10 to 30 s of thinking
a game in Spider on this project's shared two-core machine (easy and normal under 2 s), so 100
deals of Spider 1 and 2 suits and 40 of the rest take about an hour with two processes.  Use
``--levels easy,normal`` or fewer ``--deals`` for a quick look.  ``st-helena-any`` and
``louis-any`` (build any suit, PySolFC's St. Helena) are there for comparison, not run by default.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from client.bot import LEVELS, PACE, GameResult, play_offline
from protocol.config import GameConfig
from protocol.game import new_game

GAMES = {
    "spider1": GameConfig("spider", {"suits": 1}),
    "spider2": GameConfig("spider", {"suits": 2}),
    "spider4": GameConfig("spider", {"suits": 4}),
    "st-helena": GameConfig("st-helena"),
    "louis": GameConfig("louis"),
    "st-helena-any": GameConfig("st-helena", {"build": "any"}),
    "louis-any": GameConfig("louis", {"build": "any"}),
}
DEFAULT_GAMES = ("spider1", "spider2", "spider4", "st-helena", "louis")


def play_one(task: tuple[str, str, int]) -> tuple[str, str, int, GameResult]:
    game, level, number = task
    config = GAMES[game]
    result = play_offline(new_game(config, number), level, random.Random(number))
    return game, level, number, result


def read_log(path: Path) -> dict[tuple[str, str, int], GameResult]:
    """The games a ``--log`` file holds, by game, level and deal."""
    out: dict[tuple[str, str, int], GameResult] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                key = (d.pop("game"), d.pop("level"), d.pop("deal"))
                out[key] = GameResult(**d)
    return out


def print_table(
    done: dict[tuple[str, str, int], GameResult],
    games: list[str],
    levels: list[str],
    first: int,
    deals: dict[str, int],
) -> None:
    """For each game, the deals ``first``.. that every level has played (up to its deal count)."""
    print(
        f"{'game':<26}{'level':<8}{'deals':>6}{'won':>6}{'win %':>7}{'score':>8}"
        f"{'moves':>7}{'s/game':>8}{'ms/move':>9}{'max s':>7}{'finish':>8}{'win in':>8}"
        f"{'resigned':>9}{'stuck':>6}"
    )
    for g in games:
        last = first
        while last < first + deals[g] and all((g, lv, last) in done for lv in levels):
            last += 1
        for lv in levels:
            rs = [done[g, lv, n] for n in range(first, last)]
            n = len(rs)
            if not n:
                print(f"{GAMES[g].title:<26}{lv:<8}{0:>6}")
                continue
            won = sum(r.won for r in rs)
            moves = sum(r.moves for r in rs)
            secs = sum(r.seconds for r in rs)
            pace = PACE[lv].mean
            finish = [r.paced or r.moves * pace + r.seconds for r in rs]
            wins = [f for f, r in zip(finish, rs, strict=True) if r.won]
            win_in = f"{sum(wins) / len(wins) / 60:>8.1f}" if wins else f"{'-':>8}"
            print(
                f"{GAMES[g].title:<26}{lv:<8}{n:>6}{won:>6}{100 * won / n:>6.0f}%"
                f"{sum(r.score for r in rs) / n:>8.1f}{moves / n:>7.0f}{secs / n:>8.2f}"
                f"{1000 * secs / max(moves, 1):>9.2f}{max(r.longest for r in rs):>7.1f}"
                f"{sum(finish) / n / 60:>8.1f}{win_in}{sum(r.resigned for r in rs):>9}"
                f"{sum(r.stuck and not r.resigned for r in rs):>6}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--deals", type=int, default=100, help="deals per game and level")
    ap.add_argument(
        "--deals-for",
        default="",
        metavar="GAME=N,...",
        help="other deal counts for some games (spider4=40,louis=40)",
    )
    ap.add_argument("--first", type=int, default=1, help="the first deal number")
    ap.add_argument("--levels", default=",".join(LEVELS))
    ap.add_argument("--games", default=",".join(DEFAULT_GAMES), help=f"from {', '.join(GAMES)}")
    ap.add_argument("--procs", type=int, default=2, help="worker processes (1: no pool)")
    ap.add_argument(
        "--log",
        type=Path,
        help="a file that gets one line per game as it ends; games it holds are not played "
        "again, so a run can be stopped and taken up later",
    )
    ap.add_argument(
        "--table-only", action="store_true", help="play nothing: the table of the --log file"
    )
    args = ap.parse_args(argv)
    levels = [x for x in args.levels.split(",") if x]
    games = [x for x in args.games.split(",") if x]
    for x in levels:
        if x not in LEVELS:
            ap.error(f"unknown level {x}")
    for x in games:
        if x not in GAMES:
            ap.error(f"unknown game {x}: choose from {', '.join(GAMES)}")
    deals = dict.fromkeys(games, args.deals)
    for item in filter(None, args.deals_for.split(",")):
        g, _, n = item.partition("=")
        if g not in deals or not n.isdigit():
            ap.error(f"--deals-for: {item!r} is not GAME=N for a game being played")
        deals[g] = int(n)
    done = read_log(args.log) if args.log else {}
    if args.table_only:
        if not args.log:
            ap.error("--table-only needs --log")
        print_table(done, games, levels, args.first, deals)
        return 0
    tasks = [
        (g, lv, n)
        for g in games
        for lv in levels
        for n in range(args.first, args.first + deals[g])
        if (g, lv, n) not in done
    ]
    # deal by deal, so that a run stopped early still has the first deals of every game and level
    tasks.sort(key=lambda t: (t[2], t[1] != "strong", t[0]))
    t0 = time.perf_counter()
    log = args.log.open("a") if args.log else None
    try:
        if args.procs > 1:
            with multiprocessing.Pool(args.procs) as pool:
                for g, lv, n, r in pool.imap_unordered(play_one, tasks, chunksize=1):
                    done[g, lv, n] = r
                    _log(log, g, lv, n, r)
        else:
            for task in tasks:
                g, lv, n, r = play_one(task)
                done[g, lv, n] = r
                _log(log, g, lv, n, r)
    finally:
        if log is not None:
            log.close()
    wall = time.perf_counter() - t0
    print_table(done, games, levels, args.first, deals)
    print(
        f"deals from {args.first}, {len(tasks)} games played, "
        f"{args.procs} process(es), {wall:.0f} s wall clock"
    )
    return 0


def _log(log: TextIO | None, game: str, level: str, number: int, r: GameResult) -> None:
    if log is not None:
        log.write(json.dumps({"game": game, "level": level, "deal": number, **asdict(r)}) + "\n")
        log.flush()


if __name__ == "__main__":
    raise SystemExit(main())
