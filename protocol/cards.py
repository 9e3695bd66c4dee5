"""Cards as small integers, and their two-character notation (docs/rules.md).

A card is ``suit * 13 + rank - 1`` with suits in the order clubs, spades, hearts,
diamonds and ranks 1 (ace) to 13 (king): ``0`` is ``AC``, ``51`` is ``KD``.  Two
cards of the same suit and rank (there are two decks) are the same integer: no
rule ever tells them apart, so neither does the engine.

Within a suit the codes are consecutive, so "``b`` is the same-suit card one rank
below ``a``" is simply ``b == a - 1 and rank(a) != 1``.
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "A23456789TJQK"
SUITS = "CSHD"
SUIT_NAMES = ("clubs", "spades", "hearts", "diamonds")
RANK_NAMES = (
    "ace", "two", "three", "four", "five", "six", "seven",
    "eight", "nine", "ten", "jack", "queen", "king",
)  # fmt: skip

ACE = 1
KING = 13

Card = int
"""A card code, 0..51."""

_NAMES: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)
_CODES: dict[str, Card] = {name: code for code, name in enumerate(_NAMES)}


def make(rank: int, suit: int) -> Card:
    """The card of ``rank`` (1..13) and ``suit`` (0..3)."""
    if not 1 <= rank <= 13 or not 0 <= suit <= 3:
        raise ValueError(f"no card with rank {rank} and suit {suit}")
    return suit * 13 + rank - 1


def rank(card: Card) -> int:
    """1 (ace) to 13 (king)."""
    return card % 13 + 1


def suit(card: Card) -> int:
    """0 clubs, 1 spades, 2 hearts, 3 diamonds."""
    return card // 13


def is_red(card: Card) -> bool:
    return card // 13 >= 2


def name(card: Card) -> str:
    """``TS`` for the ten of spades."""
    return _NAMES[card]


def long_name(card: Card) -> str:
    """``ten of spades``."""
    return f"{RANK_NAMES[card % 13]} of {SUIT_NAMES[card // 13]}"


def parse(text: str) -> Card:
    """The card written ``text`` (``TS``, ``qh``); ``ValueError`` if it is not one."""
    code = _CODES.get(text.strip().upper())
    if code is None:
        raise ValueError(f"{text!r} is not a card: write rank {RANKS} then suit {SUITS}, as in TS")
    return code


def names(cards: Iterable[Card]) -> list[str]:
    return [_NAMES[c] for c in cards]
