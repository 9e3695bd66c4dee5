"""Moves, what a move changed, and the error an illegal move raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from .cards import Card

UNKNOWN: Card = -1
"""A card a player has not been shown: stands for a face-down card in a player's own copy."""


class Kind(IntEnum):
    TABLEAU = 0
    """``src`` pile to ``dst`` pile, ``count`` cards."""
    FOUNDATION = 1
    """``src`` pile to foundation ``dst`` (``-1``: whichever fits)."""
    DEAL = 2
    """Deal from the stock (Spider: a card on each pile; Louis: the whole stock)."""
    REDEAL = 3
    """St. Helena and Louis: gather the piles and deal them again."""
    UNDO = 4
    """Take back the last move, as far as the undo policy allows."""
    RESIGN = 5
    """Give up; the score stands."""


class Move(NamedTuple):
    kind: Kind
    src: int = -1
    dst: int = -1
    # (a field named like tuple's count() method, as NamedTuple allows: mypy takes it for an
    # incompatible override of the method)
    count: int = 0  # type: ignore[assignment]
    """Cards moved; ``0`` in a request means "the unit chosen sensibly" (see each game)."""


DEAL = Move(Kind.DEAL)
REDEAL = Move(Kind.REDEAL)
UNDO = Move(Kind.UNDO)
RESIGN = Move(Kind.RESIGN)


def tableau(src: int, dst: int, count: int = 0) -> Move:
    return Move(Kind.TABLEAU, src, dst, count)


def foundation(src: int, dst: int = -1) -> Move:
    return Move(Kind.FOUNDATION, src, dst, 0)


class Placed(NamedTuple):
    """A card that became visible: pile ``pile`` (from 0), position ``index`` (from the bottom)."""

    pile: int
    index: int  # type: ignore[assignment]  # (a field named like tuple's index(), as count above)
    card: Card


@dataclass(slots=True)
class Change:
    """What applying a move did.  ``turned`` and ``dealt`` are every card that became visible."""

    move: Move
    """The move as applied, with its count and destination settled."""
    turned: list[Placed] = field(default_factory=list)
    """Face-down cards turned up, and (Louis) piles refilled from the stock."""
    dealt: list[Placed] = field(default_factory=list)
    """Cards dealt face up from the stock."""
    undone: Move | None = None
    """For an undo: the move taken back."""

    @property
    def shown(self) -> list[Placed]:
        """Every card this move showed the player, in the order it happened."""
        return self.turned + self.dealt


class IllegalMove(ValueError):
    """A move the rules do not allow here; ``str()`` is the reason, for a person."""


def check_pile(index: int, piles: int, which: str) -> None:
    """``index`` (from 0) is one of a table's ``piles``, or :class:`IllegalMove` saying
    ``which`` there are (``"Spider has piles 1 to 10"``).  -1, a move's default on the wire,
    is a pile not named (it said "there is no pile 0": a protocol trial)."""
    if index < 0:
        raise IllegalMove(f"a move from or to a pile names it: {which}")
    if index >= piles:
        raise IllegalMove(f"there is no pile {index + 1}: {which}")
