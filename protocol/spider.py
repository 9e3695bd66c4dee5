"""Spider: 1, 2 or 4 suits, xpat2's relaxed deals, two scores (docs/rules.md)."""

from __future__ import annotations

from . import cards
from .cards import Card
from .config import SPIDER
from .game import GameState, register
from .moves import Change, IllegalMove, Kind, Move, Placed, check_pile

PILES = 10
FACE_DOWN_AT_START = 44
SUIT_LENGTH = 13


def run_length(pile: list[Card], up: int) -> int:
    """How many top cards of ``pile`` form a run in one suit, descending by one (at most ``up``)."""
    if up == 0:
        return 0
    n = 1
    i = len(pile) - 1
    while n < up:
        a = pile[i]
        if pile[i - 1] != a + 1 or a % 13 == 12:
            break
        n += 1
        i -= 1
    return n


def home_keeps_deals(state: GameState) -> bool:
    """Whether a complete suit can go home and leave enough cards on the table for the deals
    still to come.  A standard deal needs a card on every pile, so with the stock not empty
    fewer than :data:`PILES` cards left on the table end the game there; xpat2's relaxed deals
    may go onto empty piles, but only when every other pile is in sequence, which the few cards
    left may never be.  So the answer is the safe one whatever the option: sending the suit home
    is legal either way, and a player (or the automatic sending home) should not."""
    return not state.stock or sum(map(len, state.piles)) - SUIT_LENGTH >= PILES


def _a_rank(rank: int) -> str:
    """``an 8``, ``a 9``, ``a jack``: the card a pile takes, for messages."""
    name = cards.RANK_NAMES[rank - 1]
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name if rank > 10 or rank == 1 else rank}"


def _rank_run(pile: list[Card]) -> bool:
    """The whole pile descends by one rank, bottom to top, in any suits."""
    return all(pile[i] % 13 == pile[i + 1] % 13 + 1 for i in range(len(pile) - 1))


