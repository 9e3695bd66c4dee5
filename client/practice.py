"""Practice alone, with no server: hints, undo without limit, and a record of the game.

Plain code, no I/O but :func:`save_record`; the screen is ``client.practice_app``.

A hint is the strong bot's choice (``client.bot.choose_move``) in the player's position.  The bot
masks the state before it decides, so a hint reads exactly what the player sees (face-up cards,
how many cards are face down and in the stock, the foundations) and never a hidden card, even
though practice keeps the whole deal in this process.  Hints exist only here: a race has no hint
key and the server has no hint command.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from protocol import cards
from protocol.config import SPIDER, GameConfig, random_number
from protocol.game import GameState
from protocol.moves import Change, Kind, Move
from protocol.notation import format_move
from protocol.practice import PracticeGame
from protocol.record import practice_record
from protocol.spider import run_length

from .keys import PILE_KEYS
from .strategy import Memory, choose_move
from .strategy.common import stage
from .text import plural

HINT_LEVEL = "strong"


def practice_dir() -> Path:
    """Where finished practice games are saved: ``$XDG_STATE_HOME/patience-race/practice``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patience-race" / "practice"


def picked_count(move: Move, state: GameState) -> int:
    """The ``Keys.count`` that picks ``move``'s cards: 0 when a pile key alone picks them."""
    if move.kind != Kind.TABLEAU or state.config.game != SPIDER:
        return 0
    settled = state.copy().apply(Move(Kind.TABLEAU, move.src, move.dst, 0)).move
    return 0 if settled.count == move.count else move.count


def keys_for(move: Move, state: GameState) -> str:
    """The keys that play ``move`` on this client."""
    kind = move.kind
    if kind == Kind.DEAL:
        return "d"
    if kind == Kind.REDEAL:
        return "r r"
    if kind == Kind.FOUNDATION:
        src = PILE_KEYS[move.src]
        if state.config.game == SPIDER or state.check(Move(Kind.FOUNDATION, move.src)) is None:
            return f"{src} f"
        return f"{src} {'k' if move.dst < 4 else 'a'}"
    if kind == Kind.TABLEAU:
        src, dst = PILE_KEYS[move.src], PILE_KEYS[move.dst]
        if state.config.game != SPIDER:
            return f"{src} {dst}"
        settled = state.copy().apply(Move(Kind.TABLEAU, move.src, move.dst, 0)).move
        if settled.count == move.count:
            return f"{src} {dst}"
        run = run_length(state.piles[move.src], len(state.piles[move.src]) - state.down[move.src])
        steps = run - move.count
        return f"{src} {'↓ ' * steps}{dst}" if steps > 0 else f"{src} {dst}"
    return ""


def describe(move: Move, state: GameState, picked: bool = False) -> str:
    """A hint for a person: what to do and the keys that do it (``picked``: its pile, and the
    cards of its run, are picked already: only the rest is said)."""
    kind = move.kind
    keys = keys_for(move, state)
    if picked and kind in (Kind.TABLEAU, Kind.FOUNDATION):
        keys = f"pile {move.src + 1} is picked, press {keys.split()[-1]}"
    if kind == Kind.DEAL:
        what = "deal" + (" a card on each pile" if state.config.game == SPIDER else " the stock")
    elif kind == Kind.REDEAL:
        what = "redeal: gather the piles and deal them again"
    elif kind == Kind.FOUNDATION:
        p = state.piles[move.src]
        shown = "the K..A run" if state.config.game == SPIDER else cards.name(p[-1])
        what = f"pile {move.src + 1}: {shown} to a foundation"
    else:
        p = state.piles[move.src]
        count = move.count or 1
        moving = " ".join(cards.names(p[-count:]))
        onto = (
            f"onto {cards.name(state.piles[move.dst][-1])} (pile {move.dst + 1})"
            if state.piles[move.dst]
            else f"to the empty pile {move.dst + 1}"
        )
        what = f"{moving} from pile {move.src + 1} {onto}"
    if picked and kind in (Kind.TABLEAU, Kind.FOUNDATION):
        return f"Hint: {format_move(move, state)}, {what} ({keys})."
    return f"Hint: {format_move(move, state)}, {what} (keys: {keys})."


