"""Rules engine speed: validated-and-applied moves per second, legal-move generations per second.

    .venv/bin/python bench/engine.py [--games 40] [--moves 400] [--seed 1]

Random legal play is recorded first (untimed) on Spider (1, 2, 4 suits) and St. Helena; then the
timed runs replay it on fresh states through ``GameState.apply`` (which validates every move),
and call ``legal_moves()`` on every position met.  The baseline, measured in the same run, is the
bare list work of the same moves with no rules at all (pop and push the cards): the engine's
figures are also printed as a ratio to it, since this machine is shared and noisy.
Goals (issue 2): 100,000 Spider moves applied per second, 20,000 legal-move generations per second.
"""

from __future__ import annotations

import argparse
import random
import time

from protocol.config import GameConfig
from protocol.game import GameState, new_game
from protocol.moves import Kind, Move


def record_games(
    config: GameConfig, games: int, moves: int, seed: int
) -> list[tuple[int, list[Move]]]:
    rnd = random.Random(seed)
    out = []
    for g in range(games):
        number = rnd.randrange(1, 10**9)
        state = new_game(config, number)
        played: list[Move] = []
        for _ in range(moves):
            legal = state.legal_moves()
            if not legal:
                break
            # prefer real moves over deals/redeals so games last
            real = [m for m in legal if m.kind in (Kind.TABLEAU, Kind.FOUNDATION)]
            move = rnd.choice(real if real and rnd.random() < 0.9 else legal)
            state.apply(move)
            played.append(move)
        out.append((number, played))
        del g
    return out


def time_apply(config: GameConfig, games: list[tuple[int, list[Move]]]) -> tuple[int, float]:
    starts = [new_game(config, n) for n, _ in games]
    count = 0
    t0 = time.perf_counter()
    for state, (_, moves) in zip(starts, games, strict=True):
        apply = state.apply
        for m in moves:
            apply(m)
        count += len(moves)
    return count, time.perf_counter() - t0


def time_baseline(config: GameConfig, games: list[tuple[int, list[Move]]]) -> tuple[int, float]:
    """The same moves as bare list operations: no checks, no reveal, no history."""
    starts = [new_game(config, n) for n, _ in games]
    count = 0
    t0 = time.perf_counter()
    for state, (_, moves) in zip(starts, games, strict=True):
        piles = state.piles
        stock = state.stock
        for m in moves:
            if m.kind == Kind.TABLEAU:
                src = piles[m.src]
                n = m.count
                piles[m.dst].extend(src[-n:])
                del src[-n:]
            elif m.kind == Kind.DEAL:
                for p in piles:
                    if stock:
                        p.append(stock.pop())
            elif m.kind == Kind.FOUNDATION:
                del piles[m.src][-m.count :]
        count += len(moves)
    return count, time.perf_counter() - t0


def positions(config: GameConfig, games: list[tuple[int, list[Move]]]) -> list[GameState]:
    out = []
    for number, moves in games:
        state = new_game(config, number)
        for i, m in enumerate(moves):
            state.apply(m)
            if i % 5 == 0:
                out.append(state.copy())
    return out


def time_legal(states: list[GameState]) -> tuple[int, float, int]:
    t0 = time.perf_counter()
    total = 0
    for s in states:
        total += len(s.legal_moves())
    return len(states), time.perf_counter() - t0, total


def best_of(fn, repeat: int):  # type: ignore[no-untyped-def]
    best = None
    for _ in range(repeat):
        r = fn()
        if best is None or r[1] < best[1]:
            best = r
    return best


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--moves", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    configs = [
        GameConfig("spider", {"suits": 1}),
        GameConfig("spider", {"suits": 2}),
        GameConfig("spider", {"suits": 4}),
        GameConfig("st-helena"),
        GameConfig("louis"),
    ]
    print(
        f"{'game':<26}{'moves/s':>12}{'baseline/s':>12}{'ratio':>8}{'legal gens/s':>14}{'avg legal':>10}"
    )
    for config in configs:
        games = record_games(config, args.games, args.moves, args.seed)
        n, t = best_of(lambda: time_apply(config, games), args.repeat)  # noqa: B023
        bn, bt = best_of(lambda: time_baseline(config, games), args.repeat)  # noqa: B023
        states = positions(config, games)
        pn, pt, total = best_of(lambda: time_legal(states), args.repeat)  # noqa: B023
        rate, brate = n / t, bn / bt
        print(
            f"{config.title:<26}{rate:>12,.0f}{brate:>12,.0f}{brate / rate:>7.1f}x"
            f"{pn / pt:>14,.0f}{total / max(pn, 1):>10.1f}"
        )
    print("ratio: how many times slower the validated engine is than bare list moves")


if __name__ == "__main__":
    main()
