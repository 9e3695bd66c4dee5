"""The full-information solver asked about guessed deals (perfect-information Monte Carlo): the
unseen cards dealt at random, the solver run on each guess, the plans cut at the first card they
show and weighed against each other.  What the strong bots consult at the decisions that matter.

Pure: no I/O; randomness only from the ``random.Random`` passed in (the solver's own clock is a
safety limit per call, :attr:`SolverParams.seconds`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from protocol.game import GameState
from protocol.moves import Kind, Move
from protocol.solver import best_before_deal, solve

from .common import Memory, determinize


@dataclass(frozen=True)
class SolverParams:
    samples: int
    """Guessed deals solved at one decision (a position with nothing hidden needs one)."""
    nodes: int
    """The solver's budget per guessed deal, in states expanded (the binding limit)."""
    seconds: float = 5.0
    """A safety limit per call, far above what ``nodes`` takes on a normal machine."""
    failures: int = 1_000_000
    """Calls that found nothing in one game after which the solver is not asked again."""
    agree: int = 0
    """Stop sampling once this many won guesses agree on where to go (0: solve every sample)."""
    give_up: int = 0
    """Stop sampling after this many guesses with no win at all (0: solve every sample)."""
    study_nodes: int = 0
    """The budget of the first call in a game on a position with nothing hidden (St. Helena's
    deal, Louis once its stock is dealt): a good look at the whole deal, worth a few seconds.
    0: ``nodes``, as for every call."""
    weigh_ends: int = 0
    """When the won guesses' plans lead to different ends, weigh up to this many of them (the
    most voted first) against every guess instead of counting votes: each plan is played on
    each guess and the solver asked for a win after it.  Only ends reached by a deal (an
    arrangement made final under ten new cards) unless ``weigh_any``.  0: votes decide."""
    weigh_any: bool = False
    """Weigh the ends whatever the plans end in (a card turned too), not only a deal; sampling
    then never stops early on agreement, so that other ends can be found."""
    weigh_fresh: int = 0
    """More guesses, drawn for the weighing alone, besides those the plans were found on."""
    weigh_nodes: int = 1500
    """The solver's budget per guess when weighing an arrangement."""
    only_open: bool = False
    """Ask only where nothing is hidden (St. Helena; Louis once its stock is dealt), never on
    guessed deals."""
    restudy: bool = False
    """Take the long look again after each redeal (a new layout, a new chance)."""
    keep_margin: int = 0
    """With :func:`second_opinion`: the look-ahead's own way is kept unless another way wins at
    least this many more of the weighed guesses."""


def hides_anything(s: GameState) -> bool:
    return bool(s.stock) or any(s.down)


def reveal_prefix(s: GameState, moves: Sequence[Move]) -> tuple[list[Move], Any]:
    """``moves`` up to and including the first that shows a card the seat does not know (all of
    them when nothing is hidden), checked on a copy of masked ``s``, and the position they lead
    to (``board()``); ``([], None)`` if one is illegal."""
    t = s.copy()
    out: list[Move] = []
    hidden = hides_anything(s)
    for m in moves:
        try:
            change = t.apply(m)
        except ValueError:
            return [], None
        out.append(m)
        if hidden and (change.turned or change.dealt):
            break
    return out, t.board()