class SpiderState(GameState):
    __slots__ = ()
    PILES = PILES

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
            raise IllegalMove("Spider has no redeal")
        raise IllegalMove(f"unknown move {move!r}")

    def _pile(self, index: int) -> list[Card]:
        check_pile(index, PILES, f"Spider has piles 1 to {PILES}")
        return self.piles[index]

    def _tableau(self, s: int, d: int, n: int) -> Change:
        src = self._pile(s)
        dst = self._pile(d)
        if s == d:
            raise IllegalMove(f"pile {s + 1} cannot move onto itself")
        up = len(src) - self.down[s]
        if up == 0:
            raise IllegalMove(f"pile {s + 1} is empty")
        run = run_length(src, up)
        if n < 0:
            raise IllegalMove("a move takes at least one card")
        if n > up:
            raise IllegalMove(f"pile {s + 1} has only {up} face-up card{'s' if up > 1 else ''}")
        if n > run:
            raise IllegalMove(
                f"the last {n} cards of pile {s + 1} are not a run in one suit: "
                f"only the last {run} can move together"
            )
        if dst:
            top = dst[-1]
            need = top % 13  # the rank (1..12) of the card that may go on top, 0 for an ace
            if need == 0:
                raise IllegalMove(f"nothing can go on {cards.name(top)}: it is an ace")
            if n == 0:
                n = need - src[-1] % 13
                if not 1 <= n <= run:
                    unit = " ".join(cards.names(src[-run:]))
                    raise IllegalMove(
                        f"no card of pile {s + 1}'s movable run ({unit}) goes on "
                        f"{cards.name(top)}: that takes {_a_rank(need)}"
                    )
            elif src[-n] % 13 + 1 != need:
                bottom = src[-n]
                if bottom % 13 == 12:
                    raise IllegalMove(
                        f"{cards.name(bottom)} is a king: kings go only to empty piles"
                    )
                raise IllegalMove(
                    f"{cards.name(bottom)} cannot go on {cards.name(top)}: it takes {_a_rank(need)}"
                )
        elif n == 0:
            n = run
        moved = src[-n:]
        del src[-n:]
        dst.extend(moved)
        change = Change(Move(Kind.TABLEAU, s, d, n))
        self._turn_up(s, change)
        return self._done(change)

    def _to_foundation(self, s: int, f: int) -> Change:
        src = self._pile(s)
        if f != -1 and not 0 <= f < len(self.foundations):
            # (before the run: "pile 1 does not end with one" answered a foundation that is not
            # there, a trial of a client written from the docs)
            raise IllegalMove(
                f"there is no foundation f{f + 1}: they go from f1 to f{len(self.foundations)}"
            )
        up = len(src) - self.down[s]
        if up < SUIT_LENGTH or src[-1] % 13 != 0 or run_length(src, SUIT_LENGTH) < SUIT_LENGTH:
            raise IllegalMove(
                f"only a complete run from king to ace in one suit goes to a foundation, "
                f"and pile {s + 1} does not end with one"
            )
        free = [i for i, fnd in enumerate(self.foundations) if not fnd]
        if f == -1:
            f = free[0]
        elif f not in free:
            raise IllegalMove(f"foundation {f + 1} is not free")
        self.foundations[f] = src[-SUIT_LENGTH:]
        del src[-SUIT_LENGTH:]
        change = Change(Move(Kind.FOUNDATION, s, f, SUIT_LENGTH))
        self._turn_up(s, change)
        return self._done(change)

    def _deal_problem(self) -> str | None:
        if not self.stock:
            return "the stock is empty"
        empty = [i for i, p in enumerate(self.piles) if not p]
        if not empty:
            return None
        relaxed = self.config.option("relaxed")
        names = ", ".join(str(i + 1) for i in empty)
        if relaxed == 0:
            if len(empty) == 1:
                return f"you cannot deal while a pile is empty (pile {names}): fill it first"
            return f"you cannot deal while a pile is empty (piles {names}): fill them first"
        for i, p in enumerate(self.piles):
            if not p:
                continue
            if self.down[i]:
                return (
                    f"a deal onto an empty pile (pile {names}) needs every other pile face up, "
                    f"and pile {i + 1} has face-down cards"
                )
            ordered = run_length(p, len(p)) == len(p) if relaxed == 1 else _rank_run(p)
            if not ordered:
                how = "rank and suit" if relaxed == 1 else "rank"
                return (
                    f"a deal onto an empty pile (pile {names}) needs every other pile in "
                    f"sequence by {how}, and pile {i + 1} is not"
                )
        return None

    def _deal(self) -> Change:
        problem = self._deal_problem()
        if problem:
            raise IllegalMove(problem)
        change = Change(Move(Kind.DEAL))
        stock = self.stock
        for i, p in enumerate(self.piles):
            card = stock.pop()
            p.append(card)
            change.dealt.append(Placed(i, len(p) - 1, card))
        return self._done(change)

    def _unapply(self, move: Move) -> None:
        if move.kind == Kind.TABLEAU:
            dst = self.piles[move.dst]
            self.piles[move.src].extend(dst[-move.count :])
            del dst[-move.count :]
        else:
            self.piles[move.src].extend(self.foundations[move.dst])
            self.foundations[move.dst] = []

    # -- legal moves --------------------------------------------------------------------------

    def legal_moves(self) -> list[Move]:
        if self.resigned or self.won:
            return []
        out: list[Move] = []
        piles = self.piles
        down = self.down
        empties = [d for d in range(PILES) if not piles[d]]
        tops = [(d, p[-1] % 13) for d, p in enumerate(piles) if p]
        for s in range(PILES):
            src = piles[s]
            up = len(src) - down[s]
            if not up:
                continue
            run = run_length(src, up)
            top_rank = src[-1] % 13  # rank - 1
            for d, need in tops:
                # the card of rank `need` (rank-1 + 1 ... ) sits `need - top_rank` from the top
                n = need - top_rank
                if 1 <= n <= run and d != s:
                    out.append(Move(Kind.TABLEAU, s, d, n))
            for d in empties:
                for n in range(1, run + 1):
                    out.append(Move(Kind.TABLEAU, s, d, n))
            if run >= SUIT_LENGTH and top_rank == 0:
                out.append(Move(Kind.FOUNDATION, s, self.foundations.index([]), SUIT_LENGTH))
        if self._deal_problem() is None:
            out.append(Move(Kind.DEAL))
        return out

    def has_move(self) -> bool:
        """Whether any move or deal is legal: cheaper than ``legal_moves()`` (stops at the first)."""
        if self.resigned or self.won:
            return False
        if self._deal_problem() is None:
            return True
        piles = self.piles
        down = self.down
        if any(not p for p in piles):
            return any(len(p) > d for p, d in zip(piles, down, strict=True))
        tops = [p[-1] % 13 for p in piles]
        for s in range(PILES):
            src = piles[s]
            up = len(src) - down[s]
            if not up:
                continue
            run = run_length(src, up)
            top_rank = src[-1] % 13
            if run >= SUIT_LENGTH and top_rank == 0:
                return True
            for d in range(PILES):
                if d != s and 1 <= tops[d] - top_rank <= run:
                    return True
        return False

    # -- outcome and scores ---------------------------------------------------------------------

    @property
    def won(self) -> bool:
        if self.stock:
            return False
        for p, d in zip(self.piles, self.down, strict=True):
            if p and (len(p) != SUIT_LENGTH or d or run_length(p, SUIT_LENGTH) != SUIT_LENGTH):
                return False
        return True

    def _pairs_and_runs(self) -> tuple[int, int]:
        """Face-up cards with the same-suit card one rank lower on them; complete K..A runs."""
        pairs = runs = 0
        for p, d in zip(self.piles, self.down, strict=True):
            chain = 0
            for i in range(d, len(p) - 1):
                a = p[i]
                if p[i + 1] == a - 1 and a % 13:
                    pairs += 1
                    chain += 1
                    if chain == 12:
                        runs += 1
                else:
                    chain = 0
        return pairs, runs

    def score(self) -> int:
        """xpat2's score, 0..1000 (docs/rules.md)."""
        return self.scores()[0]

    def scores(self) -> tuple[int, int]:
        """xpat2's and aisleriot's scores from one walk over the piles."""
        pairs, runs = self._pairs_and_runs()
        turned = FACE_DOWN_AT_START - sum(self.down)
        clear = self.down.count(0)
        done = sum(1 for f in self.foundations if f)
        bonus = 2 * max(0, runs - 3) if runs + done == 8 else 0
        score = 10 * turned + 15 * clear + 2 * pairs + 26 * runs + 50 * done + bonus
        return score, pairs + 12 * done

    def score2(self) -> int:
        """aisleriot's score, 0..96."""
        return self.scores()[1]

    @property
    def deals_left(self) -> int:
        return len(self.stock) // PILES


register(SPIDER, SpiderState)
