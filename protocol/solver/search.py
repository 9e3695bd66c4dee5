"""The search every game shares: best-first with a transposition table, by stages between deals.

A game family plugs in as a :class:`Domain`: a compact state of tuples and ints (never the
engine's :class:`~protocol.game.GameState`, which is too slow to copy in a search loop), the
children of a state (each with its evaluation and the engine move that leads to it), and the
test for a won state.  The search keeps the states it has met in a table keyed by the domain's
canonical key, so no state is expanded twice (which also rules out pointless back-and-forth),
and the frontier in a heap ordered by evaluation (ties: the newest first, which dives).

The search runs by stages (:func:`staged`): a deal or redeal ends a stage, and only the best few
states after it go on to the next stage, a beam over the deals; within a stage it is best-first
with a capped frontier (past the cap it keeps only its best half).  A stage that leads nowhere
backtracks to the next candidates of the stage before; a staged search that has used its
allowance restarts with bigger stages and a wider beam.  A solution found is then shortened
(:func:`shorten`: moves taken straight back later are dropped).

Only a search that never dropped a state, with the domain's *complete* move generator (every
legal move, no pruning), may conclude that a position is unwinnable (:func:`best_first` with
``complete=True``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..moves import Kind, Move

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
        if self.used >= self.limit:
            return False
        self.used += 1
        return bool(self.used & 63) or self.clock() < self.deadline

    def left(self) -> bool:
        return self.used < self.limit and self.clock() < self.deadline


def path_moves(path: Path) -> list[Move]:
    out: list[Move] = []
    while path is not None:
        move, path = path
        out.append(move)
    out.reverse()
    return out


def best_first(domain: Domain, start: Any, budget: Budget, *, complete: bool, cap: int) -> Outcome:
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


STAGE_KINDS = (Kind.DEAL, Kind.REDEAL)
"""The moves that end a stage: a deal from the stock, a redeal."""


def best_before_stage_end(domain: Domain, start: Any, budget: Budget) -> tuple[list[Move], int]:
    """The best state (by the domain's evaluation) reachable from ``start`` without a deal or
    redeal, by best-first search over the pruned moves within ``budget``: its moves (empty when
    nothing beats ``start``) and its evaluation.

    Not a solver: it answers what the rest of this stage can make of the position (how many cards
    it can turn, which runs it can build) when every card is known.
    """
    key = domain.key
    children = domain.children
    base = domain.value(start)
    best_value = base
    best: Path = None
    seen: set[Hashable] = {key(start, False)}
    heap: list[tuple[int, int, Any, Path]] = [(-base, 0, start, None)]
    counter = 0
    pop = heapq.heappop
    push = heapq.heappush
    while heap and budget.spend():
        _, _, s, path = pop(heap)
        for v, move, child in children(s, False):
            if move.kind in STAGE_KINDS:
                continue
            k = key(child, False)
            if k in seen:
                continue
            seen.add(k)
            child_path: Path = (move, path)
            if v > best_value:
                best_value, best = v, child_path
            counter -= 1
            push(heap, (-v, counter, child, child_path))
    return path_moves(best), best_value


DEFAULT_CAP = 20_000
PROBE_NODES = 200
"""The complete search's first try: enough to settle a small position exactly."""
STAGE_NODES = 1_000
KEEP = 8
RESTARTS = 6
"""Staged searches (each with 4x the stage nodes and 2x the kept states) before the complete one."""


def search(domain: Domain, start: Any, budget: Budget) -> Outcome:
    """The solver's plan.

    1. A short complete search (every legal move, nothing dropped): it settles small positions
       exactly, solved or unwinnable.
    2. The staged best-first search with pruned moves, restarted with bigger stages while it runs
       dry (a kept state can still lead nowhere).
    3. If the budget remains, the complete search with all of it: running dry without dropping a
       state proves the position unwinnable.
    """
    used = 0
    probe = Budget(min(PROBE_NODES, budget.limit - budget.used), 1e9, budget.clock)
    probe.deadline = budget.deadline
    out = best_first(domain, start, probe, complete=True, cap=1 << 62)
    budget.used += out.nodes
    used += out.nodes
    if out.how != BUDGET:
        return out
    stage_nodes, keep = STAGE_NODES, KEEP
    for _ in range(RESTARTS):
        out = staged(domain, start, budget, stage_nodes=stage_nodes, keep=keep, cap=DEFAULT_CAP)
        used += out.nodes
        if out.how != EXHAUSTED or not budget.left():
            out.nodes = used
            return out
        stage_nodes *= 4
        keep *= 2
    out = best_first(domain, start, budget, complete=True, cap=1 << 62)
    out.nodes += used
    return out


def staged(
    domain: Domain, start: Any, budget: Budget, *, stage_nodes: int, keep: int, cap: int
) -> Outcome:
    """Best-first by stages, a beam over the deals (and redeals), backtracking between stages.

    Within a stage (between two deals) the search is best-first from the states the last stage
    kept; a deal ends a stage, so its child is set aside as a candidate instead of searched.  Once
    the stage has expanded ``stage_nodes`` states and found a candidate, the ``keep`` best
    candidates (by their value after the deal, which sees the dealt cards) start the next stage.
    This keeps the search from wandering a stage's huge plateau of shuffles before it deals.

    A stage whose pruned moves run dry without a candidate is searched again from the same states
    with every legal move (the pruning can hide the one way on); if that runs dry too, or a stage
    expands ``STAGE_LIMIT`` times ``stage_nodes`` states without a candidate (or a win, after the
    last deal), the search backtracks: the next ``keep`` candidates of the stage before start it again, up to
    ``BATCHES`` batches per stage, then the stage before that, and so on.  The whole staged search
    gives up (as if it had run dry) after ``ALLOWANCE`` times ``stage_nodes`` states.
    """
    nodes0 = budget.used
    if domain.won(start):
        return Outcome(FOUND, [], 0, False)
    key = domain.key
    children = domain.children
    won = domain.won
    pop = heapq.heappop
    push = heapq.heappush
    frontier: list[tuple[int, int, Any, Path]] = [(-domain.value(start), 0, start, None)]
    counter = 0
    limit = stage_nodes * STAGE_LIMIT
    allowance = stage_nodes * ALLOWANCE
    levels: list[tuple[list[tuple[int, int, Any, Path]], list[int]]] = []
    """The candidates not yet tried of each stage on the way here, and the batches taken."""
    while True:
        candidates: list[tuple[int, int, Any, Path]] = []
        for complete in (False, True):
            heap = list(frontier)
            heapq.heapify(heap)
            seen: set[Hashable] = {key(entry[2], False) for entry in heap}
            expanded = 0
            while heap and (expanded < stage_nodes or not candidates) and expanded < limit:
                if not budget.spend():
                    return Outcome(BUDGET, [], budget.used - nodes0, True)
                if budget.used - nodes0 > allowance:
                    return Outcome(EXHAUSTED, [], budget.used - nodes0, True)
                expanded += 1
                _, _, s, path = pop(heap)
                for v, move, child in children(s, complete):
                    k = key(child, False)
                    if k in seen:
                        continue
                    seen.add(k)
                    child_path: Path = (move, path)
                    if won(child):
                        return Outcome(FOUND, path_moves(child_path), budget.used - nodes0, True)
                    counter -= 1
                    entry = (-v, counter, child, child_path)
                    if move.kind in STAGE_KINDS:
                        candidates.append(entry)
                    else:
                        push(heap, entry)
                if len(heap) > cap:
                    heap = heapq.nsmallest(cap // 2, heap)
                    heapq.heapify(heap)
            if candidates or heap:
                break  # the stage ends, or it gave up (``limit``) without running dry
        if candidates:
            heapq.heapify(candidates)
            levels.append((candidates, [0]))
        while levels and (not levels[-1][0] or levels[-1][1][0] >= BATCHES):
            levels.pop()
        if not levels:
            return Outcome(EXHAUSTED, [], budget.used - nodes0, True)
        cands, taken = levels[-1]
        taken[0] += 1
        frontier = [pop(cands) for _ in range(min(keep, len(cands)))]


BATCHES = 3
STAGE_LIMIT = 10
ALLOWANCE = 15
"""A staged search that expanded this many times ``stage_nodes`` states gives up, so that the
search restarts with bigger stages (a bad early stage is not fixed by backtracking late ones)."""
"""A stage that expanded this many times ``stage_nodes`` without a candidate (the last stage: a
win) gives up, and the search backtracks."""
"""Batches of candidates a stage may start the next stage with before the search backtracks."""


def _step(domain: Domain, s: Any, move: Move) -> Any:
    """The state after ``move`` (None if it is not a legal move of ``s``)."""
    return next((c for _, m, c in domain.children(s, True) if m == move), None)


def _replay(domain: Domain, start: Any, moves: list[Move]) -> list[Any] | None:
    """The states along ``moves`` if they are legal and only the last is won, else None."""
    states = [start]
    s = start
    for move in moves:
        if domain.won(s):
            return None
        s = _step(domain, s, move)
        if s is None:
            return None
        states.append(s)
    return states if domain.won(s) else None


def _undone(moves: list[Move]) -> dict[int, int]:
    """Each pile-to-pile move whose cards go straight back later: its index, the undo's index.

    The undo moves the same count from the first move's target to its source, and the moves
    between them are pile-to-pile moves that touch neither pile.
    """
    out: dict[int, int] = {}
    n = len(moves)
    for i, x in enumerate(moves):
        if x.kind != Kind.TABLEAU:
            continue
        ends = (x.src, x.dst)
        for k in range(i + 1, n):
            y = moves[k]
            if y.kind != Kind.TABLEAU:
                break
            if y.src == x.dst and y.dst == x.src and y.count == x.count:
                out[i] = k
                break
            if y.src in ends or y.dst in ends:
                break
    return out


def shorten(domain: Domain, start: Any, moves: list[Move], budget: Budget) -> list[Move]:
    """A cheap pass over a solution: drop each move that a later move simply takes back.

    A pile-to-pile move whose cards go straight back later (:func:`_undone`) is dropped with the
    move that undoes it, when the moves between lead to the very state that followed the undo (so
    a card the first move turned up, or a Louis refill, keeps the pair).  The states are replayed
    in the domain, and the shorter list again from the start: if it does not win there (it always
    should), the solution is returned as it was.  Repeated while it helps and the budget lasts.
    """
    key = domain.key
    for _ in range(SHORTEN_PASSES):
        undone = _undone(moves)
        if not undone or not budget.left():
            break
        states = _replay(domain, start, moves)
        if states is None:
            break
        out: list[Move] = []
        i = 0
        n = len(moves)
        while i < n:
            back = undone.get(i, -1)
            if back >= 0:
                s = states[i]
                for m in moves[i + 1 : back]:
                    s = _step(domain, s, m)
                    if s is None:
                        break
                if s is not None and key(s, True) == key(states[back + 1], True):
                    out.extend(moves[i + 1 : back])
                    i = back + 1
                    continue
            out.append(moves[i])
            i += 1
        if len(out) == len(moves) or _replay(domain, start, out) is None:
            break
        moves = out
    return moves


SHORTEN_PASSES = 4
