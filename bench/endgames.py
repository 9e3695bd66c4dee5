"""Spider endgames: keep the bot's games right after their last deal, then play them on in other ways.

    .venv/bin/python bench/endgames.py collect --deals 200 [--first 1] [--suits 1]
                                               [--level strong] [--dig-set samples=12,nodes=4000]
                                               [--procs 2] --out games.pkl
    .venv/bin/python bench/endgames.py play games.pkl [--set samples=12,weigh_fresh=12]
                                               [--min-down 10] [--seeds 0] [--procs 2] [--log F]
    .venv/bin/python bench/endgames.py oracle games.pkl [--min-down 10] [--nodes 200000]

Most of a Spider game's luck, and most of 1-suit strong's thinking, comes after the last deal,
where no deal is left to mend a mistake (docs/bots-history.md).  ``collect`` plays each deal offline
exactly as ``bench/bots.py`` does (``client.strategy.OfflineGame``, the bench's seed for each
deal) and keeps the game right after its last deal: the real game, the bot's own copy, its memory
and its random generator; ``--dig-set`` plays the stages before with other digging settings
(``DIG``), and the cards left face down after the last deal are counted (the hard positions).
``play`` takes those games on from there with the level's endgame settings (``ENDGAME`` in
``client/strategy/spider.py``), changed by ``--set`` (fields of ``SolverParams``), so that one way
of playing the endgame can be measured against another on the very same positions in a fraction of
the time the whole games take.

With ``--seeds 0`` (the default) each game goes on with the random generator it had: with the
settings unchanged that is the bench's own game, so the count of games won (those kept plus those
that ended before the last deal) is what ``bench/bots.py`` would print.  ``--seeds N`` plays each
position N times with fresh generators instead, to see past one draw's luck.  ``--min-down K``
plays only the positions with at least K cards face down (the hard ones: every game strong lost
on deals 1 to 200 had 17 or more).

``oracle`` asks the solver, which sees every card, whether each kept position (the real game, not
the bot's copy) can still be won: the games lost in a position it wins were lost by the endgame,
those lost in a position it proves unwinnable before it.  A position it does not settle within
``--nodes`` states is counted apart.

The file ``collect`` writes is a pickle: load only files you made yourself.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import pickle
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from client.strategy import LEVELS, OfflineGame, Player, spider
from client.strategy.pimc import SolverParams
from protocol.config import GameConfig
from protocol.game import GameState, new_game
from protocol.moves import DEAL, Move


def after_last_deal(move: Move, real: GameState) -> bool:
    return move == DEAL and not real.stock


def collect_one(task: tuple[int, int, str, Any]) -> tuple[int, bytes | None, bool, float, int]:
    """Deal ``number`` played up to right after its last deal: the kept game (pickled), or
    None when the game ended before; whether it was won; the thinking so far; the cards the bot
    still has face down."""
    number, suits, level, dig = task
    if dig is not None:
        spider.DIG[(level, suits)] = dig  # this worker process's copy only
    config = GameConfig("spider", {"suits": suits})
    game = OfflineGame(new_game(config, number), Player(level, random.Random(number)))
    over = game.play(stop=after_last_deal)
    down = sum(game.mine.down)
    if over:
        return number, None, game.real.won, game.thinking, down
    return number, pickle.dumps(game), False, game.thinking, down


def endgame_params(level: str, suits: int, changes: dict[str, int | float]) -> Any:
    """The level's endgame entry with ``changes`` made to its solver settings."""
    key = (level, suits)
    if key not in spider.ENDGAME:
        if changes:
            raise SystemExit(f"{level} with {suits} suit(s) has no endgame settings to --set")
        return None
    threshold, params = spider.ENDGAME[key]
    return threshold, dataclasses.replace(params, **changes)


def dig_params(level: str, suits: int, changes: dict[str, int | float]) -> Any:
    """The level's digging settings with ``changes`` made (None: unchanged)."""
    if not changes:
        return None
    key = (level, suits)
    if key not in spider.DIG:
        raise SystemExit(f"{level} with {suits} suit(s) does not dig: nothing to --dig-set")
    return dataclasses.replace(spider.DIG[key], **changes)


def play_one(task: tuple[int, bytes, int, str, int, Any]) -> dict[str, Any]:
    number, blob, seed, level, suits, entry = task
    if entry is not None:
        spider.ENDGAME[(level, suits)] = entry  # this worker process's copy only
    game: OfflineGame = pickle.loads(blob)
    if seed:
        game.player.rng = random.Random(seed * 1_000_003 + number)
    before = game.thinking
    game.longest = 0.0  # the endgame's own longest decision
    game.play()
    return {
        "deal": number,
        "seed": seed,
        "won": game.real.won,
        "thinking": round(game.thinking - before, 2),
        "longest": round(game.longest, 2),
    }


def oracle_one(task: tuple[int, bytes, int]) -> tuple[int, int, str]:
    """Kept game ``number``: the cards the bot has face down, and the solver's verdict on the real
    position (``solved``, ``unwinnable`` or ``not found`` within ``nodes`` states)."""
    from protocol.solver import solve

    number, blob, nodes = task
    game: OfflineGame = pickle.loads(blob)
    result = solve(game.real.copy(), nodes=nodes, seconds=600.0)
    return number, sum(game.mine.down), result.status


def parse_changes(text: str, option: str = "--set") -> dict[str, int | float]:
    fields = {f.name: f.type for f in dataclasses.fields(SolverParams)}
    out: dict[str, int | float] = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in fields or not value:
            raise SystemExit(f"{option}: {item!r} is not FIELD=VALUE for a field of SolverParams")
        out[name] = float(value) if "." in value else int(value)
    return out


