"""The rules engine's common shape: a game state, its moves, undo, scores and projection.

Each game (``protocol.spider``, ``protocol.helena``) is a subclass of :class:`GameState`.  A state
is plain mutable data with no I/O.  The server holds the full state of every seat; a client holds
a copy built from its :class:`~protocol.view.BoardView`, whose hidden cards are
:data:`~protocol.moves.UNKNOWN` until the server shows them (see :meth:`GameState.show`): legality
never depends on a hidden card, so both sides check moves with the same code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar, Self

from . import cards
from .cards import Card
from .config import LOUIS, SPIDER, ST_HELENA, GameConfig
from .deals import Deal, deal
from .moves import UNKNOWN, Change, IllegalMove, Kind, Move, Placed
from .view import BoardView, PileView


class GameState(ABC):
    """One player's board.  Subclasses implement the moves of one game."""

    __slots__ = (
        "_history", "config", "down", "foundations", "moves", "piles", "resigned", "stock", "undos",
    )  # fmt: skip

    PILES: ClassVar[int]

    config: GameConfig
    piles: list[list[Card]]
    """Each pile bottom to top; its first ``down[i]`` cards are face down."""
    down: list[int]
    stock: list[Card]
    """The stock with its next card LAST (``stock.pop()`` deals it)."""
    foundations: list[list[Card]]
    moves: int
    """Moves applied (deals and redeals included, undos not)."""
    undos: int
    resigned: bool
    _history: list[Move]
    """The moves that may still be undone, oldest first: emptied at every reveal, deal or redeal."""

    def __init__(
        self,
        config: GameConfig,
        piles: list[list[Card]],
        down: list[int],
        stock: list[Card],
        foundations: list[list[Card]],
    ) -> None:
        self.config = config
        self.piles = piles
        self.down = down
        self.stock = stock
        self.foundations = foundations
        self.moves = 0
        self.undos = 0
        self.resigned = False
        self._history = []

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_deal(cls, d: Deal) -> Self:
        state = cls(
            d.config,
            [list(p) for p in d.tableau],
            list(d.face_down),
            list(reversed(d.stock)),
            [list(f) for f in d.foundations],
        )
        return state

    @classmethod
    def from_view(cls, config: GameConfig, view: BoardView) -> Self:
        """A player's own copy, from what they may see: hidden cards are ``UNKNOWN``."""
        state = cls(
            config,
            [[UNKNOWN] * p.hidden + [cards.parse(c) for c in p.cards] for p in view.tableau],
            [p.hidden for p in view.tableau],
            [UNKNOWN] * view.stock,
            [[cards.parse(c) for c in f] for f in view.foundations],
        )
        state.moves = view.moves
        state.undos = view.undos
        state.resigned = view.resigned
        state._restore_counters(view)
        return state

    def _restore_counters(self, view: BoardView) -> None:
        """Subclasses restore their own counters (redeals left...) from a view."""

    def copy(self) -> Self:
        new = object.__new__(type(self))
        for slot in GameState.__slots__:
            setattr(new, slot, getattr(self, slot))
        new.piles = [p[:] for p in self.piles]
        new.down = self.down[:]
        new.stock = self.stock[:]
        new.foundations = [f[:] for f in self.foundations]
        new._history = self._history[:]
        self._copy_extra(new)
        return new

    def _copy_extra(self, new: Self) -> None:
        """Subclasses copy their own fields."""

    # -- the rules --------------------------------------------------------------------------

    def apply(self, move: Move) -> Change:
        """Check ``move`` and apply it; :class:`IllegalMove` (nothing changed) if not allowed."""
        kind = move.kind
        if kind == Kind.UNDO:
            return self._undo()
        if self.resigned:
            raise IllegalMove("you have resigned: the game is over")
        if kind == Kind.RESIGN:
            self.resigned = True
            self._history.clear()
            return Change(move)
        if self.won:
            raise IllegalMove("the game is won: there is nothing left to do")
        change = self._apply(move)
        self.moves += 1
        return change

    def check(self, move: Move) -> str | None:
        """Why ``move`` is illegal, or None if it is legal (the state is not changed)."""
        try:
            self.copy().apply(move)
        except IllegalMove as exc:
            return str(exc)
        return None

    @abstractmethod
    def _apply(self, move: Move) -> Change: ...

    @abstractmethod
    def legal_moves(self) -> list[Move]:
        """Every legal move (undo and resign excepted), each with its count and target settled."""

    @abstractmethod
    def _unapply(self, move: Move) -> None:
        """Take back ``move``, which did not reveal, deal or redeal."""

    def has_move(self) -> bool:
        return bool(self.legal_moves())

    @property
    def can_undo(self) -> bool:
        return bool(self._history) and not self.resigned and not self.won

    def _undo(self) -> Change:
        if self.resigned:
            raise IllegalMove("you have resigned: the game is over")
        if self.won:
            raise IllegalMove("the game is won: it stays won")
        if not self._history:
            raise IllegalMove(
                "nothing to undo: moves before the last card turned, deal or redeal stand"
                if self.moves
                else "nothing to undo yet"
            )
        move = self._history.pop()
        self._unapply(move)
        self.undos += 1
        return Change(Move(Kind.UNDO), undone=move)

    def _done(self, change: Change) -> Change:
        """Record a move applied: a reveal or deal makes every earlier move final."""
        if change.turned or change.dealt:
            self._history.clear()
        else:
            self._history.append(change.move)
        return change

    def _turn_up(self, pile: int, change: Change) -> None:
        """Turn up the top card of ``pile`` if its last face-up card has gone."""
        p = self.piles[pile]
        if self.down[pile] and len(p) == self.down[pile]:
            self.down[pile] -= 1
            change.turned.append(Placed(pile, len(p) - 1, p[-1]))

    @property
    @abstractmethod
    def won(self) -> bool: ...

    @property
    def stuck(self) -> bool:
        """Not won, not resigned, and no legal move (deals and redeals included) is left."""
        return not self.resigned and not self.won and not self.has_move()

    @property
    def over(self) -> bool:
        """Won, resigned or stuck: the player's race is done."""
        return self.resigned or self.won or self.stuck

    @abstractmethod
    def score(self) -> int: ...

    def score2(self) -> int | None:
        return None

    def scores(self) -> tuple[int, int | None]:
        """``(score(), score2())``, computed together where that is cheaper."""
        return self.score(), self.score2()

    @property
    def deals_left(self) -> int:
        return 0

    @property
    def redeals_left(self) -> int:
        return 0

    @property
    def first_deal(self) -> bool:
        return False

    # -- the player's client ----------------------------------------------------------------

    def show(self, placed: Placed) -> None:
        """Fill in a card the server showed (a client's copy): it must be where it was UNKNOWN."""
        pile = self.piles[placed.pile]
        if not 0 <= placed.index < len(pile) or placed.index < self.down[placed.pile]:
            raise ValueError(f"no face-up card at pile {placed.pile + 1} position {placed.index}")
        if pile[placed.index] not in (UNKNOWN, placed.card):
            raise ValueError(
                f"pile {placed.pile + 1} position {placed.index} is "
                f"{cards.name(pile[placed.index])}, not {cards.name(placed.card)}"
            )
        pile[placed.index] = placed.card

    def view(self) -> BoardView:
        """What this player may see: face-up cards, and only counts of hidden ones."""
        return BoardView(
            game=self.config.game,
            options=dict(self.config.options),
            tableau=[
                PileView(hidden=d, cards=cards.names(p[d:]))
                for p, d in zip(self.piles, self.down, strict=True)
            ],
            stock=len(self.stock),
            foundations=[cards.names(f) for f in self.foundations],
            deals_left=self.deals_left,
            redeals_left=self.redeals_left,
            first_deal=self.first_deal,
            moves=self.moves,
            undos=self.undos,
            can_undo=self.can_undo,
            score=self.score(),
            score2=self.score2(),
            won=self.won,
            stuck=self.stuck,
            resigned=self.resigned,
        )

    # -- comparison and display ----------------------------------------------------------------

    def board(self) -> tuple[Any, ...]:
        """The position alone (not the counters), for equality tests and replays."""
        return (
            tuple(map(tuple, self.piles)),
            tuple(self.down),
            tuple(self.stock),
            tuple(map(tuple, self.foundations)),
            self._extra_board(),
        )

    def _extra_board(self) -> tuple[Any, ...]:
        return ()

    def all_cards(self) -> Iterator[Card]:
        for p in self.piles:
            yield from p
        yield from self.stock
        for f in self.foundations:
            yield from f


def new_game(config: GameConfig, number: int | str) -> GameState:
    """A fresh game of deal ``number``."""
    return state_class(config).from_deal(deal(config, number))


_RULES: dict[str, type[GameState]] = {}
"""Each game's state class, registered by the module that holds its rules when it is imported
(``protocol/spider.py``, ``protocol/helena.py``; ``protocol/__init__.py`` imports both): this
module imports none of the games that import it."""


def register(game: str, cls: type[GameState]) -> None:
    """``cls`` plays ``game`` (each game module says so once, as it is imported)."""
    _RULES[game] = cls


def state_class(config: GameConfig) -> type[GameState]:
    """The class that plays ``config``'s game."""
    try:
        return _RULES[config.game]
    except KeyError:
        raise KeyError(f"no rules registered for the game {config.game!r}") from None


def pile_name(index: int) -> str:
    return f"pile {index + 1}"


__all__ = [
    "LOUIS",
    "SPIDER",
    "ST_HELENA",
    "GameState",
    "IllegalMove",
    "new_game",
    "pile_name",
    "register",
    "state_class",
]
