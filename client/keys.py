"""What the keys mean: :class:`Keys` turns key presses in a race into moves, checking each
against the local rules first so that an illegal move is explained and never sent;
:func:`auto_home` finds the complete Spider suit to send home by itself; :func:`host_settings`
is what the host's keys in the lobby make of the room's settings.  Plain code on the
:class:`~client.model.RaceModel`: ``client.app`` feeds it the keys and the mouse."""

from __future__ import annotations

import time
from dataclasses import dataclass

from protocol import cards
from protocol.config import OPTIONS, SPIDER, TITLES, GameConfig
from protocol.game import GameState
from protocol.messages import PublicSettings, RoomInfo, Settings
from protocol.moves import IllegalMove, Kind, Move
from protocol.notation import format_move
from protocol.spider import home_keeps_deals, run_length

from .model import RaceModel
from .text import plural

SLOW_ANSWER_S = 2.0
"""A move unanswered this long is said to be waiting (a frozen link showed only the move for the
10 s before the client gave the link up: a flaky-network trial)."""
NO_ANSWER_YET = " (no answer yet: waiting for the server...)"

PILE_KEYS = "1234567890-="
"""Pile keys: 1 to 9, then 0 for pile 10, - for 11 and = for 12."""


@dataclass
class Keys:
    """Pile keys pick a source then a target; the same pile again takes one card fewer."""

    model: RaceModel
    source: int | None = None
    count: int = 0
    """0: the unit chosen as ``3>7`` would; else exactly this many cards."""
    pending: bool = False
    """A move is on its way to the server: the next waits for its answer."""
    pending_since: float = 0.0
    slow_said: bool = False
    """The status says the answer is late (:meth:`slow_answer`)."""
    confirm_resign: bool = False
    confirm_redeal: bool = False
    race: str | None = None
    """The race the pick and the confirmations belong to (:meth:`follow`)."""

    def follow(self) -> bool:
        """Drop a pick or a half-confirmed resign or redeal left from another race (a pile key,
        ``x`` or ``r`` pressed as the time ran out acted in the next race: a move never chosen,
        a resignation or a redeal on one key, and a pile 12 picked on Spider's ten crashed the
        client); True if the race changed."""
        if self.race == self.model.race_id:
            return False
        self.race = self.model.race_id
        self.source, self.count = None, 0
        self.confirm_resign = self.confirm_redeal = False
        return True

    def piles(self) -> int:
        return len(self.model.state.piles) if self.model.state else 0

    def pile_of(self, key: str) -> int | None:
        i = PILE_KEYS.find(key)
        return i if 0 <= i < self.piles() else None

    def movable(self, pile: int) -> int:
        state = self.model.state
        if state is None:
            return 0
        if state.config.game != SPIDER:
            return 1 if state.piles[pile] else 0
        p = state.piles[pile]
        return run_length(p, len(p) - state.down[pile])

    def press(self, key: str) -> Move | None:
        """The move a key asks for, checked against the rules (None: nothing to send yet)."""
        self.follow()
        state = self.model.state
        if state is None or self.model.phase != "racing" or self.model.role != "player":
            return None
        if key != "x":
            self.confirm_resign = False
        if key != "r":
            self.confirm_redeal = False
        if key == "escape":
            self.source, self.count = None, 0
            self.model.status = ""
            return None
        if key == "d":
            return self._checked(Move(Kind.DEAL))
        if key == "r":
            if not self.confirm_redeal:
                problem = state.check(Move(Kind.REDEAL))
                if problem is not None:
                    self.model.status = f"Not allowed: {problem}."
                    return None
                self.confirm_redeal = True
                self.model.status = "Redeal? Press r again to redeal, any other key to play on."
                return None
            self.confirm_redeal = False
            return self._checked(Move(Kind.REDEAL))
        if key in ("up", "down"):
            self.resize(1 if key == "up" else -1)
            return None
        if key == "u":
            return self._checked(Move(Kind.UNDO))
        if key == "x":
            if not self.confirm_resign:
                self.confirm_resign = True
                self.model.status = "Resign? Press x again to resign, any other key to play on."
                return None
            self.confirm_resign = False
            return self._checked(Move(Kind.RESIGN))
        if key in ("f", "k", "a"):
            if self.source is None:
                # (f, k or a, as pressed: "then f" answered k and a in St. Helena: a trial)
                self.model.status = f"Pick a pile first (its key), then {key} to send it home."
                return None
            dst = -1
            if key in ("k", "a") and state.config.game != SPIDER:
                top = state.piles[self.source][-1] if state.piles[self.source] else None
                dst = -1 if top is None else cards.suit(top) + (0 if key == "k" else 4)
            move = Move(Kind.FOUNDATION, self.source, dst, 0)
            return self._checked(move)
        pile = self.pile_of(key)
        if pile is None:
            if key in ("-", "="):
                # piles 11 and 12 are St. Helena's and Louis's (it did nothing, silently)
                self.model.status = f"There are {self.piles()} piles: 1 to 9, and 0 for pile 10."
            return None
        if self.source is None and (state.resigned or state.won):
            # refused at the pick, not at the target key after it (a trial)
            self.model.status = (
                "Not allowed: you have resigned: the game is over."
                if state.resigned
                else "Not allowed: the game is won: it stays won."
            )
            return None
        if self.source is None:
            if not state.piles[pile] or self.movable(pile) == 0:
                self.model.status = f"Pile {pile + 1} has nothing to move."
                return None
            self.source, self.count = pile, 0
            self.model.status = self.describe_selection()
            return None
        if pile == self.source:
            run = self.movable(pile)
            if run <= 1:
                self.source, self.count = None, 0
                self.model.status = ""
                return None
            current = self.count or run
            self.count = current - 1 if current > 1 else run
            self.model.status = self.describe_selection()
            return None
        move = Move(Kind.TABLEAU, self.source, pile, self.count)
        return self._checked(move)

    def resize(self, step: int) -> None:
        """Up / down: the picked run grows or shrinks by one card (Spider)."""
        state = self.model.state
        if state is not None and state.config.game != SPIDER:
            # one card moves at a time there ("that is the whole run" of a lone card, and
            # "up/down for more/fewer cards" with nothing picked: a client trial)
            self.model.status = "One card moves at a time here: ↑/↓ take more of a Spider run."
            return
        if self.source is None:
            self.model.status = "Pick a pile first (its key); then up/down for more/fewer cards."
            return
        run = self.movable(self.source)
        current = self.count or run
        self.count = max(1, min(run, current + step))
        self.model.status = self.describe_selection()
        if self.count == current:
            # (at the end of the run it did nothing and said nothing: a new-user trial)
            self.model.status += (
                " That is the whole run." if step > 0 else " That is one card, the fewest."
            )

    def select(self, pile: int, count: int) -> bool:
        """Pick ``count`` cards from the top of ``pile`` (a click on a card): False if they
        do not move together."""
        state = self.model.state
        if state is None or self.model.phase != "racing" or self.model.role != "player":
            return False
        run = self.movable(pile)
        if count < 1 or count > run:
            self.model.status = f"Pile {pile + 1}: those cards do not move together" + (
                f" (only the top {plural(run, 'card')} {'does' if run == 1 else 'do'})."
                if run
                else "."
            )
            return False
        self.source, self.count = pile, (0 if count == run else count)
        self.confirm_resign = self.confirm_redeal = False
        self.model.status = self.describe_selection()
        return True

    def home(self, foundation: int) -> Move | None:
        """The picked pile to this foundation (a click on it)."""
        if self.source is None or self.model.state is None:
            return None
        dst = -1 if self.model.state.config.game == SPIDER else foundation
        return self._checked(Move(Kind.FOUNDATION, self.source, dst, 0))

    def describe_selection(self) -> str:
        state = self.model.state
        if state is None or self.source is None:
            return ""
        run = self.movable(self.source)
        n = self.count or run
        p = state.piles[self.source]
        shown = " ".join(cards.names(p[-n:]))
        extra = " (↑/↓ or the same pile again: more/fewer)" if run > 1 else ""
        home = ""
        if state.config.game != SPIDER or (n == 13 and state.config.game == SPIDER):
            home = ", or f for a foundation"  # (Spider: only a whole suit goes home)
        return f"Pile {self.source + 1}: {shown}{extra}. Now a target pile{home}."

    def _checked(self, move: Move) -> Move | None:
        state = self.model.state
        assert state is not None
        if self.pending:
            self.model.status = "Waiting for the server to answer your last move..."
            return None
        if move.kind == Kind.UNDO and self.model.room and self.model.room.settings.undo == "off":
            self.model.status = "Undo is off in this room."
            return None
        trial = state.copy()
        try:
            change = trial.apply(move)
            settled = move if move.kind == Kind.UNDO else change.move
        except IllegalMove as exc:
            if "fits both" in str(exc):
                self.model.status = f"{str(exc).split(':')[0]}: press k for its king foundation or a for its ace foundation."
                return None
            self.model.status = f"Not allowed: {exc}."
            self.source, self.count = None, 0
            return None
        self.source, self.count = None, 0
        self.model.status = "Undone." if move.kind == Kind.UNDO else format_move(settled, state)
        self.sent()
        return settled

    def sent(self) -> None:
        """A move went to the server: the next waits for its answer."""
        self.pending, self.pending_since, self.slow_said = True, time.monotonic(), False

    def slow_answer(self, now: float) -> None:
        """Say, once, that the answer to the move sent is late (:data:`SLOW_ANSWER_S`)."""
        if self.pending and not self.slow_said and now - self.pending_since >= SLOW_ANSWER_S:
            self.slow_said = True
            self.model.status = self.model.status.rstrip() + NO_ANSWER_YET

    def answered(self) -> None:
        self.pending = False
        if self.slow_said and self.model.status.endswith(NO_ANSWER_YET):
            self.model.status = self.model.status.removesuffix(NO_ANSWER_YET)
        self.slow_said = False


