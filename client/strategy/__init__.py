"""The bot's strategy: pure decisions from what a seat may see, one module per game family.

    move = choose_move(state, "normal", random.Random(1), memory)   # None: give up (resign)

``choose_move`` first *masks* the state (:func:`~client.strategy.common.masked`): every face-down
card and the stock become :data:`~protocol.moves.UNKNOWN`, so a decision can never depend on a
hidden card, whether the caller passes its own client copy (``GameState.from_view``) or the
server's full state.  Then the game's own strategy decides: :mod:`client.strategy.spider` or
:mod:`client.strategy.helena` (St. Helena and Louis).  Levels:

- ``easy``: one move ahead, the position value blurred with noise: a casual player.
- ``normal``: a short best-first look-ahead over the moves that show no new card, and a wider one
  before it deals, redeals or gives up; in St. Helena and Louis, one long look with the solver
  the first time nothing is hidden.
- ``strong``: the same look-ahead, wider where it pays, and the full-information solver at key
  decisions: on guessed deals of the unseen cards in Spider (and in Louis before its stock is
  dealt), on the position itself in St. Helena, where nothing is hidden.

A search looks for the line of moves that reaches the best-valued position (a move that shows a
card ends its line: what follows depends on a card the bot does not know); the bot then plays the
whole line without searching again.  A :class:`Memory` (one per game) remembers the plan being
played, the positions met since the last card was shown (never to go back to one) and how long
since the last progress.  The bot gives up (``None``) only when no legal move leads to a position
it has not met since the last card shown, deal or redeal, after :data:`MOVE_CAP` moves, or after
:data:`IDLE_LIMIT` moves without progress, so a game always ends.

No I/O here; randomness only from the ``random.Random`` passed in, so a decision is the same for
the same state, memory and random generator.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from protocol.config import SPIDER
from protocol.game import GameState, state_class
from protocol.moves import RESIGN, Move

from . import helena, spider
from .common import (
    DEFAULT_LEVEL,
    IDLE_LIMIT,
    LEVELS,
    MOVE_CAP,
    PACE,
    Memory,
    Pace,
    check_level,
    determinize,
    masked,
)

__all__ = [
    "DEFAULT_LEVEL",
    "IDLE_LIMIT",
    "LEVELS",
    "MOVE_CAP",
    "PACE",
    "GameResult",
    "Memory",
    "OfflineGame",
    "Pace",
    "Player",
    "check_level",
    "choose_move",
    "determinize",
    "masked",
    "play_offline",
]


def choose_move(
    state: GameState,
    level: str = DEFAULT_LEVEL,
    rng: random.Random | None = None,
    memory: Memory | None = None,
) -> Move | None:
    """The bot's next move in ``state``, or None to give up (resign).

    Reads only what the seat may see: ``state`` is masked first.  Pass the same ``memory`` for
    every move of one game (a fresh one is used otherwise: the bot then forgets its plan and the
    positions it has met).
    """
    check_level(level)
    if rng is None:
        rng = random.Random(0)
    if memory is None:
        memory = Memory()
    s = masked(state)
    if s.won or s.resigned or s.moves >= MOVE_CAP.get(s.config.game, 1500):
        return None
    if not s.legal_moves():
        return None
    if s.config.game == SPIDER:
        return spider.choose(s, level, rng, memory)
    return helena.choose(s, level, rng, memory)


class Player:
    """A bot for one game after another: ``choose(state)``, and ``new_game()`` between games."""

    def __init__(self, level: str = DEFAULT_LEVEL, rng: random.Random | None = None) -> None:
        check_level(level)
        self.level = level
        self.rng = rng or random.Random()
        # its own order of moves it judges exactly as good (``liking``), kept for its life
        self.taste = self.rng.getrandbits(31) | 1
        self.memory = Memory(taste=self.taste)

    def new_game(self) -> None:
        self.memory = Memory(taste=self.taste)

    def choose(self, state: GameState) -> Move | None:
        return choose_move(state, self.level, self.rng, self.memory)


# -- offline games (tests, bench) -------------------------------------------------------------


@dataclass
class GameResult:
    won: bool
    resigned: bool
    stuck: bool
    score: int
    moves: int
    seconds: float
    """Thinking time, in all."""
    searches: int = 0
    solves: int = 0
    longest: float = 0.0
    """The longest single decision, in seconds."""
    paced: float = 0.0
    """The time the game would take in a room at the level's average pace: the bot thinks
    during its pause, so each move takes the longer of the two."""


class OfflineGame:
    """A game played by one bot as a seat would over the network, that can stop and go on.

    The bot keeps its own copy (``mine``) built from ``real.view()`` (hidden cards UNKNOWN),
    chooses on it, and learns each shown card only when the real game shows it, exactly as
    ``run_bot`` does.  :meth:`play` can stop after a chosen move (``stop``) and be called again
    later, on this object or on a copy of it (``copy.deepcopy``, ``pickle``): the bench keeps
    games at a point and plays them on in other ways from there.
    """

    def __init__(self, real: GameState, player: Player, *, cap: int | None = None) -> None:
        self.real = real
        self.player = player
        self.mine = state_class(real.config).from_view(real.config, real.view())
        self.limit = cap if cap is not None else MOVE_CAP.get(real.config.game, 1500) + 10
        self.steps = 0
        self.thinking = 0.0
        self.longest = 0.0
        self.paced = 0.0

    def play(self, stop: Callable[[Move, GameState], bool] | None = None) -> bool:
        """Play until the game is over, or until ``stop(move, real)`` is true after a move;
        whether the game is over."""
        real, mine, pause = self.real, self.mine, PACE[self.player.level].mean
        while not real.over and self.steps < self.limit:
            t0 = time.perf_counter()
            move = self.player.choose(mine) or RESIGN
            dt = time.perf_counter() - t0
            self.thinking += dt
            self.longest = max(self.longest, dt)
            self.paced += max(pause, dt)
            change = real.apply(move)
            mirror = mine.apply(change.move)
            shown = [(p.pile, p.index) for p in change.shown]
            if [(p.pile, p.index) for p in mirror.shown] != shown:
                raise AssertionError(f"the bot's copy shows other cards than the game for {move}")
            for p in change.shown:
                mine.show(p)
            self.steps += 1
            if stop is not None and stop(move, real):
                break
        return real.over or self.steps >= self.limit

    def result(self) -> GameResult:
        real, memory = self.real, self.player.memory
        return GameResult(
            won=real.won,
            resigned=real.resigned,
            stuck=real.stuck,
            score=real.score(),
            moves=real.moves,
            seconds=self.thinking,
            searches=memory.searches,
            solves=memory.solves,
            longest=self.longest,
            paced=self.paced,
        )


def play_offline(
    real: GameState,
    level: str = DEFAULT_LEVEL,
    rng: random.Random | None = None,
    *,
    cap: int | None = None,
) -> GameResult:
    """Play ``real`` (a full state) to its end as a seat would over the network
    (:class:`OfflineGame`)."""
    game = OfflineGame(real, Player(level, rng or random.Random(0)), cap=cap)
    game.play()
    return game.result()
