"""Hand-built positions and independent recomputations for the rules tests.

Positions are written the way a person reads a board: a pile is a string of card names bottom to
top, the face-down ones before a ``|`` (``"5D 9C | 8H 7H"``: two face-down cards, then 8H and 7H
face up, 7H on top).  A pile without ``|`` is all face up; ``""`` is an empty pile.  The stock is
written in dealing order (the first card dealt first); the engine stores it the other way round.

The score functions here are written from RULES.md alone, on card *names*, so that they do not
share code (or mistakes) with the engine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

from protocol import cards
from protocol.config import GameConfig
from protocol.game import GameState
from protocol.helena import HelenaState
from protocol.spider import SpiderState

VECTORS = Path(__file__).resolve().parent / "vectors"
"""Deals as PySolFC (and, for Spider's xpat2 numbering, xpat2) deal them: tests/vectors/README.md."""

RANKS = "A23456789TJQK"
SUITS = "CSHD"


def c(text: str) -> list[int]:
    """``"KS QS"`` -> the card codes, in order."""
    return [cards.parse(t) for t in text.split()]


def pile(text: str) -> tuple[list[int], int]:
    """A pile written ``"down... | up..."`` -> (cards bottom to top, face-down count)."""
    if "|" in text:
        down, up = text.split("|")
        return c(down) + c(up), len(down.split())
    return c(text), 0


def suit_run(suit: str, low: int = 1, high: int = 13) -> str:
    """``suit_run("S")`` -> ``"KS QS ... AS"`` (descending, bottom to top), ranks high..low."""
    return " ".join(RANKS[r - 1] + suit for r in range(high, low - 1, -1))


def rising(suit: str, low: int = 1, high: int = 13) -> str:
    """``rising("C", 1, 3)`` -> ``"AC 2C 3C"``."""
    return " ".join(RANKS[r - 1] + suit for r in range(low, high + 1))


def spider(
    *piles: str,
    stock: str = "",
    foundations: Sequence[str] = (),
    suits: int = 4,
    relaxed: int = 0,
) -> SpiderState:
    """A Spider position: up to 10 piles (the rest empty), the stock in dealing order, and the
    foundations as suit letters (``["S", "H"]``: a complete K..A of each)."""
    assert len(piles) <= 10
    built = [pile(p) for p in piles] + [([], 0)] * (10 - len(piles))
    fnd = [c(suit_run(s)) for s in foundations] + [[] for _ in range(8 - len(foundations))]
    config = GameConfig("spider", {"suits": suits, "relaxed": relaxed})
    return SpiderState(
        config,
        [list(p) for p, _ in built],
        [d for _, d in built],
        list(reversed(c(stock))),
        fnd,
    )


def base_foundations() -> list[list[int]]:
    """St. Helena's and Louis's starting foundations: kings C S H D, then aces C S H D."""
    return [c("K" + s) for s in SUITS] + [c("A" + s) for s in SUITS]


def helena(
    *piles: str,
    game: str = "st-helena",
    build: str = "suit",
    spaces: str = "none",
    stock: str = "",
    tops: dict[int, str] | None = None,
    redeals_left: int = 2,
    stock_dealt: bool | None = None,
) -> HelenaState:
    """A St. Helena or Louis position: up to 12 piles (face up; the rest empty), the stock in
    dealing order, and ``tops``: foundation index (0..7) -> the card on top of it, the foundation
    being built from its base (f0..f3 kings down, f4..f7 aces up) to that card."""
    assert len(piles) <= 12
    built = [c(p) for p in piles] + [[] for _ in range(12 - len(piles))]
    fnd = base_foundations()
    for f, top in (tops or {}).items():
        suit = SUITS[f % 4]
        rank = RANKS.index(top[0]) + 1
        assert top[1] == suit, f"foundation {f} is {suit}, not {top}"
        fnd[f] = c(suit_run(suit, rank, 13) if f < 4 else rising(suit, 1, rank))
    options = {"build": build} if game == "louis" else {"build": build, "spaces": spaces}
    state = HelenaState(GameConfig(game, options), built, [0] * 12, list(reversed(c(stock))), fnd)
    state._redeals_left = redeals_left
    if stock_dealt is not None:
        state.stock_dealt = stock_dealt
    return state


def one_move_from_stuck() -> HelenaState:
    """St. Helena with no redeal left, where either move (7H onto 8H, or 8H onto 7H) leaves no
    move at all: only an undo."""
    return helena(
        "7H", "8H", "3C", "6C", "9C", "3S", "6S", "9S", "3D", "6D", "9D", "3H", redeals_left=0
    )


def names(cs: Iterable[int]) -> str:
    return " ".join(cards.name(x) for x in cs)


def pile_names(state: GameState) -> list[str]:
    return [names(p) for p in state.piles]


def face_up(state: GameState) -> Counter[str]:
    """Every face-up card of a state (tableau and foundations), by name."""
    out: Counter[str] = Counter()
    for p, d in zip(state.piles, state.down, strict=True):
        out.update(cards.name(x) for x in p[d:])
    for f in state.foundations:
        out.update(cards.name(x) for x in f)
    return out


def view_cards(state: GameState) -> Counter[str]:
    """Every card name a player's view of ``state`` contains."""
    v = state.view()
    out: Counter[str] = Counter()
    for pv in v.tableau:
        out.update(pv.cards)
    for f in v.foundations:
        out.update(f)
    return out


# -- the scores, recomputed from RULES.md on card names ---------------------------------------


def _rank(name: str) -> int:
    return RANKS.index(name[0]) + 1


def _on_next_higher(lower: str, upper: str) -> bool:
    """``lower`` lies on ``upper``, the same-suit card one rank higher (no K/A wrap)."""
    return lower[1] == upper[1] and _rank(upper) == _rank(lower) + 1


def _face_up_names(state: GameState) -> list[list[str]]:
    return [[cards.name(x) for x in p[d:]] for p, d in zip(state.piles, state.down, strict=True)]


def _pairs(state: GameState) -> int:
    return sum(
        1
        for up in _face_up_names(state)
        for upper, lower in pairwise(up)
        if _on_next_higher(lower, upper)
    )


def _tableau_suits(state: GameState) -> int:
    """Complete K..A runs of one suit, face up in the tableau."""
    found = 0
    for up in _face_up_names(state):
        for i in range(len(up) - 12):
            window = up[i : i + 13]
            if [n[0] for n in window] == list(reversed(RANKS)) and len({n[1] for n in window}) == 1:
                found += 1
    return found


def xpat2_score(state: GameState) -> int:
    """RULES.md section 3, the primary Spider score."""
    turned = 44 - sum(state.down)
    no_down = sum(1 for d in state.down if d == 0)
    runs = _tableau_suits(state)
    done = sum(1 for f in state.foundations if f)
    score = 10 * turned + 15 * no_down + 2 * _pairs(state) + 26 * runs + 50 * done
    if runs + done == 8:
        score += 2 * max(0, runs - 3)
    return score


def aisleriot_score(state: GameState) -> int:
    """RULES.md section 3, the secondary Spider score."""
    return _pairs(state) + 12 * sum(1 for f in state.foundations if f)


def helena_score(state: GameState) -> int:
    """RULES.md section 4: cards moved to the foundations (the eight bases are not)."""
    return sum(len(f) for f in state.foundations) - 8


def full_deck(suits: int = 4) -> Counter[str]:
    """The 104 cards of a Spider (or St. Helena/Louis) game, by name, suits folded as in RULES.md."""
    out: Counter[str] = Counter()
    kept = {4: "CSHD", 2: "CCHH", 1: "CCCC"}[suits]
    for _deck in range(2):
        for s in kept:
            out.update(r + s for r in RANKS)
    return out


def all_names(state: GameState) -> Counter[str]:
    return Counter(cards.name(x) for x in state.all_cards())
