"""A full-information solver for every game and option: certified solutions, or "unwinnable".

    result = solve_deal(GameConfig("spider", {"suits": 1}), 12345, seconds=5)
    result.status     # "solved", "not found" (within the budget) or "unwinnable"
    result.moves      # the solution in move notation (protocol.notation), as a record holds it

The solver sees every card (the server's view of a deal).  It searches a compact copy of the
position (:mod:`protocol.solver.spider`, :mod:`protocol.solver.helena`) with the shared best-first
search of :mod:`protocol.solver.search`, drops the moves it found that are taken straight back
later (:func:`protocol.solver.search.shorten`), then replays the rest through the rules engine
itself (``state_class(config)`` and ``apply``) before it answers "solved": a solver bug can make it
miss a solution, never claim a wrong one.  "unwinnable" is said only after an exhaustive search
(every legal move, no state dropped).  Pure: no I/O; time comes from the ``clock`` passed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import SPIDER, GameConfig
from ..game import GameState, new_game
from ..moves import IllegalMove, Move
from ..notation import format_move, parse_move
from ..record import GameRecord, Result
from .helena import HelenaDomain
from .search import BUDGET, EXHAUSTED, FOUND, Budget, best_before_stage_end, search, shorten
from .spider import SpiderDomain

SOLVED = "solved"
NOT_FOUND = "not found"
UNWINNABLE = "unwinnable"

DEFAULT_NODES = 2_000_000
DEFAULT_SECONDS = 30.0


class SolverBug(RuntimeError):
    """The search found moves the rules engine does not accept or that do not win."""


@dataclass
class SolveResult:
    status: str
    """``solved``, ``not found`` (no solution within the budget) or ``unwinnable`` (proved)."""
    moves: list[str] = field(default_factory=list)
    """The solution in move notation, each in its shortest form where it is played."""
    nodes: int = 0
    """States expanded."""
    seconds: float = 0.0
    engine_moves: list[Move] = field(default_factory=list)

    @property
    def solved(self) -> bool:
        return self.status == SOLVED

    @property
    def message(self) -> str:
        if self.status == SOLVED:
            return f"solved in {len(self.moves)} moves"
        if self.status == UNWINNABLE:
            return "unwinnable: an exhaustive search found no way to win"
        return "no solution found within the budget"


def domain_for(state: GameState) -> Any:
    if state.config.game == SPIDER:
        return SpiderDomain(state)
    return HelenaDomain(state)


def verify(state: GameState, moves: list[Move]) -> list[str]:
    """Play ``moves`` on a copy of ``state`` with the rules engine; their notation if they win."""
    s = state.copy()
    out: list[str] = []
    for i, move in enumerate(moves):
        before = s.copy()
        try:
            change = s.apply(move)
        except IllegalMove as exc:
            raise SolverBug(f"solution move {i + 1} {move!r} is illegal: {exc}") from exc
        out.append(format_move(change.move, before))
    if not s.won:
        raise SolverBug("the solution's moves do not win")
    return out


def solve(
    state: GameState,
    *,
    nodes: int = DEFAULT_NODES,
    seconds: float = DEFAULT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> SolveResult:
    """Solve ``state`` (every card known) within ``nodes`` expanded states and ``seconds``."""
    t0 = clock()
    if state.won:
        return SolveResult(SOLVED, [], 0, 0.0)
    if state.resigned:
        return SolveResult(UNWINNABLE, [], 0, 0.0)
    domain = domain_for(state)
    budget = Budget(nodes, seconds, clock)
    out = search(domain, domain.start, budget)
    elapsed = clock() - t0
    if out.how == FOUND:
        moves = shorten(domain, domain.start, out.moves, budget)
        elapsed = clock() - t0
        notation = verify(state, moves)
        return SolveResult(SOLVED, notation, out.nodes, elapsed, moves)
    if out.how == EXHAUSTED and not out.dropped:
        return SolveResult(UNWINNABLE, [], out.nodes, elapsed)
    assert out.how in (BUDGET, EXHAUSTED)
    return SolveResult(NOT_FOUND, [], out.nodes, elapsed)


def best_before_deal(
    state: GameState,
    *,
    nodes: int,
    seconds: float = DEFAULT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[Move], int]:
    """With every card of ``state`` known: the moves to the best position the solver finds
    before the next deal or redeal (within ``nodes`` expanded states and ``seconds``; no moves
    when nothing beats ``state``), and that position's value by the solver's evaluation (suits
    home, cards turned, runs built).  Unchecked by the rules engine: the caller plays the moves on
    its own copy."""
    domain = domain_for(state)
    return best_before_stage_end(domain, domain.start, Budget(nodes, seconds, clock))


def solve_deal(config: GameConfig, number: int | str, **budget: Any) -> SolveResult:
    """Solve deal ``number`` of ``config`` from its start."""
    return solve(new_game(config, number), **budget)


def solution_record(config: GameConfig, number: int, result: SolveResult) -> GameRecord:
    """A game record of the solution that ``patience-race replay`` accepts (with its result)."""
    state = new_game(config, number)
    for text in result.moves:
        state.apply(parse_move(text))
    return GameRecord(
        game=config.game,
        options=dict(config.options),
        numbering=config.numbering,
        number=config.check_number(number),
        moves=list(result.moves),
        result=Result.of(state),
    )


__all__ = [
    "NOT_FOUND",
    "SOLVED",
    "UNWINNABLE",
    "SolveResult",
    "SolverBug",
    "best_before_deal",
    "solution_record",
    "solve",
    "solve_deal",
    "verify",
]
