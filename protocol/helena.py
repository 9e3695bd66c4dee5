"""St. Helena and Louis (docs/rules.md).

Foundations 0..3 are the kings of clubs, spades, hearts, diamonds, building down; 4..7 the aces,
building up.  Piles 0..11 run clockwise from the top left: 0-3 above the kings, 4-5 on the right,
6-9 below the aces (right to left), 10-11 on the left (bottom to top).
"""

from __future__ import annotations

from typing import Self

from . import cards
from .cards import Card
from .config import LOUIS, ST_HELENA
from .game import GameState, register
from .moves import Change, IllegalMove, Kind, Move, Placed, check_pile
from .view import BoardView

PILES = 12
FOUNDATION_SIZE = 13
REDEALS = 2
KING_FOUNDATIONS = (0, 1, 2, 3)
ACE_FOUNDATIONS = (4, 5, 6, 7)
ALL_FOUNDATIONS = KING_FOUNDATIONS + ACE_FOUNDATIONS
ABOVE_KINGS = range(0, 4)
BELOW_ACES = range(6, 10)


def foundation_name(f: int) -> str:
    """``f1 (clubs kings, down)``: people number foundations from 1, kings first (short: a rule
    message naming two must fit the two lines of an 80-column status line)."""
    suit = cards.SUIT_NAMES[f % 4]
    return f"f{f + 1} ({suit} {'kings, down' if f < 4 else 'aces, up'})"


