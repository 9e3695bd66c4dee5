"""The solver (protocol.solver) and ``patience-race solve``: solutions that the engine and
``patience-race replay`` accept, budgets honoured, and "unwinnable" only from exhaustive search."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from protocol.config import GameConfig
from protocol.game import GameState, new_game
from protocol.moves import Kind, Move
from protocol.notation import parse_move
from protocol.record import load, replay
from protocol.solver import (
    NOT_FOUND,
    SOLVED,
    UNWINNABLE,
    SolverBug,
    best_before_deal,
    solution_record,
    solve,
    solve_deal,
    verify,
)

from .rules_helpers import helena, spider, suit_run

ROOT = Path(__file__).resolve().parents[1]
ENOUGH = dict(nodes=60_000, seconds=600.0)
"""A node budget the easy deals below need well under; the time budget never binds."""

EASY = [
    ("spider", {"suits": 1}, 2),
    ("spider", {"suits": 2}, 3),
    ("spider", {"suits": 4}, 1),
    ("spider", {"suits": 1, "relaxed": 2}, 2),
    ("st-helena", {"build": "any"}, 3),
    ("st-helena", {"spaces": "any"}, 2),
    ("louis", {}, 7),
    ("louis", {"build": "any"}, 1),
]


def play(config: GameConfig, number: int, moves: list[str]) -> GameState:
    state = new_game(config, number)
    for text in moves:
        state.apply(parse_move(text))
    return state


@pytest.mark.parametrize(("game", "options", "number"), EASY)
def test_solves_easy_deals_and_the_engine_agrees(
    game: str, options: dict[str, Any], number: int
) -> None:
    config = GameConfig(game, options)
    result = solve_deal(config, number, **ENOUGH)
    assert result.status == SOLVED, result.message
    assert result.moves and 0 < result.nodes <= ENOUGH["nodes"]
    assert play(config, number, result.moves).won
    record = solution_record(config, number, result)
    assert replay(load(record.dumps())).won


def test_solves_from_the_middle_of_a_game() -> None:
    """A hint in practice: the solver starts from any position, not only a deal's start."""
    config = GameConfig("spider", {"suits": 1})
    first = solve_deal(config, 2, **ENOUGH)
    state = play(config, 2, first.moves[:40])
    result = solve(state, **ENOUGH)
    assert result.solved
    assert play(config, 2, first.moves[:40] + result.moves).won