@dataclass
class Practice:
    """A practice session: one game after another, each with its clock, hints and record."""

    config: GameConfig
    number: int | None = None
    """The first game's deal number (None: a random one, as a race would draw)."""
    game: PracticeGame = field(init=False)
    started: float = field(init=False)
    finished_at: float | None = None
    saved: Path | None = None
    """Where the finished game's record was saved."""
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    _memory: Memory = field(default_factory=Memory)
    """The hint's bot memory for this game (its plan, the positions it has met)."""
    _last_hint: tuple[GameState, Move | None] | None = None
    """The position last hinted and its hint: asking again there shows it again, uncounted."""
    _followed: set[tuple[object, ...]] = field(default_factory=set)
    """The positions a run of hints followed went through, since the last card shown, deal or
    redeal (one :func:`~client.strategy.common.stage`: a hint followed into another ends the
    run): a hint back to one of them goes round in circles.  Any move of the player's own, or an
    undo, ends the run (the same hint again after an undo, or a move back after a poor one, is
    no circle)."""
    circling: bool = False
    """The last hint was refused as going round in circles (:meth:`hint` gave None)."""

    def __post_init__(self) -> None:
        self.new_game(self.number)

    def new_game(self, number: int | None = None) -> None:
        number = random_number(self.config) if number is None else number
        self.number = number
        self.game = PracticeGame(self.config, number)
        self.started = time.monotonic()
        self.finished_at = None
        self.saved = None
        self._last_hint = None
        self._followed = set()
        self._forget()

    def _forget(self) -> None:
        self._memory = Memory()

    @property
    def state(self) -> GameState:
        return self.game.state

    def play(self, move: Move) -> Change:
        """Apply a move (an undo goes back one move, however far); IllegalMove if refused."""
        before = self.game.state
        last = self._last_hint
        followed = last is not None and last[0] is before and last[1] == move
        change = self.game.apply(move)
        after = self.game.state
        if followed and move.kind == Kind.TABLEAU and stage(after) == stage(before):
            self._followed |= {before.board(), after.board()}  # (a run is of one stage)
        else:
            self._followed = set()
        if move.kind == Kind.UNDO:
            self._forget()  # the hint's plan was for a position that is gone
        if self.game.finished and self.finished_at is None:
            self.finished_at = time.monotonic()
        return change

    def hint(self) -> Move | None:
        """The strong bot's move in the player's position (read as the player sees it), or
        None when no move helps: only undo or resigning are left.  Counted as a hint."""
        state = self.game.state
        if self.game.finished:
            return None
        if self._last_hint is not None and self._last_hint[0] is state:
            return self._last_hint[1]
        move = choose_move(state, HINT_LEVEL, self.rng, self._memory)
        self.circling = False
        if move is not None and move.kind == Kind.TABLEAU and self._followed:
            after = state.copy()
            after.apply(move)
            if stage(after) == stage(state) and after.board() in self._followed:
                # the hints, followed, went round in circles for fifty moves of a lost 4-suit
                # endgame, a queen to and fro (a new-user trial): said, and no hint
                move, self.circling = None, True
        self.game.hinted()
        self._last_hint = (state, move)
        return move

    def elapsed(self, now: float | None = None) -> float:
        end = self.finished_at if self.finished_at is not None else now or time.monotonic()
        return max(0.0, end - self.started)

    def summary(self) -> str:
        """One line for the results: how the game ended, its counters and hints."""
        s = self.game.state
        minutes, seconds = divmod(int(self.elapsed()), 60)
        how = (
            "You won"
            if s.won
            else "You resigned"
            if s.resigned
            else "Stuck"
            if s.stuck
            else "Playing"
        )
        hints = self.game.hints
        line = (
            f"{how} in {minutes}:{seconds:02d}: {plural(s.moves, 'move')}, "
            f"{plural(s.undos, 'undo')}, {plural(hints, 'hint')}"
        )
        return line + "."

    def save_record(self, directory: Path | None = None) -> Path:
        """Write the game's record (a file ``patience-race replay`` checks); returns its path."""
        directory = directory or practice_dir()
        directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        data = practice_record(self.game).dumps().encode("utf-8")
        # written whole under a temporary name, then linked to a name nobody has: two games of
        # one deal saved in the same second (two terminals) each keep their own file
        tmp = directory / f".{self.config.game}-{self.number}-{stamp}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            for k in itertools.count(1):
                name = f"{self.config.game}-{self.number}-{stamp}" + (f"-{k}" if k > 1 else "")
                path = directory / f"{name}.json"
                try:
                    os.link(tmp, path)  # (fails if the name is taken: never over another's)
                except FileExistsError:
                    continue
                except OSError:  # a file system without links: created, if nobody has it
                    try:
                        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    except FileExistsError:
                        continue
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                break
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self.saved = path
        return path