def auto_home(state: GameState) -> Move | None:
    """Spider: a complete K..A run on top of a pile, to send home (optional auto-removal); not
    when it would leave too few cards on the table for the deals to come (the player can still
    send it home with ``f``)."""
    if state.config.game != SPIDER or state.resigned or state.won or not home_keeps_deals(state):
        return None
    for m in state.legal_moves():
        if m.kind == Kind.FOUNDATION:
            return m
    return None


def settings_of(s: Settings | PublicSettings) -> Settings:
    """The settings a host would send to keep ``s`` as they are (a random deal)."""
    return Settings(
        game=s.game, options=dict(s.options), numbering=s.numbering, mode=s.mode,
        time_limit=s.time_limit, undo=s.undo, seats=s.seats, private=s.private,
        winnable=s.winnable,
    )  # fmt: skip


HOST_KEYS = frozenset({"s", "k", "g", "o", "v", "m", "t", "u", "+", "plus", "-", "minus", "p", "w"})
"""The lobby's keys that only the host's press does something with (start, remove, settings)."""


def host_settings(
    room: RoomInfo,
    key: str,
    kept: dict[str, tuple[dict[str, object], str]],
    base: Settings | None = None,
) -> Settings | str | None:
    """The room's settings after the host's lobby ``key`` (``g`` the game, ``o``/``v`` its
    options, ``m`` the mode, ``t`` the time limit, ``u`` undo, ``+``/``-`` the seats, ``p``
    privacy, ``w`` a certified deal); a sentence when the key changes nothing (a game with one
    option and ``v``); None for another key.  ``kept`` holds each game's options while another
    game is chosen, so that coming back to it with ``g`` finds them again.  ``base``: the
    settings last sent, when the room has not yet said it took them (keys pressed quickly,
    ``+ + +``, were each worked out from the same old settings: one seat more, not three)."""
    s: Settings | PublicSettings = base if base is not None else room.settings
    current = settings_of(s)
    games = list(OPTIONS)
    if key == "g":
        game = games[(games.index(s.game) + 1) % len(games)]
        kept[s.game] = (dict(s.options), s.numbering)
        options, numbering = kept.get(game, ({}, "pysolfc"))
        return current.model_copy(
            update={"game": game, "options": dict(options), "numbering": numbering}
        )
    if key in ("o", "v"):
        # o: the game's first option (Spider's suits, the build); v: its second (Spider's
        # relaxed deals, St. Helena's spaces)
        known = list(OPTIONS[s.game].items())
        which = 0 if key == "o" else 1
        if which >= len(known):
            return f"{TITLES[s.game]} has one option: o changes it."
        name, allowed = known[which]
        values = list(allowed)
        value = values[(values.index(s.options.get(name, values[0])) + 1) % len(values)]
        options = dict(s.options)
        options[name] = value
        GameConfig(s.game, options)
        return current.model_copy(update={"options": options})
    if key == "m":
        mode = "score" if s.mode == "first" else "first"
        limit = s.time_limit or (600 if mode == "score" else 0)
        return current.model_copy(update={"mode": mode, "time_limit": limit})
    if key == "t":
        choices = [0, 60, 180, 300, 600, 900, 1800]  # (1 min: only from the command line: a trial)
        if s.mode == "score":
            choices = choices[1:]
        # the next step up (from a limit of the command line's too: 2 min went to none), the
        # first after the last
        nxt = next((c for c in choices if c > s.time_limit), choices[0])
        return current.model_copy(update={"time_limit": nxt})
    if key == "u":
        return current.model_copy(update={"undo": "off" if s.undo == "safe" else "safe"})
    if key in ("+", "plus"):
        if s.seats >= 16:
            return "16 seats is the most a room has."
        return current.model_copy(update={"seats": s.seats + 1})
    if key in ("-", "minus"):
        players = sum(1 for m in room.members if m.role == "player")
        if s.seats <= max(2, players):
            return (
                "2 seats is the fewest a room has."
                if players <= 2
                else f"{players} players are seated: k removes one first."
            )
        return current.model_copy(update={"seats": s.seats - 1})
    if key == "p":
        return current.model_copy(update={"private": not s.private})
    if key == "w":
        return current.model_copy(update={"winnable": not s.winnable})
    return None