def test_solve_command_writes_a_record_that_replay_accepts(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "client.cli"]
    solved = subprocess.run(
        [*cli, "solve", "spider", "2", "--suits", "1", "--nodes", "60000", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert solved.returncode == 0, solved.stderr
    assert "solved in" in solved.stderr and "nodes searched" in solved.stderr
    data = json.loads(solved.stdout)
    assert data["format"] == "patience-race-record" and data["result"]["won"] is True
    path = tmp_path / "solution.json"
    path.write_text(solved.stdout)
    replayed = subprocess.run(
        [*cli, "replay", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert replayed.returncode == 0, replayed.stderr
    assert "won: yes" in replayed.stdout
    assert "result: matches the record" in replayed.stdout


def test_solve_command_text_and_not_found(capsys: pytest.CaptureFixture[str]) -> None:
    from client.cli import main

    assert main(["solve", "louis", "1", "--build", "any", "--nodes", "60000"]) == 0
    out = capsys.readouterr().out
    assert "Louis (build any) #1: solved in" in out and "nodes searched" in out
    assert "solution (" in out
    assert main(["solve", "spider", "1", "--nodes", "10"]) == 1
    out = capsys.readouterr().out
    assert "no solution found within the budget" in out


def test_a_tiny_node_budget_returns_not_found() -> None:
    result = solve_deal(GameConfig("spider", {"suits": 4}), 1, nodes=50, seconds=600.0)
    assert result.status == NOT_FOUND
    assert result.moves == [] and result.nodes <= 50


def test_the_time_budget_reads_the_clock_passed_in() -> None:
    ticks = count()
    result = solve_deal(
        GameConfig("spider", {"suits": 4}),
        1,
        nodes=10**9,
        seconds=20.0,
        clock=lambda: float(next(ticks)),  # one second passes at every look at the clock
    )
    assert result.status == NOT_FOUND
    assert result.nodes < 64 * 40  # the clock is read every 64 nodes
    assert result.seconds >= 20.0


def test_the_best_before_the_next_deal_turns_cards_without_dealing() -> None:
    """1-suit deal 18 opens badly: every card still to come is known to this search, which finds
    a way to turn more than twenty cards before the first deal (and even a suit to send home),
    and never deals."""
    from protocol.solver.spider import SpiderDomain

    state = new_game(GameConfig("spider", {"suits": 1}), 18)
    start = SpiderDomain(state).start[4]
    moves, value = best_before_deal(state, nodes=2000)
    assert moves and value > start
    after = state.copy()
    for move in moves:
        assert move.kind in (Kind.TABLEAU, Kind.FOUNDATION)  # never a deal
        after.apply(move)  # the rules engine accepts every move
    assert after.stock == state.stock
    assert sum(state.down) - sum(after.down) > 20
    assert SpiderDomain(after).start[4] == value
    # nothing better than where it ends: no moves, its own value
    assert best_before_deal(after, nodes=2000) == ([], value)
    # a budget of one state: one step's best at most
    few, _ = best_before_deal(state, nodes=1)
    assert len(few) <= 1


def test_unwinnable_only_after_an_exhaustive_search() -> None:
    # A queen face down under a king, nothing else: no complete suit can ever be built.
    state = spider("QC | KC", suits=1)
    assert solve(state, nodes=10**6).status == UNWINNABLE
    assert solve(state, nodes=5).status == NOT_FOUND  # cut short: no verdict
    # St. Helena, no redeal left: the queen of clubs lies under the king that has nowhere to go.
    tops = {f: t for f, t in enumerate(["AC", "AS", "AH", "AD", "JC", "KS", "KH", "KD"])}
    stuck = helena("QC KC", tops=tops, redeals_left=0)
    assert solve(stuck, nodes=10**6).status == UNWINNABLE
    # The same with a redeal left: it reverses the pile, and the queen comes free.
    free = helena("QC KC", tops=tops, redeals_left=1)
    result = solve(free, nodes=10**6)
    assert result.solved and result.moves[0] == "r"


def test_a_constructed_win_stops_where_the_engine_says_won() -> None:
    state = spider(suit_run("C", 2), "AC", suits=1)
    result = solve(state, nodes=1000)
    assert result.moves == ["2>1"]  # the engine counts a complete run left on a pile as won


def test_a_wrong_solution_is_never_returned() -> None:
    state = new_game(GameConfig("spider", {"suits": 1}), 2)
    with pytest.raises(SolverBug):
        verify(state, [Move(Kind.TABLEAU, 0, 0, 1)])
    with pytest.raises(SolverBug):
        verify(state, [])  # legal but not a win


def test_a_move_taken_back_later_is_dropped_from_the_solution() -> None:
    import sys

    from protocol.solver import domain_for

    search = sys.modules["protocol.solver.search"]
    state = spider(suit_run("C", 3), "2C", "AC", suits=1)
    detour = [
        Move(Kind.TABLEAU, 2, 4, 1),  # the ace to an empty pile ...
        Move(Kind.TABLEAU, 1, 0, 1),
        Move(Kind.TABLEAU, 4, 2, 1),  # ... and straight back
        Move(Kind.TABLEAU, 2, 0, 1),
    ]
    assert verify(state, detour) == ["3>5", "2>1", "5>3", "3>1"]
    domain = domain_for(state)
    budget = search.Budget(10**6, 600.0, lambda: 0.0)
    short = search.shorten(domain, domain.start, detour, budget)
    assert verify(state, short) == ["2>1", "3>1"]
    assert search._undone(detour) == {0: 2}
    assert search.shorten(domain, domain.start, detour[1:], budget) == detour[1:]  # not a win


@pytest.mark.parametrize(
    "options",
    [
        {"suits": 1},
        {"suits": 2},
        {"suits": 4},
        {"suits": 1, "relaxed": 1},
        {"suits": 2, "relaxed": 2},
    ],
)
def test_the_spider_domain_keeps_its_evaluation_and_follows_the_engine(
    options: dict[str, Any],
) -> None:
    """Along the solver's own wins (empty piles, suits going home) and random games: every
    child's evaluation, updated move by move, is the evaluation of its position from scratch; each
    child is the engine's own position after that move (which the engine accepts); and the complete
    children's moves between piles are exactly the engine's legal ones there."""
    import random

    from protocol.solver.spider import SpiderDomain

    config = GameConfig("spider", options)
    rng = random.Random(7)
    checked = 0
    kinds: set[tuple[Kind, bool, bool]] = set()

    def check(state: GameState) -> None:
        nonlocal checked
        domain = SpiderDomain(state)
        start = domain.start
        for complete in (False, True):
            for v, move, child in domain.children(start, complete):
                piles, down, dealt, found, value = child
                assert v == value == domain._value(piles, down, dealt, found), move
                after = state.copy()
                change = after.apply(move)
                assert [tuple(p) for p in after.piles] == list(piles), move
                assert list(after.down) == list(down), move
                to_empty = move.kind == Kind.TABLEAU and not state.piles[move.dst]
                kinds.add((move.kind, to_empty, bool(change.turned)))
                checked += 1
        legal = {m for m in state.legal_moves() if m.kind != Kind.UNDO}
        tableau = {m for _, m, _ in domain.children(start, True) if m.kind == Kind.TABLEAU}
        assert tableau == {m for m in legal if m.kind == Kind.TABLEAU}

    for number in (1, 2):
        state = new_game(config, number)
        won = solve(state, nodes=60_000, seconds=600.0)
        for move in won.engine_moves[:250]:
            check(state)
            state.apply(move)
        state = new_game(config, number)
        for _ in range(60):
            check(state)
            legal = sorted(m for m in state.legal_moves() if m.kind != Kind.UNDO)
            if not legal or state.won:
                break
            state.apply(rng.choice(legal))
    assert checked > 1000
    # every kind of change the evaluation follows: onto a card or an empty pile, turning a card
    # or not, a deal
    for kind in [(Kind.TABLEAU, a, b) for a in (False, True) for b in (False, True)]:
        assert kind in kinds
    assert any(k[0] == Kind.DEAL for k in kinds)
