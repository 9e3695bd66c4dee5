"""Spider's strategy: the value of a position, the moves worth searching, and the decisions.

Every level plays from the masked state.  ``easy`` looks one move ahead with noise; ``normal``
runs a short best-first look-ahead over the moves that show no card, and a wider one before it
deals or gives up (with 1 suit it looks one move ahead, without noise: :data:`ONE_SUIT`);
``strong`` does the same and, at those key decisions (nothing found that
improves the position), asks the full-information solver about a few guessed deals: the unseen
cards dealt at random, consistently with what it sees (perfect-information Monte Carlo), and plays
the line most of the won guesses start with, up to the first card it shows.  With 1 suit strong
plays a wider search that goes on past the cards it shows, those cards unknown (with 2 and 4
suits too, :data:`PARAMS`; with 1 suit without the solver at key decisions, :data:`ONE_SUIT`),
digging for one more card on guessed deals before a deal where that search finds nothing
(:data:`DIG`, 4 suits too), and once the stock is out weighs each decision of the search against
the ways the solver finds on guessed deals (:data:`ENDGAME`).
"""

from __future__ import annotations

import random

from protocol.game import GameState
from protocol.moves import DEAL, Kind, Move
from protocol.spider import home_keeps_deals

from .common import (
    EASY,
    NORMAL,
    LevelParams,
    Memory,
    best_single,
    carry_on,
    explore,
    search,
    widening_search,
)
from .pimc import SolverParams, dig_plan, second_opinion, solver_plan

SP_HIDDEN = 40
"""Per face-down card still to turn."""
SP_CLEAR = 25
"""Per pile with no face-down card left."""
SP_EMPTY = 180
"""Per empty pile (on top of the clear bonus it does not get)."""
SP_SUIT = 12
"""Per face-up card lying on the same-suit card one rank higher."""
SP_RANK = 0
"""Per face-up card lying on a card one rank higher of another suit."""
SP_BREAK = 3
"""Per face-up card lying on a card it does not follow."""
SP_COVER = 0
"""Per movable unit to take away before a pile's next face-down card turns."""
SP_KING = 8
"""A pile whose face-up cards start with a king on the table."""
SP_FOUND = 12 * SP_SUIT + 60
"""Per complete suit on a foundation."""
SP_MOBILE = 5
"""Per pile whose movable run has somewhere to go (a top card one rank above its bottom)."""
SP_KING_ON = 0
"""Per face-up king lying on another card (it can only ever move to an empty pile)."""


def spider_value(s: GameState) -> int:
    """How good a Spider position looks from its face-up cards (UNKNOWN cards count as nothing)."""
    v = 0
    heads = []
    tops = set()
    for p, d in zip(s.piles, s.down, strict=True):
        n = len(p)
        if not n:
            v += SP_EMPTY
            continue
        top = p[-1]
        if top >= 0:
            tops.add(top % 13)
        if d:
            v -= SP_HIDDEN * d
        else:
            v += SP_CLEAR
            if p[0] >= 0 and p[0] % 13 == 12:
                v += SP_KING
        segs = 1
        prev = head = p[d]
        for j in range(d + 1, n):
            c = p[j]
            if c < 0 or prev < 0:
                segs += 1
                prev = head = c
                continue
            if c == prev - 1 and prev % 13:
                v += SP_SUIT
                prev = c
                continue
            elif c % 13 == prev % 13 - 1:
                v += SP_RANK
                segs += 1
            else:
                v -= SP_BREAK
                segs += 1
            if c % 13 == 12:
                v -= SP_KING_ON
            head = c
            prev = c
        if d:
            v -= SP_COVER * segs
        if head >= 0 and (d or head != p[0]):
            heads.append(head % 13 + 1)
    if SP_MOBILE:
        for h in heads:
            if h in tops:
                v += SP_MOBILE
    for f in s.foundations:
        if f:
            v += SP_FOUND
    return v


def spider_moves(s: GameState) -> list[Move]:
    """The legal moves worth considering (deals apart): no run split onto another pile, no whole
    pile moved to an empty one, only the first empty pile as a target, and no suit home that
    would leave too few cards to deal (:func:`protocol.spider.home_keeps_deals`)."""
    out: list[Move] = []
    piles = s.piles
    down = s.down
    first_empty = next((i for i, p in enumerate(piles) if not p), -1)
    home = home_keeps_deals(s)
    for m in s.legal_moves():
        if m.kind != Kind.TABLEAU:
            if m.kind == Kind.FOUNDATION and home:
                out.append(m)
            continue
        src = piles[m.src]
        rest = len(src) - m.count
        if piles[m.dst]:
            if piles[m.dst][-1] < 0:
                continue  # a card shown further up the plan (past_shown): its face is unknown
            # the unit's bottom card leaves the same-suit card one rank higher: pointless
            if rest > down[m.src]:
                u = src[rest]
                if src[rest - 1] == u + 1 and u % 13 != 12:
                    continue
        else:
            if m.dst != first_empty or rest == 0:
                continue
        out.append(m)
    return out


