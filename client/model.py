"""The client's view state as plain code: what the player sees and what their keys mean.

:class:`RaceModel` takes server events (``apply``) and keeps the room, the player's own board (a
:class:`~protocol.game.GameState` built from what they may see), everyone's progress and the
results, and checks the revealed deal against every card it was shown.  :class:`Keys` turns key
presses into moves, checking each against the local rules first so an illegal move is explained
and never sent.  Nothing here does I/O; ``client.app`` draws it and ``client.session`` talks to
the server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from protocol import cards
from protocol.config import SPIDER, GameConfig
from protocol.fairness import Witness, verify
from protocol.game import GameState, state_class
from protocol.messages import (
    Countdown,
    Error,
    Event,
    Joined,
    Kicked,
    Moved,
    Notice,
    Progress,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Reveal,
    RoomInfo,
    RoomUpdate,
    Snapshot,
    Standing,
    from_wire,
)
from protocol.moves import IllegalMove, Kind, Move, Placed
from protocol.notation import format_move

PILE_KEYS = "1234567890-="
"""Pile keys: 1 to 9, then 0 for pile 10, - for 11 and = for 12."""


@dataclass
class RaceModel:
    name: str = ""
    you: int | None = None
    role: str = "player"
    token: str | None = None
    room: RoomInfo | None = None
    phase: str = "connecting"
    """connecting, lobby, countdown, racing, results, kicked, gone"""
    countdown_end: float | None = None
    race_id: str | None = None
    commitment: str | None = None
    config: GameConfig | None = None
    state: GameState | None = None
    started: float | None = None
    """Local monotonic time the race started (elapsed time is shown from it)."""
    time_limit_ms: int | None = None
    progress: list[Progress] = field(default_factory=list)
    standings: list[Standing] | None = None
    reveal: Reveal | None = None
    verdict: str | None = None
    verified: bool | None = None
    status: str = ""
    witness: Witness = field(default_factory=Witness)
    witness_complete: bool = True
    needs_resync: bool = False

    # -- events ---------------------------------------------------------------------------

    def apply(self, event: Event, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        handler = getattr(self, f"_on_{event.type}", None)  # type: ignore[attr-defined]
        if handler is not None:
            handler(event, now)

    def _on_joined(self, e: Joined, now: float) -> None:
        self.you, self.role, self.token = e.you, e.role, e.token
        self._set_room(e.room)

    def _on_room(self, e: RoomUpdate, now: float) -> None:
        self._set_room(e.room)

    def _set_room(self, room: RoomInfo) -> None:
        self.room = room
        me = self.me_member(room)
        if me is not None:
            self.role = me.role
        if room.state == "lobby" and self.phase in ("connecting", "results", "lobby"):
            if self.phase == "results":
                self._reset_race()
            self.phase = "lobby"

    def me_member(self, room: RoomInfo | None = None):  # type: ignore[no-untyped-def]
        room = room or self.room
        if room is None:
            return None
        return next((m for m in room.members if m.id == self.you), None)

    def _reset_race(self) -> None:
        self.state = None
        self.progress = []
        self.standings = None
        self.reveal = None
        self.verdict = None
        self.verified = None
        self.witness = Witness()
        self.witness_complete = True
        self.started = None
        self.time_limit_ms = None
        self.countdown_end = None

    def _on_countdown(self, e: Countdown, now: float) -> None:
        self._reset_race()
        self.phase = "countdown"
        self.countdown_end = now + e.ms / 1000
        self.race_id = e.race_id
        self.commitment = e.commitment
        self.status = ""

    def _on_race_start(self, e: RaceStart, now: float) -> None:
        self.phase = "racing"
        self.race_id = e.race_id
        self.commitment = e.commitment
        self.started = now
        self.time_limit_ms = e.time_limit_ms
        if e.board is not None:
            self.config = GameConfig(e.board.game, e.board.options)
            self.state = state_class(self.config).from_view(self.config, e.board)
            self.witness = Witness(start=e.board)
        else:
            self.state = None
        self.status = "Go!"

    def _on_moved(self, e: Moved, now: float) -> None:
        if self.state is None:
            return
        move = from_wire(e.move)
        try:
            if move.kind == Kind.UNDO:
                self.state.apply(move)
                applied = Move(Kind.UNDO)
            else:
                applied = self.state.apply(move).move
            for s in e.shown:
                self.state.show(Placed(s.pile, s.index, cards.parse(s.card)))
        except (IllegalMove, ValueError):
            # our copy and the server's disagree (after a reconnection): ask for a snapshot
            self.needs_resync = True
            self.witness_complete = False
            return
        if self.witness_complete:
            self.witness.saw(
                applied, [Placed(s.pile, s.index, cards.parse(s.card)) for s in e.shown]
            )

    def _on_progress(self, e: ProgressUpdate, now: float) -> None:
        self.progress = e.players
        if self.started is not None and self.phase == "racing":
            self.started = now - e.elapsed_ms / 1000  # follow the server's clock

    def _on_race_over(self, e: RaceOver, now: float) -> None:
        self.phase = "results"
        self.standings = e.standings
        self.reveal = e.reveal
        self._verify()

    def _on_snapshot(self, e: Snapshot, now: float) -> None:
        self.you, self.role = e.you, e.role
        self.room = e.room
        self.progress = e.progress
        self.needs_resync = False
        if e.board is not None:
            self.config = GameConfig(e.board.game, e.board.options)
            fresh = state_class(self.config).from_view(self.config, e.board)
            if self.state is None or self.state.view().tableau != e.board.tableau:
                if self.state is not None:
                    self.witness_complete = False
                self.state = fresh
        if e.elapsed_ms is not None:
            self.started = now - e.elapsed_ms / 1000
        self.time_limit_ms = e.time_limit_ms
        state = e.room.state
        if state == "countdown":
            self.countdown_end = now + (e.countdown_ms or 0) / 1000
        self.race_id = e.room.race_id
        self.commitment = e.room.commitment
        self.phase = state
        if state == "results" and e.standings is not None:
            self.standings = e.standings
            self.reveal = e.reveal
            self._verify()

    def _on_kicked(self, e: Kicked, now: float) -> None:
        self.phase = "kicked"
        self.status = e.message

    def _on_notice(self, e: Notice, now: float) -> None:
        self.status = e.message

    def _on_error(self, e: Error, now: float) -> None:
        self.status = e.message

    # -- fairness ------------------------------------------------------------------------------

    def _verify(self) -> None:
        reveal = self.reveal
        if reveal is None:
            return
        config = GameConfig(reveal.game, reveal.options, reveal.numbering)
        claimed = self.commitment or reveal.commitment
        witness = self.witness if self.witness_complete else Witness(start=self.witness.start)
        problems = verify(config, reveal.number, reveal.salt, claimed, witness, reveal.solution)
        if self.role != "player" or self.witness.start is None:
            # a spectator saw no cards: only the commitment can be checked
            problems = [p for p in problems if "commitment" in p]
        self.verified = not problems
        if problems:
            self.verdict = "WARNING: the revealed deal does not match: " + "; ".join(problems)
        else:
            what = (
                "every card you were shown" if self.witness.start is not None else "the commitment"
            )
            partial = "" if self.witness_complete else " (up to your reconnection)"
            self.verdict = f"deal verified: #{reveal.number} matches {what}{partial}"

    # -- reading ----------------------------------------------------------------------------------

    def elapsed_ms(self, now: float | None = None) -> int:
        if self.started is None:
            return 0
        now = time.monotonic() if now is None else now
        return max(0, int((now - self.started) * 1000))

    def countdown_left_ms(self, now: float | None = None) -> int:
        if self.countdown_end is None:
            return 0
        now = time.monotonic() if now is None else now
        return max(0, int((self.countdown_end - now) * 1000))

    def is_host(self) -> bool:
        me = self.me_member()
        return bool(me and me.host)

    def my_progress(self) -> Progress | None:
        return next((p for p in self.progress if p.id == self.you), None)


@dataclass
class Keys:
    """Pile keys pick a source then a target; the same pile again takes one card fewer."""

    model: RaceModel
    source: int | None = None
    count: int = 0
    """0: the unit chosen as ``3>7`` would; else exactly this many cards."""
    pending: bool = False
    """A move is on its way to the server: the next waits for its answer."""
    confirm_resign: bool = False

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
        from protocol.spider import run_length

        p = state.piles[pile]
        return run_length(p, len(p) - state.down[pile])

    def press(self, key: str) -> Move | None:
        """The move a key asks for, checked against the rules (None: nothing to send yet)."""
        state = self.model.state
        if state is None or self.model.phase != "racing" or self.model.role != "player":
            return None
        if key != "x":
            self.confirm_resign = False
        if key == "escape":
            self.source, self.count = None, 0
            self.model.status = ""
            return None
        if key == "d":
            return self._checked(Move(Kind.DEAL))
        if key == "r":
            return self._checked(Move(Kind.REDEAL))
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
                self.model.status = "Pick a pile first (its key), then f to send it home."
                return None
            dst = -1
            if key in ("k", "a") and state.config.game != SPIDER:
                top = state.piles[self.source][-1] if state.piles[self.source] else None
                dst = -1 if top is None else cards.suit(top) + (0 if key == "k" else 4)
            move = Move(Kind.FOUNDATION, self.source, dst, 0)
            return self._checked(move)
        pile = self.pile_of(key)
        if pile is None:
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

    def describe_selection(self) -> str:
        state = self.model.state
        if state is None or self.source is None:
            return ""
        run = self.movable(self.source)
        n = self.count or run
        p = state.piles[self.source]
        shown = " ".join(cards.names(p[-n:]))
        extra = " (press it again for fewer)" if run > 1 else ""
        return f"Pile {self.source + 1}: {shown}{extra}. Now a target pile, or f for a foundation."

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
        self.model.status = "" if move.kind == Kind.UNDO else format_move(settled, state)
        self.pending = True
        return settled

    def answered(self) -> None:
        self.pending = False


def auto_home(state: GameState) -> Move | None:
    """Spider: a complete K..A run on top of a pile, to send home (optional auto-removal)."""
    if state.config.game != SPIDER or state.resigned or state.won:
        return None
    for m in state.legal_moves():
        if m.kind == Kind.FOUNDATION:
            return m
    return None
