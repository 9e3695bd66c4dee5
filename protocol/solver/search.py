"""The search every game shares: greedy best-first with a transposition table and a bounded frontier.

A game family plugs in as a :class:`Domain`: a compact state of tuples and ints (never the
engine's :class:`~protocol.game.GameState`, which is too slow to copy in a search loop), the
children of a state (each with its evaluation and the engine move that leads to it), and the
test for a won state.  The search keeps the states it has met in a table keyed by the domain's
canonical key, so no state is expanded twice (which also rules out pointless back-and-forth),
and the frontier in a heap ordered by evaluation (ties: the newest first, which dives).  When
the frontier outgrows its cap it keeps only its best half: the search is then no longer
exhaustive, and a frontier that runs dry restarts with a cap four times bigger.

Only a search that never dropped a state, with the domain's *complete* move generator (every
legal move, no pruning), may conclude that a position is unwinnable.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..moves import Move

Path = tuple[Move, "Path"] | None
"""A move list as a linked list, newest move first: children share their parent's path."""


class Domain(Protocol):
    def value(self, s: Any) -> int: ...

    def children(self, s: Any, complete: bool) -> Iterable[tuple[int, Move, Any]]:
        """``(evaluation, engine move, child state)`` for each move searched from ``s``."""
        ...

    def won(self, s: Any) -> bool: ...

    def key(self, s: Any, complete: bool) -> Hashable:
        """The state's canonical key (a hash is enough when ``complete`` is False)."""
        ...


FOUND = "found"
EXHAUSTED = "exhausted"
BUDGET = "budget"


@dataclass
class Outcome:
    how: str
    """``found``, ``exhausted`` (the frontier ran dry; exact if ``dropped`` is False) or ``budget``."""
    moves: list[Move]
    nodes: int
    dropped: bool


class Budget:
    """Nodes and seconds left; checks the clock only every few nodes."""

    def __init__(self, nodes: int, seconds: float, clock: Callable[[], float]) -> None:
        self.limit = nodes
        self.used = 0
        self.clock = clock
        self.deadline = clock() + seconds

    def spend(self) -> bool:
        """Count one node; False once the budget is gone."""
        self.used += 1
        if self.used >= self.limit:
            return False
        if not self.used & 63 and self.clock() >= self.deadline:
            return False
        return True

    def left(self) -> bool:
        return self.used < self.limit and self.clock() < self.deadline


def path_moves(path: Path) -> list[Move]:
    out: list[Move] = []
    while path is not None:
        move, path = path
        out.append(move)
    out.reverse()
    return out


def best_first(
    domain: Domain, start: Any, budget: Budget, *, complete: bool, cap: int
) -> Outcome:
    """One greedy best-first search from ``start`` with a frontier of at most ``cap`` states."""
    nodes0 = budget.used
    if domain.won(start):
        return Outcome(FOUND, [], 0, False)
    key = domain.key
    children = domain.children
    won = domain.won
    seen: set[Hashable] = {key(start, complete)}
    counter = 0
    heap: list[tuple[int, int, Any, Path]] = [(-domain.value(start), 0, start, None)]
    dropped = False
    pop = heapq.heappop
    push = heapq.heappush
    while heap:
        if not budget.spend():
            return Outcome(BUDGET, [], budget.used - nodes0, dropped)
        _, _, s, path = pop(heap)
        for v, move, child in children(s, complete):
            k = key(child, complete)
            if k in seen:
                continue
            seen.add(k)
            child_path: Path = (move, path)
            if won(child):
                return Outcome(FOUND, path_moves(child_path), budget.used - nodes0, dropped)
            counter -= 1
            push(heap, (-v, counter, child, child_path))
        if len(heap) > cap:
            heap = heapq.nsmallest(cap // 2, heap)
            heapq.heapify(heap)
            dropped = True
    return Outcome(EXHAUSTED, [], budget.used - nodes0, dropped)


def search(domain: Domain, start: Any, budget: Budget, *, cap: int = 20_000) -> Outcome:
    """Pruned best-first, restarted with a 4x bigger frontier while it runs dry having dropped
    states; then, if the pruned search ran dry without dropping anything, the complete search,
    whose running dry without dropping anything proves the position unwinnable."""
    used = 0
    while True:
        out = best_first(domain, start, budget, complete=False, cap=cap)
        used += out.nodes
        if out.how != EXHAUSTED or out.dropped:
            if out.how == EXHAUSTED and budget.left():
                cap *= 4
                continue
            out.nodes = used
            return out
        break
    # the pruned search is exhaustive only for its pruned moves: settle it with every move
    cap_complete = 1 << 62
    out = best_first(domain, start, budget, complete=True, cap=cap_complete)
    out.nodes += used
    return out