PARAMS = {
    "easy": EASY,
    "normal": NORMAL,
    "strong": LevelParams(
        budget=400,
        depth=8,
        noise=0.0,
        last_resort=LevelParams(
            2000, 14, 0.0, LevelParams(8000, 20, 0.0, past_shown=True), past_shown=True
        ),
        past_shown=True,
    ),
}
"""Spider's levels (with 1 suit some play otherwise: :data:`ONE_SUIT`).

Strong searches 400 positions and eight moves at every decision, then 2,000 and fourteen, then
8,000 and twenty before it deals, and its search goes on past the cards it shows (``past_shown``):
a card turned does not end a line, the search carries on with that card unknown, so it sees
which way shows two or three cards where another shows one.  It plays such a plan up to its first
card shown, then looks again.  With 2 suits that search won 191 of deals 1 to 300 where the same
search at 120 and four, 1,500 and ten, 6,000 and twenty won 171, and 151 when it also stopped at
the first card shown (46 deals won that the narrower one lost, 26 lost that it won), at 8.7 s of
thinking a game against 5.7.  With 4 suits it won 40 of deals 1 to 300 where the narrow search
that stops at the first card shown won 30, at 8.8 s of thinking a game against 7.3
(docs/bots-history.md).  The narrow search had been chosen because a wide one that stops at the
first card shown finds long plans to positions that only look better."""

ONE_SUIT = {
    "normal": LevelParams(budget=200, depth=1, noise=0.0),
    "strong": LevelParams(
        budget=400,
        depth=8,
        noise=0.0,
        last_resort=LevelParams(2000, 14, 0.0, past_shown=True),
        past_shown=True,
    ),
}
"""Levels that play otherwise with 1 suit.  There any look-ahead wins most deals: normal's
four-move search with its wider last resort won 433 of deals 1 to 500, a two-move one 407, and
strong 87 of 100, so normal was strong without the solver.  With 1 suit normal looks one move
ahead, exactly (easy's look without its blur), and deals as soon as no single move improves the
position: 208 of deals 1 to 300, between easy and strong as a middle level should be.

Strong searches wider (400 positions and eight moves, then 2,000 and fourteen before a deal) and
past the cards it shows (``past_shown``): a card turned does not end a line, the search goes on
with that card unknown, so it sees which way shows two or three cards where another shows one
and spends the empty pile.  It plays such a plan up to its first card shown, then looks again.
That search without the digging, before the last deal, left 6.1 cards face down a game on
deals 1 to 200 (5.2 at this width) where the four-move search that stops at the first card shown
left 10.1; strong with it won 188 of deals 1 to 200 where it had won 183
(docs/bots-history.md).  It digs on guessed deals where that search finds nothing before a deal
(:data:`DIG`), then asks the solver for a second opinion (:data:`ENDGAME`)."""


def level_params(level: str, suits: int) -> LevelParams:
    """The search a level runs in Spider with ``suits`` suits."""
    if suits == 1 and level in ONE_SUIT:
        return ONE_SUIT[level]
    return PARAMS[level]


SOLVER = {
    ("strong", 2): SolverParams(samples=1, nodes=2000),
    ("strong", 4): SolverParams(samples=1, nodes=2000),
}
"""The levels and games (number of suits) that ask the solver about guessed deals at key
decisions."""

ENDGAME = {
    ("strong", 1): (
        0,
        SolverParams(
            samples=8,
            nodes=4000,
            weigh_ends=4,
            weigh_nodes=2000,
            weigh_fresh=8,
            keep_margin=2,
        ),
    ),
    ("strong", 4): (
        10,
        SolverParams(samples=6, nodes=3000, agree=3, give_up=3, weigh_ends=4, weigh_nodes=1500),
    ),
}
"""The levels and games (number of suits) that, once the stock is down to its last deal (at most
this many cards), ask the solver first at every decision, on several guessed deals: a late
mistake cannot be mended by a deal to come, and the positions are small enough to solve in a few
thousand states.

1 suit, once the stock is out, weighs every decision the look-ahead makes (:func:`second_opinion`):
the look-ahead's plan and the ways the guesses found (up to four) are each tried on those eight
guesses (4,000 states each) and eight more (2,000 each), and another way is played only if it
wins at least two more of the sixteen.  Six and six guesses at 3,000 and 1,500 states won 32 of
the 52 hardest positions strong reached after the last deal on deals 1 to 200 (ten or more cards
face down); eight and eight at 4,000 and 2,000 won 35 (183 whole games of 200 against 180), at
10.9 s of thinking an endgame against 9.2 (``bench/endgames.py``; docs/bots-history.md).  Counting
votes lost games where most guesses were won by the quickest way to see a card (a lone card to
the last empty pile), a way that loses on many deals where a slower one wins; playing whichever
way wins most guesses lost 2 of 24 positions the look-ahead alone wins.  4 suits weighs
only the arrangements made final under the last deal.  2 suits keeps the look-ahead alone: on
deals 1 to 16, strong won 5 with the sampling (normal won 9; strong without it had won 61 of
deals 1 to 100)."""