def cmd_collect(args: argparse.Namespace) -> int:
    dig = dig_params(args.level, args.suits, parse_changes(args.dig_set, "--dig-set"))
    numbers = range(args.first, args.first + args.deals)
    tasks = [(n, args.suits, args.level, dig) for n in numbers]
    kept: dict[int, bytes | None] = {}
    ended: dict[int, bool] = {}
    down: dict[int, int] = {}
    t0 = time.perf_counter()
    thinking = 0.0
    with multiprocessing.Pool(args.procs) as pool:
        for number, blob, won, think, face_down in pool.imap_unordered(collect_one, tasks):
            kept[number] = blob
            thinking += think
            if blob is None:
                ended[number] = won
            else:
                down[number] = face_down
    meta = {"suits": args.suits, "level": args.level, "ended": ended}
    with args.out.open("wb") as f:
        pickle.dump({"meta": meta, "games": kept}, f)
    print(
        f"{len(kept) - len(ended)} games kept after their last deal, {len(ended)} ended before "
        f"({sum(ended.values())} won); {thinking / max(1, len(kept)):.1f} s of thinking a game "
        f"so far, {time.perf_counter() - t0:.0f} s wall clock -> {args.out}"
    )
    if dig is not None:
        print(f"digging settings: {dig}")
    if down:
        hard = sum(1 for d in down.values() if d >= 10)
        easy = sum(1 for d in down.values() if d <= 4)
        print(
            f"cards face down after the last deal: {sum(down.values()) / len(down):.1f} a game; "
            f"{hard} of {len(down)} games with 10 or more, {easy} with 4 or fewer"
        )
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    with args.file.open("rb") as f:
        data = pickle.load(f)
    meta, games = data["meta"], data["games"]
    level, suits = meta["level"], meta["suits"]
    entry = endgame_params(level, suits, parse_changes(args.set))
    chosen: list[tuple[int, bytes]] = []
    for number, blob in sorted(games.items()):
        if blob is None:
            continue
        if args.min_down and sum(pickle.loads(blob).mine.down) < args.min_down:
            continue
        chosen.append((number, blob))
    seeds = range(1, args.seeds + 1) if args.seeds else [0]
    tasks = [(n, b, s, level, suits, entry) for s in seeds for n, b in chosen]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with multiprocessing.Pool(args.procs) as pool:
        rows.extend(pool.imap_unordered(play_one, tasks))
    rows.sort(key=lambda r: (r["deal"], r["seed"]))
    won = sum(r["won"] for r in rows)
    lost = sorted({r["deal"] for r in rows if not r["won"]})
    think = sum(r["thinking"] for r in rows) / max(1, len(rows))
    longest = max((r["longest"] for r in rows), default=0.0)
    print(f"{level}, {suits} suit(s), endgame settings: {entry[1] if entry else None}")
    print(
        f"{len(chosen)} positions x {len(seeds)} draw(s): {won} of {len(rows)} won; "
        f"{think:.1f} s of thinking an endgame, longest decision in one {longest:.1f} s; "
        f"{time.perf_counter() - t0:.0f} s wall clock"
    )
    print(f"deals lost at least once: {', '.join(map(str, lost)) or 'none'}")
    if not args.seeds and not args.min_down:
        ended = meta["ended"]
        total = won + sum(ended.values())
        print(f"whole games, as bench/bots.py counts them: {total} of {len(games)} won")
    if args.log:
        with args.log.open("a") as f:
            f.write(json.dumps({"set": args.set, "min_down": args.min_down, "rows": rows}) + "\n")
    return 0


def cmd_oracle(args: argparse.Namespace) -> int:
    with args.file.open("rb") as f:
        games = pickle.load(f)["games"]
    tasks = [
        (number, blob, args.nodes)
        for number, blob in sorted(games.items())
        if blob is not None and sum(pickle.loads(blob).mine.down) >= args.min_down
    ]
    t0 = time.perf_counter()
    with multiprocessing.Pool(args.procs) as pool:
        rows = sorted(pool.imap_unordered(oracle_one, tasks))
    by: dict[str, list[str]] = {}
    for number, down, status in rows:
        by.setdefault(status, []).append(f"{number} ({down} down)")
    print(
        f"{len(rows)} kept positions with {args.min_down} or more cards face down, the solver "
        f"seeing every card ({args.nodes} states at most); {time.perf_counter() - t0:.0f} s"
    )
    for status in sorted(by):
        print(f"{status}: {len(by[status])}: {', '.join(by[status])}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="play deals up to right after their last deal")
    c.add_argument("--deals", type=int, default=100)
    c.add_argument("--first", type=int, default=1)
    c.add_argument("--suits", type=int, choices=(1, 2, 4), default=1)
    c.add_argument("--level", choices=LEVELS, default="strong")
    c.add_argument(
        "--dig-set", default="", metavar="FIELD=VALUE,...", help="digging settings (DIG)"
    )
    c.add_argument("--procs", type=int, default=2)
    c.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("play", help="play the kept games on")
    p.add_argument("file", type=Path)
    p.add_argument("--set", default="", metavar="FIELD=VALUE,...", help="endgame settings")
    p.add_argument("--min-down", type=int, default=0, help="only positions this hard")
    p.add_argument("--seeds", type=int, default=0, help="fresh draws per position (0: its own)")
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--log", type=Path, help="a file that gets one line per run")
    o = sub.add_parser("oracle", help="can the solver, seeing every card, win the kept games?")
    o.add_argument("file", type=Path)
    o.add_argument("--min-down", type=int, default=0, help="only positions this hard")
    o.add_argument("--nodes", type=int, default=200_000, help="the solver's budget in states")
    o.add_argument("--procs", type=int, default=2)
    args = ap.parse_args(argv)
    commands = {"collect": cmd_collect, "play": cmd_play, "oracle": cmd_oracle}
    return commands[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