def solver_plan(
    s: GameState, rng: random.Random, memory: Memory, params: SolverParams
) -> list[Move] | None:
    """A plan from the full-information solver run on guessed deals of masked ``s``.

    Each sample deals the unseen cards at random (:func:`determinize`) and asks the solver for a
    win; the plans are cut at the first move that shows a card, and the won samples vote for
    the position their plan leads to (which card it shows, after which arrangement): the most
    voted one is chosen, by its shortest plan.  Sampling stops early once ``params.agree``
    votes agree, or after ``params.give_up`` samples without a win.  None when no sample was
    won, or when the solver found nothing here before (nothing shown since) or too often this
    game.
    """
    hidden = hides_anything(s)
    if hidden and params.only_open:
        return None
    redeals = s.redeals_left
    study = (
        not hidden
        and params.study_nodes > 0
        and (not memory.studied or (params.restudy and redeals != memory.studied_at))
    )
    if not study and (
        memory.hopeless == memory.shown_mark or memory.solver_failures >= params.failures
    ):
        return None
    samples = params.samples if hidden else 1
    nodes = params.nodes
    if study:
        memory.studied = True
        memory.studied_at = redeals
        nodes = params.study_nodes
    votes: Counter[Any] = Counter()
    plans: dict[Any, list[Move]] = {}
    guesses: list[GameState] = []
    for n in range(samples):
        if params.give_up and n >= params.give_up and not votes:
            break
        guess = determinize(s, rng)
        if params.weigh_ends:
            guesses.append(guess)
        plan, end = _guess_plan(s, guess, nodes, params, memory)
        if not plan:
            continue
        votes[end] += 1
        if end not in plans or len(plan) < len(plans[end]):
            plans[end] = plan
        if (
            params.agree
            and votes[end] >= params.agree
            and not (params.weigh_ends and (params.weigh_any or plan[-1].kind == Kind.DEAL))
        ):
            break
    if not votes:
        memory.hopeless = memory.shown_mark
        memory.solver_failures += 1
        return None
    if params.weigh_ends and len(votes) > 1:
        ends = [
            k for k, _ in votes.most_common() if params.weigh_any or plans[k][-1].kind == Kind.DEAL
        ]
        if len(ends) > 1:
            guesses += [determinize(s, rng) for _ in range(params.weigh_fresh)]
            return _weigh(ends[: params.weigh_ends], plans, guesses, params, memory)
    top = max(votes.values())
    end = next(k for k in plans if votes[k] == top)  # the earliest sample's among the best
    return plans[end]


def _guess_plan(
    s: GameState, guess: GameState, nodes: int, params: SolverParams, memory: Memory
) -> tuple[list[Move], Any]:
    """The solver's win on ``guess`` (a guessed deal of masked ``s``) up to the first card it
    shows, and the position that leads to; ``([], None)`` when it finds none."""

    result = solve(guess, nodes=nodes, seconds=params.seconds)
    memory.solves += 1
    if not result.solved or not result.engine_moves:
        return [], None
    return reveal_prefix(s, result.engine_moves)


def _wins_after(
    plan: list[Move], guesses: Sequence[GameState], params: SolverParams, memory: Memory
) -> int:
    """How many of ``guesses`` the solver still wins after ``plan`` is played on them."""

    wins = 0
    for guess in guesses:
        t = guess.copy()
        for m in plan:
            t.apply(m)
        result = solve(t, nodes=params.weigh_nodes, seconds=params.seconds)
        memory.solves += 1
        wins += result.solved
    return wins


def _weigh(
    ends: list[Any],
    plans: dict[Any, list[Move]],
    guesses: list[GameState],
    params: SolverParams,
    memory: Memory,
) -> list[Move]:
    """The plan, among those leading to ``ends``, after which the most guesses are won."""
    best: list[Move] = plans[ends[0]]
    best_wins = -1
    for end in ends:
        plan = plans[end]
        wins = _wins_after(plan, guesses, params, memory)
        if wins > best_wins:
            best, best_wins = plan, wins
    return best


