"""Spider for the solver: a compact state, pruned and complete move generation, an evaluation.

A state is ``(piles, down, dealt, found, value)``: the ten piles as tuples of card codes bottom to
top, the face-down count of each, the rows dealt from the stock so far, the suits sent home, and
the evaluation (kept up to date move by move: a move between piles changes it only by the link it
breaks, the link it makes, a card it turns and a pile it empties, looked up in a table of every
pair of cards; a deal or a suit going home re-scores the piles it touches, each pile's score
memoized).

The evaluation rewards suits home, face-down cards turned, same-suit links (a card with the
same-suit card one rank lower on it), less so rank-only links, and empty piles; it charges for
every break in the face-up cards.  The pruned moves:

- a complete K..A run goes home at once, and is then the only move;
- a run that already sits on a card one rank higher moves only onto a same-suit card one rank
  higher (no lateral moves that change nothing useful);
- onto an empty pile only the first empty pile is tried (empty piles are alike), with the whole
  movable run, and never a pile that is nothing but that run (it would only swap places).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from ..game import GameState
from ..moves import DEAL, Kind, Move

PILES = 10
W_FOUND = 400
W_DOWN = 60
W_SUIT = 20
W_RANK = 4
W_BREAK = 6
W_EMPTY = 30
W_DEAL = 2

State = tuple[tuple[tuple[int, ...], ...], tuple[int, ...], int, int, int]


def top_run(p: tuple[int, ...], up: int) -> int:
    """How many top cards of ``p`` form a same-suit run descending by one (at most ``up``)."""
    if up == 0:
        return 0
    n = 1
    i = len(p) - 1
    while n < up:
        a = p[i]
        if p[i - 1] != a + 1 or a % 13 == 12:
            break
        n += 1
        i -= 1
    return n


def link_value(a: int, b: int) -> int:
    """What card ``b`` lying on card ``a`` adds to a pile's evaluation."""
    if b == a - 1 and a % 13:
        return W_SUIT
    if b % 13 + 1 == a % 13:
        return W_RANK
    return -W_BREAK


LINKS: tuple[int, ...] = tuple(link_value(a, b) for a in range(52) for b in range(52))
""":func:`link_value` of cards ``a`` and ``b`` at ``a * 52 + b`` (a constant table)."""
MOVES: tuple[Move, ...] = tuple(
    Move(Kind.TABLEAU, si, di, n) for si in range(PILES) for di in range(PILES) for n in range(14)
)
"""The pile-to-pile move of ``n`` cards from ``si`` to ``di`` at ``(si * PILES + di) * 14 + n``
(a run that moves as a unit has at most 13 cards)."""


