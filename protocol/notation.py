"""Move notation for people and logs: parsed and printed both ways.

=================  =====================================================================
``3>7``            the movable unit of pile 3 onto pile 7 (Spider: the run that fits pile
                   7's top card; onto an empty pile, the whole movable run)
``3>7:4``          the last four cards of pile 3 onto pile 7
``3>f``            pile 3 to a foundation (Spider: its complete K..A run; St. Helena and
                   Louis: the one foundation its top card fits)
``3>f5``           pile 3's top card to foundation 5 (St. Helena and Louis: f1-f4 are the
                   kings of clubs, spades, hearts, diamonds, f5-f8 the aces, same order)
``d``              deal from the stock
``r``              redeal (St. Helena and Louis)
``u``              undo
``resign``         resign
=================  =====================================================================

Piles and foundations are numbered from 1 here and from 0 in :class:`~protocol.moves.Move`.
"""

from __future__ import annotations

import re

from .config import SPIDER
from .game import GameState
from .moves import DEAL, REDEAL, RESIGN, UNDO, IllegalMove, Kind, Move

_PILE_MOVE = re.compile(r"^(\d{1,2})\s*>\s*(?:(f)(\d)?|(\d{1,2})(?:\s*:\s*(\d{1,2}))?)$")
_WORDS = {
    "d": DEAL, "deal": DEAL,
    "r": REDEAL, "redeal": REDEAL,
    "u": UNDO, "undo": UNDO,
    "resign": RESIGN,
}  # fmt: skip


class NotationError(ValueError):
    """Text that is not a move."""


def parse_move(text: str) -> Move:
    """The move written ``text``; :class:`NotationError` if it is not one."""
    t = text.strip().lower()
    if t in _WORDS:
        return _WORDS[t]
    m = _PILE_MOVE.match(t)
    if not m:
        raise NotationError(
            f"{text!r} is not a move: write 3>7, 3>7:4, 3>f, 3>f5, d (deal), r (redeal), "
            "u (undo) or resign"
        )
    src = int(m.group(1)) - 1
    if src < 0:
        raise NotationError("piles are numbered from 1")
    if m.group(2):
        f = int(m.group(3)) - 1 if m.group(3) else -1
        if m.group(3) and f < 0:
            raise NotationError("foundations are numbered from f1")
        return Move(Kind.FOUNDATION, src, f, 0)
    dst = int(m.group(4)) - 1
    if dst < 0:
        raise NotationError("piles are numbered from 1")
    count = int(m.group(5)) if m.group(5) else 0
    if m.group(5) and count == 0:
        raise NotationError("a move takes at least one card: 3>7:1 or more")
    return Move(Kind.TABLEAU, src, dst, count)


def format_move(move: Move, before: GameState | None = None, *, game: str | None = None) -> str:
    """``move`` in notation.

    Given ``before``, the state the move is played from, the shortest text that means the same
    move there (``3>7`` rather than ``3>7:2`` when the fitting run is two cards); without it, a
    text that means this move in any position of ``game`` (any game if not given).
    """
    if before is not None:
        game = before.config.game
    kind = move.kind
    if kind == Kind.TABLEAU:
        base = f"{move.src + 1}>{move.dst + 1}"
        if move.count == 0:
            return base
        if game is not None and game != SPIDER:
            return base  # St. Helena and Louis move one card at a time
        if before is not None:
            try:
                settled = before.copy().apply(Move(Kind.TABLEAU, move.src, move.dst, 0)).move
            except IllegalMove:
                settled = None
            if settled == move:
                return base
        return f"{base}:{move.count}"
    if kind == Kind.FOUNDATION:
        base = f"{move.src + 1}>f"
        if move.dst == -1 or (move.count == 13 and before is None):
            return base
        if move.count == 13 and before is not None:
            # Spider: ``3>f`` only if it picks the same foundation there (``before`` is known:
            # a count of 13 without it returned above)
            try:
                settled = before.copy().apply(Move(Kind.FOUNDATION, move.src, -1)).move
            except IllegalMove:
                settled = None
            if settled == move:
                return base
        return f"{base}{move.dst + 1}"
    return {Kind.DEAL: "d", Kind.REDEAL: "r", Kind.UNDO: "u", Kind.RESIGN: "resign"}[kind]
