"""One race: every seat's own copy of the same deal, checked by the engine.  No I/O, no clock:
the caller passes ``now`` (seconds, monotonic) to everything that depends on time."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from protocol import cards
from protocol.config import PYSOLFC, SPIDER, GameConfig, random_number
from protocol.deals import deal
from protocol.fairness import commitment
from protocol.game import GameState, state_class
from protocol.messages import (
    EndReason,
    ErrorCode,
    PlayerStatus,
    Progress,
    Reveal,
    Shown,
    Standing,
    WireMove,
    from_wire,
    place_key,
    to_wire,
)
from protocol.moves import IllegalMove, Kind
from protocol.notation import format_move, parse_move
from protocol.spider import SUIT_LENGTH, run_length

MAX_ACTIONS = 5000
"""Moves and undos one player may make in one race (resigning is always allowed): a race's
record and stored moves stay bounded (a move and its undo, over and over, never ended; people
make a few hundred, the bots give up by 1,500)."""


class RaceError(Exception):
    """A move the race refuses: ``code`` is the protocol error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Seat:
    id: int
    name: str
    state: GameState
    status: PlayerStatus = "playing"
    connected: bool = True
    moves: list[str] = field(default_factory=list)
    times_ms: list[int] = field(default_factory=list)
    finish_ms: int | None = None
    away_ms: int | None = None
    """Race time when the player went away (while away): a seat released after the grace is
    out of the race from then, after a server restart too."""
    score: int = 0
    score_ms: int = 0
    score2: int | None = None
    _row: tuple[GameState, tuple[object, ...], Progress] | None = field(default=None, repr=False)
    """The last progress row built, with what it was built from (see :meth:`Race.row`)."""


@dataclass
class MoveResult:
    move: WireMove
    undone: WireMove | None
    shown: list[Shown]
    notation: str
    index: int
    """Position of the move in the seat's move list."""
    t_ms: int