class SpiderDomain:
    def __init__(self, state: GameState) -> None:
        self.relaxed: int = state.config.option("relaxed")
        order = list(reversed(state.stock))  # dealing order
        self.rows: tuple[tuple[int, ...], ...] = tuple(
            tuple(order[i : i + PILES]) for i in range(0, len(order), PILES)
        )
        self._memo: dict[tuple[tuple[int, ...], int], int] = {}
        piles = tuple(tuple(p) for p in state.piles)
        down = tuple(state.down)
        found = sum(1 for f in state.foundations if f)
        self.start: State = (piles, down, 0, found, self._value(piles, down, 0, found))

    # -- evaluation ------------------------------------------------------------------------

    def pile_value(self, p: tuple[int, ...], d: int) -> int:
        k = (p, d)
        v = self._memo.get(k)
        if v is not None:
            return v
        if not p:
            v = W_EMPTY
        else:
            v = -W_DOWN * d
            for i in range(d, len(p) - 1):
                v += link_value(p[i], p[i + 1])
        if len(self._memo) > 400_000:
            self._memo.clear()
        self._memo[k] = v
        return v

    def _value(self, piles: Any, down: Any, dealt: int, found: int) -> int:
        pv = self.pile_value
        return (
            W_FOUND * found
            - W_DEAL * dealt
            + sum(pv(p, d) for p, d in zip(piles, down, strict=True))
        )

    def value(self, s: State) -> int:
        return s[4]

    def key(self, s: State, complete: bool) -> Hashable:
        k = (s[0], s[1])
        return k if complete else hash(k)

    # -- rules -------------------------------------------------------------------------------

    def won(self, s: State) -> bool:
        if s[2] < len(self.rows) or any(s[1]):
            return False
        return all(not p or (len(p) == 13 and top_run(p, 13) == 13) for p in s[0])

    def _can_deal(self, piles: Any, down: Any) -> bool:
        if not any(not p for p in piles):
            return True
        if self.relaxed == 0:
            return False
        for p, d in zip(piles, down, strict=True):
            if not p:
                continue
            if d:
                return False
            if self.relaxed == 1:
                if top_run(p, len(p)) != len(p):
                    return False
            elif any(p[i] % 13 != p[i + 1] % 13 + 1 for i in range(len(p) - 1)):
                return False
        return True

    def children(self, s: State, complete: bool) -> Iterator[tuple[int, Move, State]]:
        piles, down, dealt, found, value = s
        pv = self.pile_value
        # a complete suit goes home (pruned: at once, and nothing else is tried)
        for i, p in enumerate(piles):
            d = down[i]
            if len(p) - d >= 13 and p[-1] % 13 == 0 and top_run(p, 13) == 13:
                np_ = p[:-13]
                nd = d - 1 if d and len(np_) == d else d
                v = value - pv(p, d) + pv(np_, nd) + W_FOUND
                lp = list(piles)
                lp[i] = np_
                l2 = list(down)
                l2[i] = nd
                yield v, Move(Kind.FOUNDATION, i, -1), (tuple(lp), tuple(l2), dealt, found + 1, v)
                if not complete:
                    return
        empties = [i for i, p in enumerate(piles) if not p]
        # a deal needs every pile filled: when every pile is a lone run, split one
        fill_by_split = (
            bool(empties)
            and dealt < len(self.rows)
            and all(
                not p or (not down[i] and top_run(p, len(p)) == len(p)) for i, p in enumerate(piles)
            )
        )
        link = LINKS
        moves = MOVES
        tops = [q[-1] % 13 if q else -99 for q in piles]
        for si, p in enumerate(piles):
            ds = down[si]
            size = len(p)
            up = size - ds
            if not up:
                continue
            run = top_run(p, up)
            top_r = tops[si]
            for di, t in enumerate(tops):
                n = t - top_r
                if not 1 <= n <= run or di == si:
                    continue
                q = piles[di]
                moved = p[-n]
                rest = size - n
                if rest > ds:
                    below = p[rest - 1]
                    if not complete and below % 13 == moved % 13 + 1 and q[-1] != moved + 1:
                        continue  # already on a card one rank higher: no lateral move
                    v = value - link[below * 52 + moved]
                    nd = ds
                elif ds:
                    v = value + W_DOWN
                    nd = ds - 1
                else:
                    v = value + W_EMPTY
                    nd = 0
                v += link[q[-1] * 52 + moved]
                lp = list(piles)
                lp[si] = p[:rest]
                lp[di] = q + p[rest:]
                ld = down
                if nd != ds:
                    l2 = list(down)
                    l2[si] = nd
                    ld = tuple(l2)
                yield v, moves[(si * PILES + di) * 14 + n], (tuple(lp), ld, dealt, found, v)
            if not empties:
                continue
            targets = empties if complete else empties[:1]
            if complete:
                counts: Any = range(1, run + 1)
            else:
                counts = [run] if size > run else []
                if fill_by_split and run > 1:
                    counts.append(1)  # split a run: its top card fills the pile
            for di in targets:
                for n in counts:
                    rest = size - n
                    if rest > ds:
                        v = value - link[p[rest - 1] * 52 + p[rest]] - W_EMPTY
                        nd = ds
                    elif ds:
                        v = value + W_DOWN - W_EMPTY
                        nd = ds - 1
                    elif complete:
                        v = value  # the pile only changes places
                        nd = 0
                    else:
                        continue  # the pile would only change places
                    lp = list(piles)
                    lp[si] = p[:rest]
                    lp[di] = p[rest:]
                    l2 = list(down)
                    l2[si] = nd
                    move = moves[(si * PILES + di) * 14 + n]
                    yield v, move, (tuple(lp), tuple(l2), dealt, found, v)
        if dealt < len(self.rows) and self._can_deal(piles, down):
            row = self.rows[dealt]
            lp = [(*p, c) for p, c in zip(piles, row, strict=True)]
            v = value - W_DEAL
            for p, q, d in zip(piles, lp, down, strict=True):
                v += pv(q, d) - pv(p, d)
            yield v, DEAL, (tuple(lp), down, dealt + 1, found, v)