_DIG = SolverParams(samples=8, nodes=2000, weigh_ends=3, weigh_nodes=1000)
DIG = {("strong", 1): _DIG, ("strong", 4): _DIG}
"""The levels and games (number of suits) that, before a deal, when the look-ahead finds nothing
better, search the rest of the stage on guessed deals for a way to show one more card
(:func:`dig_plan`).  With 1 suit the games lost were mostly lost long before the end: at the
first deal they had about 36 cards face down where the games won had 30, and a player seeing
every card could have turned more than twice as many as the look-ahead did.  The search alone won
258 of deals 1 to 300; with the digging 264 (18 deals won that it lost, 12 lost that it won: a
gain 300 deals cannot prove), at 10 s of thinking a game against 0.3 s; strong with it won 180 of
deals 1 to 200 against 171 (13 won that it lost, 4 lost that it won).  With 4 suits strong digs
before it asks the solver about a guessed deal: 30 of deals 1 to 300 won against 21 (9, 10 and
11 per hundred against 9, 6 and 6), at 7.3 s of thinking a game against 10.4.  With 2 suits it
lost more than it won (80 of deals 1 to 137 against 87, with the search as it was before it
widened to 400 positions): not kept."""

REVEAL_SLACK = {("strong", 2): 60, ("strong", 4): 60}
"""The levels and games (number of suits) that, before a deal, turn a card even when it costs this
much of the position's value (a normal bot deals as soon as nothing improves the position)."""


def choose(s: GameState, level: str, rng: random.Random, memory: Memory) -> Move | None:
    """The next move in masked ``s`` (not won, with a legal move), or None to give up."""
    suits = s.config.options.get("suits", 4)
    params = level_params(level, suits)
    legal = s.legal_moves()
    base = spider_value(s)
    decided, move = carry_on(s, legal, memory, rng, base)
    if decided:
        return move

    home = [m for m in legal if m.kind == Kind.FOUNDATION] if home_keeps_deals(s) else []
    if home:  # a complete suit goes home
        return best_single(s, home, spider_value, rng, params.noise, memory.taste)

    if memory.filling:
        return _fill(s, legal, memory, params, rng)

    endgame = ENDGAME.get((level, suits))
    # the endgame's solver, once the stock is down to its number of cards
    late = endgame[1] if endgame is not None and len(s.stock) <= endgame[0] else None
    if late is not None and not late.keep_margin:
        plan = solver_plan(s, rng, memory, late)
        if plan:
            return memory.follow(s, plan)

    plan, found = widening_search(s, spider_value, spider_moves, params, rng, memory, base)
    if late is not None and late.keep_margin:
        weighed = second_opinion(s, plan or found.reveal, rng, memory, late)
        if weighed:
            return memory.follow(s, weighed)
    if plan:
        return memory.follow(s, plan)

    # A key decision: nothing improves the position without showing a card.
    dig = DIG.get((level, suits))
    if dig is not None and s.stock and any(s.down):
        plan = dig_plan(s, rng, memory, dig)
        if plan:
            return memory.follow(s, plan)
    solver = SOLVER.get((level, suits))
    if solver is not None:
        plan = solver_plan(s, rng, memory, solver)
        if plan:
            return memory.follow(s, plan)

    # Strong: a card to see is a new chance, worth a little loss before a deal buries the piles.
    slack = REVEAL_SLACK.get((level, suits))
    if slack is not None and found.reveal and found.reveal_value >= base - slack:
        return memory.follow(s, found.reveal)

    # Nothing helps: deal (filling empty piles first), look at a card, or give up.
    if DEAL in legal:
        return DEAL
    if s.stock:
        memory.filling = True
        return _fill(s, legal, memory, params, rng)
    if found.reveal:  # worse by the numbers, but a card to see is a new chance
        return memory.follow(s, found.reveal)
    return explore(s, legal, memory, rng)


def _fill(
    s: GameState, legal: list[Move], memory: Memory, params: LevelParams, rng: random.Random
) -> Move | None:
    """To deal: put cards in the empty piles, losing as little as possible."""
    if DEAL in legal:
        memory.filling = False
        return DEAL
    found = search(s, spider_value, spider_moves, params, rng, memory.seen, True, memory.taste)
    if found.fill:
        return memory.follow(s, found.fill)
    # no plan found: any card to an empty pile that leaves its own pile with cards
    piles = s.piles
    options = [
        m
        for m in legal
        if m.kind == Kind.TABLEAU and not piles[m.dst] and len(piles[m.src]) > m.count
    ]
    if not options:
        return None
    return best_single(s, options, spider_value, rng, params.noise, memory.taste)