def second_opinion(
    s: GameState, own: list[Move] | None, rng: random.Random, memory: Memory, params: SolverParams
) -> list[Move] | None:
    """The look-ahead's plan ``own`` weighed against the ways the solver finds on guessed deals.

    ``params.samples`` guesses are solved (``params.nodes`` states each); each won guess
    proposes its way up to the first card shown.  Up to ``params.weigh_ends`` of those ways (the
    most proposed first) and ``own`` are each played on those guesses and ``params.weigh_fresh``
    more, and the solver asked for a win after it (a guess that found the way itself counts as
    won).  ``own`` is kept unless another way wins at least ``params.keep_margin`` more guesses:
    the look-ahead's way is rarely wrong, and a way a dozen guesses prefer by one is often the
    unlucky one.  None when no way wins a guess (the caller goes on with its own plan).
    """
    guesses = [determinize(s, rng) for _ in range(params.samples + params.weigh_fresh)]
    plans: dict[Any, list[Move]] = {}
    found_by: dict[Any, set[int]] = {}
    for i, guess in enumerate(guesses[: params.samples]):
        plan, end = _guess_plan(s, guess, params.nodes, params, memory)
        if not plan:
            continue
        if end not in plans or len(plan) < len(plans[end]):
            plans[end] = plan
        found_by.setdefault(end, set()).add(i)
    own_plan, own_end = reveal_prefix(s, own) if own else ([], None)
    if own_plan:
        plans.setdefault(own_end, own_plan)
    else:
        own_end = None  # no plan of its own, or an illegal one: only the solver's ways
    if not plans:
        return None
    ends = sorted(plans, key=lambda e: -len(found_by.get(e, ())))[: params.weigh_ends]
    if own_end is not None and own_end not in ends:
        ends.append(own_end)
    wins: dict[Any, int] = {}
    for end in ends:
        won = found_by.get(end, set())
        rest = [g for i, g in enumerate(guesses) if i not in won]
        wins[end] = len(won) + _wins_after(plans[end], rest, params, memory)
    best = max(ends, key=lambda e: wins[e])
    if own_end is not None and wins[best] < wins[own_end] + params.keep_margin:
        return plans[own_end]
    if wins[best] == 0:
        return None
    return plans[best]


# -- digging before a deal (perfect-information Monte Carlo on one stage) ----------------------


def dig_plan(
    s: GameState, rng: random.Random, memory: Memory, params: SolverParams
) -> list[Move] | None:
    """Before a deal, when the look-ahead finds nothing better: a way to show one more card.

    Each sample deals the unseen cards at random (:func:`determinize`) and searches, seeing every
    card, for the best position this stage can reach before the next deal
    (:func:`protocol.solver.best_before_deal`): a question far smaller than winning the game,
    whose answer is mostly how many cards can still be turned and how.  Each way that shows a
    card, cut at that card, votes for the position it leads to.  The ``params.weigh_ends`` most
    voted ways are then each played on every guess and the stage searched again from there
    (``params.weigh_nodes`` states): the way whose stage ends best on average is played.  None
    when no guess finds a card to show.
    """

    guesses = [determinize(s, rng) for _ in range(params.samples)]
    votes: Counter[Any] = Counter()
    plans: dict[Any, list[Move]] = {}
    for guess in guesses:
        moves, _ = best_before_deal(guess, nodes=params.nodes, seconds=params.seconds)
        memory.digs += 1
        plan, end = reveal_prefix(s, moves)
        if not plan or not _shows_a_card(s, plan):
            continue
        votes[end] += 1
        if end not in plans or len(plan) < len(plans[end]):
            plans[end] = plan
    ends = [end for end, _ in votes.most_common(params.weigh_ends)]
    if len(ends) < 2:
        return plans[ends[0]] if ends else None
    best, best_total = ends[0], float("-inf")
    for end in ends:
        total = 0
        for guess in guesses:
            t = guess.copy()
            for m in plans[end]:
                t.apply(m)
            _, value = best_before_deal(t, nodes=params.weigh_nodes, seconds=params.seconds)
            memory.digs += 1
            total += value
        if total > best_total:
            best, best_total = end, total
    return plans[best]


def _shows_a_card(s: GameState, plan: list[Move]) -> bool:
    """Whether the last move of ``plan``, played from ``s``, shows a card."""
    t = s.copy()
    for m in plan[:-1]:
        t.apply(m)
    change = t.apply(plan[-1])
    return bool(change.turned or change.dealt)
