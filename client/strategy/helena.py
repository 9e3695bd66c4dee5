"""St. Helena's and Louis's strategy: the value of a position, the moves worth searching, and the
decisions.

St. Helena deals every card face up (a redeal's order follows from the visible layout), and Louis
hides only its stock until it is dealt, so a deep search pays: ``strong`` searches wide at every
decision and asks the full-information solver for a win (on the masked state; in Louis before the
deal, on guessed stocks, following the line only up to the first card a refill or the deal shows),
with a long look the first time nothing is hidden and after each redeal.  ``normal`` searches a
little and takes the one long look, ``easy`` looks one move ahead with noise.
"""

from __future__ import annotations

import random
from functools import lru_cache

from protocol.config import LOUIS
from protocol.game import GameState
from protocol.moves import DEAL, REDEAL, Kind, Move

from .common import (
    EASY,
    NORMAL,
    LevelParams,
    Memory,
    best_single,
    carry_on,
    explore,
    widening_search,
)
from .pimc import SolverParams, solver_plan

HE_FOUNDATION = 100
"""Per card on the foundations."""
HE_URGENT = (14, 8, 5, 3, 2, 1)
"""Per card lying on a card the foundations want in 0, 1, 2... moves (times its depth)."""
HE_EMPTY = 20
"""Per empty pile where empty piles take a card (St. Helena ``spaces any``)."""
HE_STOCK = 40
"""Louis, before the stock is dealt: per stock card still unseen (an emptied pile shows one)."""
_FAR = 99


@lru_cache(maxsize=20000)
def _weights(key: tuple[int, ...]) -> tuple[int, ...]:
    """Per card code: how much it costs per card lying on it (:data:`HE_URGENT` by how soon the
    foundations want it), from the foundations' sizes; one more entry, 0, that ``UNKNOWN`` (-1)
    reads."""
    urgent = HE_URGENT
    w = [0] * 53
    for su in range(4):
        a = key[4 + su]  # the ace foundation's top rank (A=1)
        k = 14 - key[su]  # the king foundation's top rank (K=13)
        for r in range(1, 14):
            da = r - a - 1 if r > a else _FAR
            dk = k - 1 - r if r < k else _FAR
            nd = da if da < dk else dk
            if nd < len(urgent):
                w[su * 13 + r - 1] = urgent[nd]
    return tuple(w)


def helena_value(s: GameState) -> int:
    """How good a St. Helena or Louis position looks: cards home, and the cards the foundations
    want next lying near the top of their piles."""
    f = s.foundations
    w = _weights(tuple(map(len, f)))
    v = HE_FOUNDATION * (sum(map(len, f)) - 8)
    empty_ok = s.config.options.get("spaces") == "any"
    for p in s.piles:
        if not p:
            if empty_ok:
                v += HE_EMPTY
            continue
        depth = len(p)
        for c in p:
            depth -= 1
            v -= w[c] * depth
    if not getattr(s, "stock_dealt", True):
        v -= HE_STOCK * len(s.stock)
    return v


def helena_moves(s: GameState) -> list[Move]:
    """The legal pile and foundation moves worth considering: a lone card is never moved to an
    empty pile, and only the first empty pile is a target."""
    piles = s.piles
    first_empty = next((i for i, p in enumerate(piles) if not p), -1)
    out: list[Move] = []
    for m in s.legal_moves():
        if m.kind == Kind.FOUNDATION:
            out.append(m)
        elif m.kind == Kind.TABLEAU:
            if not piles[m.dst] and (m.dst != first_empty or len(piles[m.src]) == 1):
                continue
            out.append(m)
    return out


PARAMS = {
    "easy": EASY,
    "normal": NORMAL,
    "strong": LevelParams(
        budget=8000,
        depth=30,
        noise=0.0,
        last_resort=LevelParams(30000, 60, 0.0),
    ),
}
"""Every card on the table is known, and a deeper search pays."""

_STRONG_SOLVER = SolverParams(
    samples=1, nodes=3000, failures=3, study_nodes=30000, seconds=20.0, restudy=True
)
_NORMAL_SOLVER = SolverParams(
    samples=0, nodes=3000, failures=1, study_nodes=30000, seconds=20.0, only_open=True
)

SOLVER = {
    ("strong", "st-helena"): _STRONG_SOLVER,
    ("strong", LOUIS): _STRONG_SOLVER,
    ("normal", "st-helena"): _NORMAL_SOLVER,
    ("normal", LOUIS): _NORMAL_SOLVER,
}
"""The levels (and games) that ask the solver for a win.

- Strong: a long look (30,000 states, a few seconds) the first time nothing is hidden (St.
  Helena's deal, Louis once its stock is dealt) and again after each redeal (a new layout), a
  short one after that, and in Louis before the deal short looks on guessed stocks.
- Normal: the one long look, the first time nothing is hidden; never a guess, never again.

St. Helena and Louis with build by suit are rarely solved: after a few calls that find nothing, a
game stops asking.  Easy never asks."""


HOME_FIRST = frozenset({"easy", "normal"})
"""The levels that send a card home as soon as one can go (strong weighs it in its search)."""


def choose(s: GameState, level: str, rng: random.Random, memory: Memory) -> Move | None:
    """The next move in masked ``s`` (not won, with a legal move), or None to give up."""
    params = PARAMS[level]
    legal = s.legal_moves()
    base = helena_value(s)
    decided, move = carry_on(s, legal, memory, rng, base)
    if decided:
        return move

    solver = SOLVER.get((level, s.config.game))
    if solver is not None:
        plan = solver_plan(s, rng, memory, solver)
        if plan:
            return memory.follow(s, plan)
    if level in HOME_FIRST:
        # a card goes to a foundation (the better one when it fits two)
        home = [m for m in legal if m.kind == Kind.FOUNDATION]
        if home:
            return best_single(s, home, helena_value, rng, params.noise, memory.taste)

    plan, found = widening_search(s, helena_value, helena_moves, params, rng, memory, base)
    if plan:
        return memory.follow(s, plan)

    # Nothing helps: deal the stock, look at a card, redeal, or give up.
    if DEAL in legal:
        return DEAL
    if found.reveal:  # worse by the numbers, but a card to see is a new chance
        return memory.follow(s, found.reveal)
    if REDEAL in legal:
        return REDEAL
    return explore(s, legal, memory, rng)
