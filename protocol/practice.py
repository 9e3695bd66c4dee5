"""A game played alone for practice: undo without limit, hints counted, a record that says so.

In a race, undo never goes back past a card turned, a deal or a redeal (the room's ``safe``
policy, kept by :class:`~protocol.game.GameState` itself), and there are no hints.  Practice has
no opponent to be fair to, so :class:`PracticeGame` keeps a snapshot before every move and an
undo goes back one move, however far (cards turned stay known to the player: that is the price
of practice).  Hints are computed by the client (``client.practice``); this module only counts
them, so that the result and the record say they were used.

The game's record is an ordinary game record (docs/records.md) with a ``practice`` field::

    "practice": {"undo": "unlimited", "hints": 3}

and :func:`protocol.record.practice_record` writes it; :func:`protocol.record.replay` replays its
undos the practice way.
"""

from __future__ import annotations

from .config import GameConfig
from .game import GameState, new_game
from .moves import Change, IllegalMove, Kind, Move
from .notation import format_move

MAX_SNAPSHOTS = 20_000
"""Positions kept for undo at most (the oldest go first): a long game stays bounded."""


class PracticeGame:
    """One practice game: the full state (the player's own, alone), its undo snapshots, the
    moves in notation and the hints asked."""

    def __init__(self, config: GameConfig, number: int, state: GameState | None = None) -> None:
        self.config = config
        self.number = number
        self.state = state if state is not None else new_game(config, number)
        self.notation: list[str] = []
        """Every move in notation, undos (``u``) and a resignation included."""
        self.hints = 0
        """Hints shown."""
        self._past: list[GameState] = []

    @property
    def can_undo(self) -> bool:
        s = self.state
        return bool(self._past) and not s.resigned and not s.won

    @property
    def finished(self) -> bool:
        """Won or resigned.  A stuck game is not finished here: an undo can go on from it."""
        return self.state.won or self.state.resigned

    def apply(self, move: Move) -> Change:
        """Play ``move`` (an undo goes back one move, however far); :class:`IllegalMove` if not
        allowed, with nothing changed."""
        if move.kind == Kind.UNDO:
            return self.undo()
        before = self.state
        after = before.copy()
        change = after.apply(move)
        self.state = after
        if move.kind == Kind.RESIGN:
            self._past.clear()
        else:
            self._past.append(before)
            del self._past[:-MAX_SNAPSHOTS]
        self.notation.append(format_move(change.move, before))
        return change

    def undo(self) -> Change:
        s = self.state
        if s.resigned:
            raise IllegalMove("you have resigned: the game is over")
        if s.won:
            raise IllegalMove("the game is won: it stays won")
        if not self._past:
            raise IllegalMove("nothing to undo yet")
        previous = self._past.pop()
        # the counters go on: moves made and undos are never taken back
        previous.moves = s.moves
        previous.undos = s.undos + 1
        self.state = previous
        self.notation.append("u")
        return Change(Move(Kind.UNDO))

    def hinted(self) -> None:
        """A hint was shown."""
        self.hints += 1
