"""St. Helena and Louis for the solver: a compact state, move generation, an evaluation.

A state is ``(piles, found, redeals, taken, dealt, value)``: the twelve piles as tuples of card
codes bottom to top, the top card of each of the eight foundations (kings C S H D building down,
then aces C S H D building up), redeals left, how many stock cards have been taken (Louis), whether
the stock has been dealt (always in St. Helena), and the evaluation.

The evaluation rewards cards home above all, then how near the top of its pile lies the next card
each foundation wants (the nearer copy of the two), links (a card on a card it may build on), and
redeals and the Louis stock deal kept in hand, so that irreversible steps come last.

Moves are one card each.  The pruned generator tries only the first empty pile, and never moves a
pile's only card to an empty pile; otherwise it is complete (one-card moves need no more pruning:
the transposition table removes back-and-forth).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from ..config import LOUIS
from ..game import GameState
from ..helena import HelenaState
from ..moves import DEAL, REDEAL, Kind, Move

PILES = 12
W_HOME = 100
W_NEAR = 6
NEAR_DEPTH = 10
W_LINK = 3
W_REDEAL = 60
W_STOCK = 40

State = tuple[tuple[tuple[int, ...], ...], tuple[int, ...], int, int, bool, int]


def _progress(f: int, top: int) -> int:
    return 12 - top % 13 if f < 4 else top % 13


def _wants(f: int, top: int) -> int:
    """The card foundation ``f`` takes next, -1 if it is complete."""
    if f < 4:
        return -1 if top % 13 == 0 else top - 1
    return -1 if top % 13 == 12 else top + 1


class HelenaDomain:
    def __init__(self, state: GameState) -> None:
        assert isinstance(state, HelenaState)
        self.louis = state.config.game == LOUIS
        self.same_suit = state.config.option("build") == "suit"
        self.spaces = (not self.louis) and state.config.option("spaces") == "any"
        self.stock: tuple[int, ...] = tuple(reversed(state.stock))
        piles = tuple(tuple(p) for p in state.piles)
        found = tuple(f[-1] for f in state.foundations)
        s = (piles, found, state.redeals_left, 0, state.stock_dealt, 0)
        self.start: State = (*s[:5], self._value(s))

    def _first(self, redeals: int) -> bool:
        return not self.louis and redeals == 2

    def _value(self, s: Any) -> int:
        piles, found, redeals, _taken, dealt, _ = s
        v = W_REDEAL * redeals + (0 if dealt else W_STOCK)
        wanted: dict[int, int] = {}
        for f, top in enumerate(found):
            v += W_HOME * _progress(f, top)
            w = _wants(f, top)
            if w >= 0:
                wanted[w] = wanted.get(w, 0) + 1
        if wanted:
            best = dict.fromkeys(wanted, NEAR_DEPTH)
            for p in piles:
                n = len(p)
                for depth in range(min(n, NEAR_DEPTH)):
                    c = p[n - 1 - depth]
                    if c in best and depth < best[c]:
                        best[c] = depth
            v -= W_NEAR * sum(best[c] * k for c, k in wanted.items())
        same = self.same_suit
        for p in piles:
            for i in range(len(p) - 1):
                a = p[i]
                b = p[i + 1]
                if abs(a % 13 - b % 13) == 1 and (not same or a // 13 == b // 13):
                    v += W_LINK
        return v

    def value(self, s: State) -> int:
        return s[5]

    def key(self, s: State, complete: bool) -> Hashable:
        k = s[:5]
        return k if complete else hash(k)

    def won(self, s: State) -> bool:
        return all(_wants(f, top) < 0 for f, top in enumerate(s[1]))

    def _make(self, piles: Any, found: Any, redeals: int, taken: int, dealt: bool) -> State:
        s = (piles, found, redeals, taken, dealt, 0)
        return (piles, found, redeals, taken, dealt, self._value(s))

    def _after_take(self, lp: list[tuple[int, ...]], si: int, taken: int, dealt: bool) -> int:
        """Louis: an emptied pile takes the stock's next card before the stock is dealt."""
        if not dealt and not lp[si] and taken < len(self.stock):
            lp[si] = (self.stock[taken],)
            return taken + 1
        return taken

    def children(self, s: State, complete: bool) -> Iterator[tuple[int, Move, State]]:
        piles, found, redeals, taken, dealt, _ = s
        first = self._first(redeals)
        wants: dict[int, list[int]] = {}
        for f, top in enumerate(found):
            w = _wants(f, top)
            if w >= 0:
                wants.setdefault(w, []).append(f)
        same = self.same_suit
        empties = [i for i, p in enumerate(piles) if not p] if self.spaces else []
        out: list[tuple[int, Move, State]] = []
        for si, p in enumerate(piles):
            if not p:
                continue
            card = p[-1]
            for f in wants.get(card, ()):
                if first and ((si < 4 and f >= 4) or (6 <= si < 10 and f < 4)):
                    continue
                lp = list(piles)
                lp[si] = p[:-1]
                t = self._after_take(lp, si, taken, dealt)
                lf = list(found)
                lf[f] = card
                child = self._make(tuple(lp), tuple(lf), redeals, t, dealt)
                out.append((child[5], Move(Kind.FOUNDATION, si, f, 1), child))
            rank = card % 13
            for di, q in enumerate(piles):
                if di == si or not q:
                    continue
                top = q[-1]
                diff = rank - top % 13
                if (diff == 1 or diff == -1) and (not same or card // 13 == top // 13):
                    lp = list(piles)
                    lp[si] = p[:-1]
                    lp[di] = (*q, card)
                    t = self._after_take(lp, si, taken, dealt)
                    child = self._make(tuple(lp), found, redeals, t, dealt)
                    out.append((child[5], Move(Kind.TABLEAU, si, di, 1), child))
            if empties and (complete or len(p) > 1):
                for di in empties if complete else empties[:1]:
                    lp = list(piles)
                    lp[si] = p[:-1]
                    lp[di] = (card,)
                    child = self._make(tuple(lp), found, redeals, taken, dealt)
                    out.append((child[5], Move(Kind.TABLEAU, si, di, 1), child))
        if not dealt:
            lists = [list(p) for p in piles]
            for k, c in enumerate(self.stock[taken:]):
                lists[k % PILES].append(c)
            child = self._make(tuple(map(tuple, lists)), found, redeals, len(self.stock), True)
            out.append((child[5], DEAL, child))
        elif redeals:
            pack = [c for p in piles for c in p]
            pack.reverse()
            dealt_again = tuple(tuple(pack[k::PILES]) for k in range(PILES))
            child = self._make(dealt_again, found, redeals - 1, taken, dealt)
            out.append((child[5], REDEAL, child))
        return iter(out)