class Race:
    """A race from its start: seats, moves, progress, end and standings."""

    def __init__(
        self,
        race_id: str,
        config: GameConfig,
        players: list[tuple[int, str]],
        *,
        mode: str = "first",
        time_limit_s: int = 0,
        undo: str = "safe",
        number: int | None = None,
        salt: str | None = None,
        solution: list[str] | None = None,
    ) -> None:
        self.race_id = race_id
        self.config = config
        self.mode = mode
        self.time_limit_s = time_limit_s
        self.undo = undo
        self.number = random_number(config) if number is None else config.check_number(number)
        self.salt = salt or secrets.token_hex(16)
        self.solution = solution
        """A deal certified winnable: the solver's solution, committed and revealed with it."""
        self.commitment = commitment(
            config.game, config.options, config.numbering, self.number, self.salt, solution
        )
        d = deal(config, self.number)
        cls = state_class(config)
        self.seats: dict[int, Seat] = {
            pid: Seat(pid, name, cls.from_deal(d)) for pid, name in players
        }
        for seat in self.seats.values():
            seat.score2 = seat.state.score2()
        self.started_at: float | None = None
        """Monotonic time of the start (None during the countdown)."""
        self.wall_started: float | None = None
        """Unix time of the start, for the public record."""
        self.ended_at: float | None = None
        self.end_reason: EndReason | None = None
        self.paused_ms = 0
        """Time the server was down during this race (restarts): charged to nobody."""
        self.idle_due = 0.0
        """Monotonic time before which no seat can have been idle too long (:meth:`idle_seats`)."""

    # -- time ------------------------------------------------------------------------------

    def start(self, now: float) -> None:
        self.started_at = now

    def elapsed_ms(self, now: float) -> int:
        if self.started_at is None:
            return 0
        end = self.ended_at if self.ended_at is not None else now
        return max(0, int((end - self.started_at) * 1000))

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.ended_at is None

    @property
    def deadline(self) -> float | None:
        if self.started_at is None or not self.time_limit_s:
            return None
        return self.started_at + self.time_limit_s

    # -- moves ---------------------------------------------------------------------------

    def move(self, seat_id: int, wire: WireMove, now: float) -> MoveResult:
        seat = self.seats.get(seat_id)
        if seat is None:
            raise RaceError("not_a_player", "you are not playing in this race")
        if not self.running:
            when = "has not started" if self.started_at is None else "is over"
            raise RaceError("race_not_running", f"the race {when}")
        deadline = self.deadline
        if deadline is not None and now >= deadline:
            # the tick ends the race a moment later: a move after the bell never counts
            raise RaceError("race_not_running", "the race is over: the time is up")
        if seat.status != "playing":
            done = {
                "won": "you have won",
                "resigned": "you have resigned",
                "stuck": "you are stuck: no move left",
                # (one who left is gone from the room: only one out for making no move, still
                # here, can be told this: "you left it" was untrue to them, a review)
                "left": "you are out of it: no move for too long",
                # (a seat released after the grace: "you have disconnected" read oddly to one
                # connected again and watching: a bad-network trial)
                "disconnected": "you were away too long and your seat was released",
            }.get(seat.status, f"you have {seat.status}")
            raise RaceError("player_done", f"your race is over: {done}")
        move = from_wire(wire)
        if len(seat.moves) >= MAX_ACTIONS and move.kind != Kind.RESIGN:
            raise RaceError(
                "illegal_move",
                f"a player's race holds at most {MAX_ACTIONS:,} moves and undos: "
                "resign (x x) or wait for the others",
            )
        if move.kind == Kind.UNDO and self.undo == "off":
            raise RaceError("undo_off", "undo is off in this room")
        # the position before, for the move's shortest notation there (docs/records.md: records
        # read as people write moves): only moves between piles and home have a shorter one
        before = seat.state.copy() if move.kind in (Kind.TABLEAU, Kind.FOUNDATION) else None
        try:
            change = seat.state.apply(move)
        except IllegalMove as exc:
            raise RaceError("illegal_move", str(exc)) from None
        t_ms = self.elapsed_ms(now)
        notation = format_move(change.move, before, game=self.config.game)
        self._count(seat, notation, t_ms)
        return MoveResult(
            move=to_wire(change.move),
            undone=to_wire(change.undone) if change.undone else None,
            shown=[
                Shown(pile=p.pile, index=p.index, card=cards.name(p.card)) for p in change.shown
            ],
            notation=notation,
            index=len(seat.moves) - 1,
            t_ms=t_ms,
        )

    def _count(self, seat: Seat, notation: str, t_ms: int, last: bool = True) -> None:
        """A move applied to ``seat``'s state: its record, score and status follow (the status
        only on its ``last`` move: won, resigned and stuck end a player's race)."""
        state = seat.state
        seat.moves.append(notation)
        seat.times_ms.append(t_ms)
        score, seat.score2 = state.scores()
        if score != seat.score:
            seat.score = score
            seat.score_ms = t_ms
        if not last:
            return
        if state.won:
            seat.status = "won"
        elif state.resigned:
            seat.status = "resigned"
        elif state.stuck and not (self.undo != "off" and state.can_undo):
            # (with undo allowed, a move that left none can be taken back: not out yet)
            seat.status = "stuck"
        elif state.stuck:
            self.idle_due = 0.0  # its shorter wait (stuck_undo_s) starts now: look again
        if seat.status != "playing" and seat.finish_ms is None:
            seat.finish_ms = t_ms

    def replay(self, seat_id: int, notation: str, t_ms: int, last: bool = True) -> None:
        """A move read back from storage after a restart, applied as it was when played (its
        notation is the one written then).  :class:`IllegalMove` or :class:`NotationError` if
        it does not apply; ``last``: the seat's last stored move, after which its status counts."""
        seat = self.seats[seat_id]
        seat.state.apply(parse_move(notation))
        self._count(seat, notation, t_ms, last)

    def set_connected(self, seat_id: int, connected: bool, now: float | None = None) -> None:
        """The seat's player came back, or went away (at ``now``: when, in race time)."""
        seat = self.seats.get(seat_id)
        if seat is None:
            return
        seat.connected = connected
        if connected:
            seat.away_ms = None
            self.idle_due = 0.0  # back: its idle time counts again, look at once
        elif now is not None and seat.away_ms is None:
            seat.away_ms = self.elapsed_ms(now)

    def drop(self, seat_id: int, status: PlayerStatus, now: float) -> None:
        """A player who left or stayed away past the grace period: their score stands.  One
        away past the grace is out from when they went away (the results showed the drop
        plus the grace period: a race-night trial)."""
        seat = self.seats.get(seat_id)
        if seat is None or seat.status != "playing":
            return
        seat.status = status
        at = self.elapsed_ms(now)
        if status == "disconnected" and seat.away_ms is not None:
            at = min(at, seat.away_ms)
        seat.finish_ms = at

    def idle_seats(self, now: float, limit_s: float, stuck_s: float = 0.0) -> list[int]:
        """The seats still playing whose last move (or the start) is ``limit_s`` or more of race
        time ago (``stuck_s`` for a seat left with no move, only an undo), the time the server
        was down not counted; sets :attr:`idle_due` to when the next one can be due (moves only
        push it later).  0: no such limit."""
        if not self.running or (limit_s <= 0 and stuck_s <= 0):
            self.idle_due = float("inf")
            return []
        elapsed = self.elapsed_ms(now)
        idle: list[int] = []
        due_ms = None
        for seat in self.seats.values():
            if seat.status != "playing" or not seat.connected:
                continue  # a seat away is the grace period's (its clock goes on when back)
            limit = stuck_s if stuck_s > 0 and seat.state.stuck else limit_s
            if limit <= 0:
                continue
            at = (seat.times_ms[-1] if seat.times_ms else 0) + int(limit * 1000)
            if elapsed >= at:
                idle.append(seat.id)
            elif due_ms is None or at < due_ms:
                due_ms = at
        self.idle_due = float("inf") if due_ms is None else now + (due_ms - elapsed) / 1000
        return idle

    # -- the end ------------------------------------------------------------------------

    def check_end(self, now: float) -> EndReason | None:
        """Why the race ends now (``all_done``, ``time_up``), or None while it goes on."""
        if not self.running:
            return None
        if all(s.status != "playing" for s in self.seats.values()):
            return "all_done"
        deadline = self.deadline
        if deadline is not None and now >= deadline:
            return "time_up"
        return None

    def end(self, now: float, reason: EndReason) -> None:
        if self.ended_at is None:
            if self.started_at is None:
                self.started_at = now
            self.ended_at = now
            deadline = self.deadline
            if reason == "time_up" and deadline is not None:
                self.ended_at = deadline
            self.end_reason = reason

    def standings(self) -> list[Standing]:
        def key(s: Seat) -> tuple[int, int, int, int]:
            return place_key(self.mode, s.status, s.finish_ms, s.score, s.score_ms, s.id)

        ordered = sorted(self.seats.values(), key=key)
        return [
            Standing(
                rank=i + 1,
                id=s.id,
                name=s.name,
                status=s.status,
                score=s.score,
                score2=s.state.score2(),
                finish_ms=s.finish_ms,
                score_ms=s.score_ms,
                moves=s.state.moves,
                undos=s.state.undos,
            )
            for i, s in enumerate(ordered)
        ]

    def progress(self) -> list[Progress]:
        return [self.row(s) for s in self.seats.values()]

    def row(self, s: Seat) -> Progress:
        """The seat's progress row, rebuilt only when something in it can have changed: it is
        sent to the whole room several times a second, while a seat changes once a move."""
        st = s.state
        key = (st.moves, st.undos, s.status, s.connected, s.finish_ms, s.score, s.score_ms)
        cached = s._row
        if cached is not None and cached[0] is st and cached[1] == key:
            return cached[2]
        row = self._progress(s)
        s._row = (st, key, row)
        return row

    def _progress(self, s: Seat) -> Progress:
        st = s.state
        if self.config.game == SPIDER:
            turned = 44 - sum(st.down)
            in_tableau = sum(
                1
                for p, d in zip(st.piles, st.down, strict=True)
                if len(p) - d >= SUIT_LENGTH
                and p[-1] % 13 == 0
                and run_length(p, SUIT_LENGTH) == SUIT_LENGTH
            )
            suits = in_tableau + sum(1 for f in st.foundations if f)
            foundation_cards = 13 * sum(1 for f in st.foundations if f)
        else:
            turned = 84 - len(st.stock) if self.config.game == "louis" else 0
            suits = sum(1 for f in st.foundations if len(f) == 13)
            foundation_cards = sum(len(f) for f in st.foundations) - 8
        return Progress(
            id=s.id,
            name=s.name,
            status=s.status,
            score=s.score,
            score2=st.score2(),
            turned=turned,
            suits=suits,
            foundation_cards=foundation_cards,
            moves=st.moves,
            undos=st.undos,
            connected=s.connected,
            finish_ms=s.finish_ms,
            score_ms=s.score_ms,
        )

    def reveal(self) -> Reveal:
        """Only after the end: the number and salt that prove the commitment."""
        if self.ended_at is None:
            raise RuntimeError("the deal is revealed only when the race is over")
        return Reveal(
            game=self.config.game,  # type: ignore[arg-type]
            options=dict(self.config.options),
            numbering=self.config.numbering,  # type: ignore[arg-type]
            number=self.number,
            salt=self.salt,
            commitment=self.commitment,
            solution=self.solution,
        )


__all__ = [
    "PYSOLFC",
    "MoveResult",
    "Race",
    "RaceError",
    "Seat",
    "from_wire",
    "random_number",
    "to_wire",
]