class HelenaState(GameState):
    __slots__ = ("_redeals_left", "stock_dealt")
    PILES = PILES

    _redeals_left: int
    stock_dealt: bool
    """Louis: the stock has been dealt (always True in St. Helena, which has no stock)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._redeals_left = REDEALS
        self.stock_dealt = self.config.game == ST_HELENA

    def _copy_extra(self, new: Self) -> None:
        new._redeals_left = self._redeals_left
        new.stock_dealt = self.stock_dealt

    def _restore_counters(self, view: BoardView) -> None:
        self._redeals_left = view.redeals_left
        self.stock_dealt = self.config.game == ST_HELENA or view.deals_left == 0

    def _extra_board(self) -> tuple[object, ...]:
        return (self._redeals_left, self.stock_dealt)

    @property
    def is_louis(self) -> bool:
        return self.config.game == LOUIS

    @property
    def redeals_left(self) -> int:
        return self._redeals_left

    @property
    def deals_left(self) -> int:
        return 0 if self.stock_dealt else 1

    @property
    def first_deal(self) -> bool:
        """St. Helena's first-deal restriction holds until the first redeal."""
        return not self.is_louis and self._redeals_left == REDEALS

    # -- what may go where ------------------------------------------------------------------------

    def _allowed_foundations(self, s: int) -> tuple[int, ...]:
        if self.first_deal:
            if s in ABOVE_KINGS:
                return KING_FOUNDATIONS
            if s in BELOW_ACES:
                return ACE_FOUNDATIONS
        return ALL_FOUNDATIONS

    def _fits_foundation(self, card: Card, f: int) -> bool:
        fnd = self.foundations[f]
        if len(fnd) >= FOUNDATION_SIZE:
            return False
        top = fnd[-1]
        if f < 4:
            return card == top - 1 and top % 13 != 0
        return card == top + 1 and top % 13 != 12

    def _build_problem(self, card: Card, d: int) -> str | None:
        dst = self.piles[d]
        if not dst:
            if self.is_louis:
                if not self.stock_dealt and self.stock:
                    return None  # cannot happen: empty piles are refilled at once
                return f"pile {d + 1} is empty, and in Louis empty piles stay empty"
            if self.config.option("spaces") == "any":
                return None
            return f"pile {d + 1} is empty, and in this game (spaces none) empty piles stay empty"
        top = dst[-1]
        if abs(card % 13 - top % 13) != 1:
            if {card % 13, top % 13} == {0, 12}:
                return "a king never goes on an ace, nor an ace on a king"
            return f"{cards.name(card)} cannot go on {cards.name(top)}: build one rank up or down"
        if self.config.option("build") == "suit" and card // 13 != top // 13:
            return (
                f"{cards.name(card)} cannot go on {cards.name(top)}: "
                "build in the same suit (this game's build option is suit)"
            )
        return None

    # -- moves ------------------------------------------------------------------------------

    def _apply(self, move: Move) -> Change:
        kind = move.kind
        if kind == Kind.TABLEAU:
            return self._tableau(move.src, move.dst, move.count)
        if kind == Kind.FOUNDATION:
            return self._to_foundation(move.src, move.dst)
        if kind == Kind.DEAL:
            return self._deal()
        if kind == Kind.REDEAL:
            return self._redeal()
        raise IllegalMove(f"unknown move {move!r}")

    def _source(self, s: int) -> list[Card]:
        check_pile(s, PILES, f"piles go from 1 to {PILES}")
        src = self.piles[s]
        if not src:
            raise IllegalMove(f"pile {s + 1} is empty")
        return src

    def _tableau(self, s: int, d: int, n: int) -> Change:
        src = self._source(s)
        check_pile(d, PILES, f"piles go from 1 to {PILES}")
        if s == d:
            raise IllegalMove(f"pile {s + 1} cannot move onto itself")
        if n not in (0, 1):
            raise IllegalMove("only one card moves at a time")
        problem = self._build_problem(src[-1], d)
        if problem:
            raise IllegalMove(problem)
        self.piles[d].append(src.pop())
        change = Change(Move(Kind.TABLEAU, s, d, 1))
        self._refill(s, change)
        return self._done(change)

    def _to_foundation(self, s: int, f: int) -> Change:
        src = self._source(s)
        card = src[-1]
        allowed = self._allowed_foundations(s)
        if f == -1:
            fits = [g for g in allowed if self._fits_foundation(card, g)]
            if not fits:
                raise IllegalMove(self._foundation_problem(card, s, allowed))
            if len(fits) > 1:
                raise IllegalMove(
                    f"{cards.name(card)} fits both {foundation_name(fits[0])} and "
                    f"{foundation_name(fits[1])}: say which, {s + 1}>f{fits[0] + 1} "
                    f"or {s + 1}>f{fits[1] + 1}"
                )
            f = fits[0]
        elif not 0 <= f < 8:
            raise IllegalMove(f"there is no foundation f{f + 1}: they go from f1 to f8")
        elif f not in allowed:
            raise IllegalMove(
                f"on the first deal, pile {s + 1} plays only to the "
                f"{'king' if allowed == KING_FOUNDATIONS else 'ace'} foundations"
            )
        elif not self._fits_foundation(card, f):
            raise IllegalMove(self._foundation_problem(card, s, (f,)))
        self.foundations[f].append(src.pop())
        change = Change(Move(Kind.FOUNDATION, s, f, 1))
        self._refill(s, change)
        return self._done(change)

    def _foundation_problem(self, card: Card, s: int, allowed: tuple[int, ...]) -> str:
        wants = []
        for g in allowed:
            fnd = self.foundations[g]
            if fnd[-1] // 13 != card // 13:
                if len(allowed) == 1:  # one foundation named: say whose it is
                    wants.append(f"{foundation_name(g)} takes only {cards.SUIT_NAMES[g % 4]}")
                continue
            if len(fnd) >= FOUNDATION_SIZE:
                wants.append(f"{foundation_name(g)} is complete")
            else:
                nxt = fnd[-1] - 1 if g < 4 else fnd[-1] + 1
                wants.append(f"{foundation_name(g)} takes {cards.name(nxt)} next")
        where = ""
        if self.first_deal and allowed != ALL_FOUNDATIONS and len(allowed) == 4:
            kind = "king" if allowed == KING_FOUNDATIONS else "ace"
            where = f" (first deal: pile {s + 1} plays to the {kind} foundations only)"
        return f"{cards.name(card)} does not go to a foundation{where}" + (
            ": " + "; ".join(wants) if wants else ""
        )

    def _refill(self, s: int, change: Change) -> None:
        """Louis: before the stock is dealt, an emptied pile takes the stock's top card at once."""
        if not self.stock_dealt and not self.piles[s] and self.stock:
            card = self.stock.pop()
            self.piles[s].append(card)
            change.turned.append(Placed(s, 0, card))

    def _deal(self) -> Change:
        if not self.is_louis:
            raise IllegalMove("St. Helena has no stock to deal: every card is dealt at the start")
        if self.stock_dealt:
            raise IllegalMove("the stock has been dealt already")
        change = Change(Move(Kind.DEAL))
        stock = self.stock
        k = 0
        while stock:
            card = stock.pop()
            pile = self.piles[k % PILES]
            pile.append(card)
            change.dealt.append(Placed(k % PILES, len(pile) - 1, card))
            k += 1
        self.stock_dealt = True
        # A stock deal is final even when refills emptied the stock first and it dealt nothing.
        self._history.clear()
        return change

    def _redeal(self) -> Change:
        if not self.stock_dealt:
            raise IllegalMove("deal the stock first: the redeals come after it")
        if self._redeals_left == 0:
            raise IllegalMove("no redeal left: there are two in a game")
        pack = [c for p in self.piles for c in p]  # pile 1 at the bottom, pile 12 on top
        pack.reverse()  # dealt from the top card of pile 12
        self.piles = [pack[k::PILES] for k in range(PILES)]
        self._redeals_left -= 1
        self._history.clear()
        return Change(Move(Kind.REDEAL))

    def _unapply(self, move: Move) -> None:
        if move.kind == Kind.TABLEAU:
            self.piles[move.src].append(self.piles[move.dst].pop())
        else:
            self.piles[move.src].append(self.foundations[move.dst].pop())

    # -- legal moves ----------------------------------------------------------------------------

    def _moves(self, first_only: bool) -> list[Move]:
        out: list[Move] = []
        if self.resigned or self.won:
            return out
        piles = self.piles
        same_suit = self.config.option("build") == "suit"
        if self.is_louis:
            spaces = not self.stock_dealt and bool(self.stock)
        else:
            spaces = self.config.option("spaces") == "any"
        # the cards each foundation takes next, and the piles each top card may go on
        wanted: dict[Card, list[int]] = {}
        for f, fnd in enumerate(self.foundations):
            if len(fnd) < FOUNDATION_SIZE:
                top = fnd[-1]
                nxt = top - 1 if f < 4 else top + 1
                if (f < 4 and top % 13 != 0) or (f >= 4 and top % 13 != 12):
                    wanted.setdefault(nxt, []).append(f)
        tops = [(d, p[-1]) for d, p in enumerate(piles) if p]
        empties = [d for d, p in enumerate(piles) if not p] if spaces else []
        first = self.first_deal
        for s in range(PILES):
            src = piles[s]
            if not src:
                continue
            card = src[-1]
            for f in wanted.get(card, ()):
                if first and ((s < 4 and f >= 4) or (6 <= s < 10 and f < 4)):
                    continue
                out.append(Move(Kind.FOUNDATION, s, f, 1))
                if first_only:
                    return out
            rank = card % 13
            for d, top in tops:
                if d == s:
                    continue
                diff = rank - top % 13
                if (diff == 1 or diff == -1) and (not same_suit or card // 13 == top // 13):
                    out.append(Move(Kind.TABLEAU, s, d, 1))
                    if first_only:
                        return out
            for d in empties:
                out.append(Move(Kind.TABLEAU, s, d, 1))
                if first_only:
                    return out
        if not self.stock_dealt:
            out.append(Move(Kind.DEAL))
        elif self._redeals_left:
            out.append(Move(Kind.REDEAL))
        return out

    def legal_moves(self) -> list[Move]:
        return self._moves(first_only=False)

    def has_move(self) -> bool:
        return bool(self._moves(first_only=True))

    # -- outcome and score ----------------------------------------------------------------------

    @property
    def won(self) -> bool:
        return all(len(f) == FOUNDATION_SIZE for f in self.foundations)

    def score(self) -> int:
        """Cards moved to the foundations, 0..96."""
        return sum(map(len, self.foundations)) - 8


register(ST_HELENA, HelenaState)
register(LOUIS, HelenaState)
