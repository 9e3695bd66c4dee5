"""Deal generation, compatible with PySolFC (and xpat2 for Spider): docs/rules.md

The random number generators here are the only source of randomness for deals.  Nothing in
this module uses :mod:`random`'s shuffling helpers, whose algorithms are not promised to stay
the same between Python versions; ``random.Random(n).random()`` for an integer seed is.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from . import cards
from .cards import Card
from .config import LOUIS, SPIDER, ST_HELENA, XPAT2, GameConfig

DECK_SIZE = 104
SPIDER_PILES = 10
HELENA_PILES = 12


class LCGRandom:
    """PySolFC's generator for numbers below 32000 (Microsoft's C runtime ``rand``)."""

    def __init__(self, seed: int) -> None:
        self.state = seed

    def draw(self, k: int) -> int:
        """A draw in ``[0, k]``."""
        self.state = (self.state * 214013 + 2531011) % 2**32
        return ((self.state >> 16) & 0x7FFF) % (k + 1)


class MTRandom:
    """PySolFC's generator for numbers from 32000: Python's Mersenne Twister."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed).random

    def draw(self, k: int) -> int:
        """A draw in ``[0, k]``."""
        return int(self._random() * (k + 1))


class Xpat2Random:
    """xpat2 1.07's subtractive generator (Knuth's ``ran_array`` style, modulus 10^9)."""

    MOD = 10**9

    def __init__(self, seed: int) -> None:
        t = [0] * 55
        t[0] = last = seed
        nxt = 1
        for i in range(1, 55):
            k = (21 * i) % 55
            t[k] = nxt
            nxt = last - nxt
            if nxt < 0:
                nxt += self.MOD
            last = t[k]
        self.t = t
        self.a = 0
        self.b = 24
        for _ in range(165):
            self.next()

    def next(self) -> int:
        self.a = 54 if self.a == 0 else self.a - 1
        self.b = 54 if self.b == 0 else self.b - 1
        self.t[self.a] = (self.t[self.a] - self.t[self.b]) % self.MOD
        return self.t[self.a]

    def below(self, limit: int) -> int:
        return int(self.next() / self.MOD * limit)


def pysolfc_order(number: int) -> list[int]:
    """Card ids (``deck*52 + suit*13 + rank-1``) in dealing order: the first dealt first."""
    rng: LCGRandom | MTRandom = LCGRandom(number) if number < 32000 else MTRandom(number)
    ids = list(range(DECK_SIZE))
    for i in range(DECK_SIZE - 1, 0, -1):
        j = rng.draw(i)
        ids[i], ids[j] = ids[j], ids[i]
    ids.reverse()  # dealing takes cards from the end of the shuffled list
    return ids


def xpat2_result(number: int) -> list[Card]:
    """xpat2's shuffled list of 104 cards (positions 0..103), before it is split into piles."""
    rng = Xpat2Random(number)
    remaining = [
        cards.make(rank, suit) for _deck in range(2) for rank in range(1, 14) for suit in range(4)
    ]
    result = [0] * DECK_SIZE
    for i in range(DECK_SIZE, 0, -1):
        result[i - 1] = remaining.pop(rng.below(i))
    return result


def _fold(card: Card, suits: int) -> Card:
    """2-suit Spider folds spades into clubs and diamonds into hearts; 1-suit folds all to clubs."""
    if suits == 4:
        return card
    suit = cards.suit(card)
    folded = 0 if suits == 1 else (0 if suit < 2 else 2)
    return folded * 13 + card % 13


@dataclass(frozen=True, slots=True)
class Deal:
    """A starting layout: the secret the server holds and a player never sees whole."""

    config: GameConfig
    number: int
    tableau: tuple[tuple[Card, ...], ...]
    """Each pile bottom to top."""
    face_down: tuple[int, ...]
    """How many cards at the bottom of each pile are face down."""
    stock: tuple[Card, ...]
    """The cards not dealt, first dealt first."""
    foundations: tuple[tuple[Card, ...], ...]

    def to_json(self) -> dict[str, Any]:
        """The format of ``tests/vectors`` (and ``patience-race deal --json``)."""
        return {
            "game": self.config.game,
            "options": self.config.shown_options(),
            "numbering": self.config.numbering,
            "number": self.number,
            "tableau": [cards.names(p) for p in self.tableau],
            "face_down": list(self.face_down),
            "stock": cards.names(self.stock),
            "foundations": [cards.names(f) for f in self.foundations],
        }

    def dumps(self) -> str:
        """The JSON text laid out exactly as the vectors are."""
        d = self.to_json()
        out = ["{"]
        out.append(f' "game": {json.dumps(d["game"])},')
        out.append(f' "options": {json.dumps(d["options"])},')
        out.append(f' "numbering": {json.dumps(d["numbering"])},')
        out.append(f' "number": {d["number"]},')
        out.append(' "tableau": [')
        out.append(",\n".join(f"  {json.dumps(p)}" for p in d["tableau"]))
        out.append(" ],")
        out.append(f' "face_down": {json.dumps(d["face_down"])},')
        out.append(f' "stock": {json.dumps(d["stock"])},')
        out.append(' "foundations": [')
        out.append(",\n".join(f"  {json.dumps(f)}" for f in d["foundations"]))
        out.append(" ]")
        out.append("}")
        return "\n".join(out)


def deal(config: GameConfig, number: int | str) -> Deal:
    """The deal ``number`` of ``config``'s game, options and numbering."""
    number = config.check_number(number)
    if config.game == SPIDER:
        return _spider(config, number)
    return _helena(config, number)


def _spider(config: GameConfig, number: int) -> Deal:
    suits = config.option("suits")
    if config.numbering == XPAT2:
        result = [_fold(c, suits) for c in xpat2_result(number)]
        sizes = (6, 5, 5, 6, 5, 5, 6, 5, 5, 6)
        piles, pos = [], 0
        for size in sizes:
            piles.append(tuple(result[pos : pos + size]))
            pos += size
        stock = tuple(reversed(result[pos:]))
        return Deal(config, number, tuple(piles), tuple(s - 1 for s in sizes), stock, ((),) * 8)
    order = [_fold(i % 52, suits) for i in pysolfc_order(number)]
    built: list[list[Card]] = [[] for _ in range(SPIDER_PILES)]
    it = iter(order)
    for _row in range(4):
        for pile in built:
            pile.append(next(it))
    for p in (0, 3, 6, 9):
        built[p].append(next(it))
    for pile in built:
        pile.append(next(it))
    face_down = tuple(len(p) - 1 for p in built)
    return Deal(config, number, tuple(map(tuple, built)), face_down, tuple(it), ((),) * 8)


def _helena(config: GameConfig, number: int) -> Deal:
    order = pysolfc_order(number)
    base = [i for i in order if i < 52 and i % 13 in (0, 12)]
    rest = [i % 52 for i in order if not (i < 52 and i % 13 in (0, 12))]
    kings = sorted((i for i in base if i % 13 == 12), key=cards.suit)
    aces = sorted((i for i in base if i % 13 == 0), key=cards.suit)
    foundations = tuple((c,) for c in kings + aces)
    built: list[list[Card]] = [[] for _ in range(HELENA_PILES)]
    if config.game == ST_HELENA:
        for k, card in enumerate(rest):
            built[k % HELENA_PILES].append(card)
        stock: tuple[Card, ...] = ()
    else:
        assert config.game == LOUIS
        for k in range(HELENA_PILES):
            built[k].append(rest[k])
        stock = tuple(rest[HELENA_PILES:])
    return Deal(config, number, tuple(map(tuple, built)), (0,) * HELENA_PILES, stock, foundations)
