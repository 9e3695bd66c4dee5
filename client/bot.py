"""The bot's network player: it joins a room and races with the strategy of
:mod:`client.strategy`, which plays only from what its seat may see.

Strategy (pure, no I/O; re-exported here)::

    move = choose_move(state, "normal", random.Random(1), memory)   # None: give up (resign)

Network player::

    await run_bot("ws://127.0.0.1:8765", "K7QM-X2PF", name="Bot 1", level="strong")

joins the room, gets ready, plays every race it is seated in on its own copy of its board, asks
for a rematch after each race (once a person has), comes back after a drop or a server restart,
and returns when kicked, left alone in the room, its seat lost, or after ``max_races``.  Cancelling the task leaves the room cleanly.  Its pace
is its level's (:data:`~client.strategy.common.PACE`: easy about 2.5 s a move, normal 1 s, strong
0.5 s, each randomized) unless ``think`` sets another.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import InvalidHandshake

from protocol import cards
from protocol.config import GameConfig
from protocol.game import GameState, state_class
from protocol.messages import (
    Joined,
    JoinRoom,
    Kicked,
    Leave,
    MoveCmd,
    Moved,
    Notice,
    Progress,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Ready,
    Rematch,
    Resume,
    RoomInfo,
    RoomUpdate,
    Snapshot,
    display_code,
    from_wire,
    to_wire,
)
from protocol.moves import RESIGN, Placed
from protocol.view import BoardView

from .net import TRANSIENT, Connection, Disconnected, ServerError
from .strategy import (
    DEFAULT_LEVEL,
    IDLE_LIMIT,
    LEVELS,
    MOVE_CAP,
    PACE,
    GameResult,
    Memory,
    Pace,
    Player,
    check_level,
    choose_move,
    masked,
    play_offline,
)

__all__ = [
    "DEFAULT_LEVEL",
    "IDLE_LIMIT",
    "LEVELS",
    "MOVE_CAP",
    "PACE",
    "Desync",
    "GameResult",
    "Memory",
    "Pacer",
    "Player",
    "apply_moved",
    "choose_move",
    "default_pace",
    "masked",
    "play_offline",
    "run_bot",
    "start_bots",
]

log = logging.getLogger("patience_race.bot")


def default_pace(level: str, think: float | None = None) -> Pace:
    """The pause between moves: the level's own (:data:`PACE`), or ``think`` seconds randomized
    by half either way when it is given (0: as fast as the server's rate allows)."""
    check_level(level)
    if think is None:
        return PACE[level]
    return Pace(max(0.0, think), 0.5)


# -- the network player -----------------------------------------------------------------------


class Desync(Exception):
    """The server's answer does not match the bot's own copy of its board."""


def apply_moved(state: GameState, moved: Moved) -> None:
    """Apply the server's ``moved`` answer to the seat's own copy, and fill in the cards shown.

    The shown cards must be exactly where the move, by the rules, shows cards; the outcome must
    agree too.  :class:`Desync` otherwise.
    """
    change = state.apply(from_wire(moved.move))
    mine = [(p.pile, p.index) for p in change.shown]
    theirs = [(p.pile, p.index) for p in moved.shown]
    if mine != theirs:
        raise Desync(f"the server showed cards at {theirs}, the rules say {mine}")
    for p in moved.shown:
        try:
            state.show(Placed(p.pile, p.index, cards.parse(p.card)))
        except ValueError as exc:
            raise Desync(str(exc)) from None
    if state.won != moved.won or state.score() != moved.score:
        raise Desync(
            f"the server says score {moved.score} won {moved.won}, "
            f"the bot's copy {state.score()} {state.won}"
        )


MAX_RESYNCS = 3
"""Boards taken again from the server in one race before the bot gives up."""


TEMPO_SPREAD = 0.15
"""A bot's own tempo is its level's pace up to this fraction faster or slower."""


class Pacer:
    """When to send the next move: a pause drawn from ``pace`` before each (a number: that many
    seconds, randomized by half either way), never faster than the server's rate allows
    (``welcome.rate`` and ``burst``, with a margin)."""

    def __init__(self, pace: Pace | float, rate: float, burst: int, rng: random.Random) -> None:
        if not isinstance(pace, Pace):
            pace = Pace(max(0.0, pace), 0.5)
        self.pace = pace
        self.think = max(0.0, pace.mean)
        self.rate = max(0.5, rate * 0.9)
        self.burst = max(1.0, burst / 2)
        self.tokens = self.burst
        self.at = time.monotonic()
        self.rng = rng
        self.tempo = rng.uniform(1 - TEMPO_SPREAD, 1 + TEMPO_SPREAD)
        """This bot's own speed against its level's pace, drawn once: bots of one level are not
        in lockstep (three strong bots playing the same moves finished within a second)."""
        self.hurry = False
        """No person is still racing (and no clock runs): play as fast as the server allows, so
        nobody waits on its pauses for the results (see :func:`people_done`)."""

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now

    def pause(self) -> float:
        """The person-like pause before the next move (0 when hurrying or pace 0)."""
        if self.think > 0 and not self.hurry:
            return max(0.0, self.pace.draw(self.rng) * self.tempo)
        return 0.0

    async def wait(self) -> None:
        await asyncio.sleep(self.pause())
        await self.take()

    async def take(self) -> None:
        """Wait for the server's rate budget to allow one more command."""
        self._refill()
        if self.tokens < 1:
            await asyncio.sleep((1 - self.tokens) / self.rate)
            self._refill()
        self.tokens -= 1

    async def backoff(self) -> None:
        """The server said ``rate_limited``: wait, and start again with an empty budget."""
        self.tokens = 0
        self.at = time.monotonic()
        await asyncio.sleep(2 / self.rate)


@dataclass
class _Seat:
    conn: Connection
    code: str
    name: str
    you: int
    token: str
    room: RoomInfo
    role: str
    player: Player
    pacer: Pacer
    max_races: int | None = None
    races: int = 0
    kicked: bool = False


async def run_bot(
    url: str,
    code: str,
    name: str = "Bot",
    level: str = DEFAULT_LEVEL,
    think: float | None = None,
    *,
    spectate_ok: bool = False,
    max_races: int | None = None,
    seed: int | None = None,
) -> None:
    """Join room ``code`` on the server at ``url`` as ``name`` and race there.

    Gets ready in the lobby, plays each race it has a seat in (its own copy of its board, moves
    paced like a person of its level, or ``think`` seconds apart, randomized by half either way,
    when given; 0 is as fast as the server's rate
    allows), sends ``rematch`` after each race, and returns when kicked, left alone in the room,
    or after ``max_races`` races.  When its connection drops or the server restarts it comes back
    and takes its seat again, as a person's client does (:func:`_reconnect`), and returns if it
    cannot.  If the room is
    racing when it joins (it is then a spectator), it leaves at once unless ``spectate_ok``, in
    which case it waits for the next race.  Cancelling the task leaves the room and closes the
    connection.  Server errors on joining (``room_not_found``, ``name_taken``...) are raised as
    :class:`~client.net.ServerError`.
    """
    pace = default_pace(level, think)
    rng = random.Random(seed)
    conn = Connection(url, client="patience-race-bot")
    seat: _Seat | None = None
    try:
        welcome = await conn.open()
        joined = await conn.request(JoinRoom(seq=0, code=code, name=name, bot=True))
        assert isinstance(joined, Joined)
        seat = _Seat(
            conn,
            code,
            name,
            joined.you,
            joined.token,
            joined.room,
            joined.role,
            Player(level, random.Random(rng.random())),
            Pacer(pace, welcome.rate, welcome.burst, rng),
            max_races,
        )
        log.info(
            "%s: in room %s%s",
            name,
            display_code(seat.room.code),
            "" if seat.role == "player" else ", watching until the next race",
        )
        if seat.role != "player" and not spectate_ok:
            log.info("%s: room %s is racing; not waiting as a spectator", name, code)
            return
        if seat.role == "player" and seat.room.state == "lobby":
            await _send(seat, Ready(seq=0))
        snap: Snapshot | None = None  # after a reconnection: where the seat is
        while True:
            try:
                if snap is not None:
                    if not await _room_changed(seat, snap.room) or not await _handle(seat, snap):
                        return
                    snap = None
                while True:
                    event = await seat.conn.next_event(timeout=None)
                    if isinstance(event, Notice):
                        raise _Restarting(event)
                    if not await _handle(seat, event):
                        return
            except _Restarting as restart:  # the server restarts: back after a while
                log.info("%s: %s", name, restart.notice.message)
                with contextlib.suppress(Exception):
                    await seat.conn.close()
                # back as soon as it is (retrying as people's clients do), not after retry_ms:
                # the race's clock runs again from the restart, for bots and people alike
                await asyncio.sleep(min(0.5, restart.notice.retry_ms / 1000))
            except Disconnected as exc:
                if seat.kicked or exc.code in GIVE_UP_CODES:
                    log.info("%s: %s", name, exc)
                    return
                log.info("%s: %s: reconnecting", name, exc)
            snap = await _reconnect(seat, url)
            if snap is None:
                return
    except Disconnected as exc:
        log.info("%s: %s", name, exc)
    finally:
        conn = seat.conn if seat is not None else conn
        if seat is not None and not seat.kicked and conn.closed is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.request(Leave(seq=0), timeout=1), 1.5)
        with contextlib.suppress(Exception):
            # bounded: a closing handshake the server is slow to answer held a quitting host's
            # program 5 s a bot (a verification trial)
            await conn.close(timeout=1)


RECONNECT_FOR = 1800.0
"""Seconds a bot keeps trying to take its seat back while the server does not answer (a drop, a
restart, an upgrade, a full disk being mended).  A restored room keeps every seat for the grace
period from the restart on, however long the server was down, so a bot that gave up after a
minute and a half lost its seat where the people came back (operator trial); a server that
answers that the seat is gone ends the tries at once."""
RECONNECT_DELAY_MAX = 5.0
"""The longest pause between two tries (from half a second, doubled each time)."""
GIVE_UP_CODES = frozenset({4400, 4429, 4409})
"""Close codes after which trying again would only be refused again (bad input, rate, a seat
resumed elsewhere)."""


class _Restarting(Exception):
    """The server said it is going away (``notice``): come back after ``retry_ms``."""

    def __init__(self, notice: Notice) -> None:
        super().__init__(notice.message)
        self.notice = notice


async def _reconnect(seat: _Seat, url: str) -> Snapshot | None:
    """A new connection that takes the seat back (``resume``), as a person's client does after a
    drop or a server restart: tried again and again (up to :data:`RECONNECT_DELAY_MAX` apart) for
    :data:`RECONNECT_FOR` seconds; None
    when the seat is gone (released, the room closed) or the server stays away."""
    loop = asyncio.get_running_loop()
    end = loop.time() + RECONNECT_FOR
    delay = 0.5
    while loop.time() < end:
        conn = Connection(url, client="patience-race-bot")
        try:
            await conn.open(open_timeout=5)
            snap = await conn.request(Resume(seq=0, code=seat.code, token=seat.token))
        except ServerError as exc:
            with contextlib.suppress(Exception):
                await conn.close()
            if exc.code not in TRANSIENT:
                log.info("%s: the seat could not be taken back: %s", seat.name, exc.message)
                return None
            await asyncio.sleep(delay)
            delay = min(RECONNECT_DELAY_MAX, delay * 2)
            continue
        except (OSError, Disconnected, TimeoutError, InvalidHandshake):
            # (InvalidHandshake: a proxy in front answers 502 while the server restarts)
            with contextlib.suppress(Exception):
                await conn.close()
            await asyncio.sleep(delay)
            delay = min(RECONNECT_DELAY_MAX, delay * 2)
            continue
        assert isinstance(snap, Snapshot)
        conn._seq = itertools.count(max(next(conn._seq), snap.next_seq))
        seat.conn = conn
        seat.room, seat.role = snap.room, snap.role
        log.info("%s: back in room %s", seat.name, seat.code)
        return snap
    log.info("%s: the server did not come back", seat.name)
    return None


def people_finished(room: RoomInfo, progress: list[Progress]) -> bool:
    """Every person racing has finished (won, resigned, stuck, left): the results wait on the
    bots alone."""
    bots = {m.id for m in room.members if m.bot}
    people = [p for p in progress if p.id not in bots]
    return bool(people) and all(p.status not in ("playing", "waiting") for p in people)


def people_done(room: RoomInfo, progress: list[Progress]) -> bool:
    """Every person racing has finished in a race with no time limit: the bots may hurry.  The
    moves a bot makes do not depend on its pace, so hurrying changes no score and no place
    among people; with a time limit it would, so it never hurries there."""
    return not room.settings.time_limit and people_finished(room, progress)


async def _send(seat: _Seat, command: Any) -> Any | None:
    """A command whose refusal does not matter (ready, rematch): None if refused."""
    if seat.pacer.think == 0:
        await seat.pacer.wait()
    try:
        return await seat.conn.request(command)
    except ServerError as exc:
        log.debug("%s: %s refused: %s", seat.name, type(command).__name__, exc)
        return None


async def _handle(seat: _Seat, event: Any) -> bool:
    """React to one event outside a race; False to stop."""
    if isinstance(event, RaceStart | Snapshot):
        if isinstance(event, Snapshot):
            seat.room = event.room
            seat.role = event.role
            racing = event.room.state == "racing"
        else:
            racing = True
        if event.board is not None and racing and seat.role == "player":
            # (its terminal went on saying "watching until the next race" through the race it
            # was playing: a new-user trial)
            log.info("%s: racing in room %s", seat.name, display_code(seat.room.code))
            over = await _race(seat, event.board)
            if over is False:
                return False
            if isinstance(over, RaceOver):
                return await _handle(seat, over)
    elif isinstance(event, RaceOver):
        seat.races += 1
        log.info("%s: race over in room %s", seat.name, display_code(seat.room.code))
        if seat.max_races is not None and seat.races >= seat.max_races:
            return False
        # no rematch yet: a bot asks for one only after a person has (room updates say who)
    elif isinstance(event, RoomUpdate):
        return await _room_changed(seat, event.room)
    elif isinstance(event, Kicked):
        log.info("%s: %s", seat.name, event.message)
        seat.kicked = True
        return False
    return True


async def _room_changed(seat: _Seat, room: RoomInfo) -> bool:
    seat.room = room
    me = next((m for m in room.members if m.id == seat.you), None)
    if me is None:
        return False
    seat.role = me.role
    people = [m for m in room.members if not m.bot]
    if not people and room.state in ("lobby", "results"):
        log.info("%s: no person left in room %s, leaving", seat.name, seat.code)
        return False
    asked = any(m.rematch for m in people)
    if room.state == "results" and me.role == "player" and not me.rematch and asked:
        # a person asked for a rematch: agree, after a moment, as a person would
        await asyncio.sleep(seat.pacer.rng.uniform(0.3, 1.2) if seat.pacer.think else 0)
        await _send(seat, Rematch(seq=0))
    if room.state == "lobby" and me.role == "player" and not me.ready:
        await _send(seat, Ready(seq=0))
    return True


def _config_for(seat: _Seat, board: BoardView) -> GameConfig:
    return GameConfig(board.game, dict(board.options), seat.room.settings.numbering)


def _quiet(future: asyncio.Future[Any]) -> None:
    """Retrieve a left-behind future's exception, so asyncio does not report it as lost."""
    if not future.cancelled():
        future.exception()


async def _race(seat: _Seat, board: BoardView) -> RaceOver | bool | None:
    """Play one race from ``board``.  Returns the RaceOver if it came during play, False to stop
    the bot (kicked), None when the seat's race is done and the results are still to come."""
    config = _config_for(seat, board)
    state = state_class(config).from_view(config, board)
    seat.player.new_game()
    seat.pacer.hurry = False
    conn = seat.conn
    resyncs = 0
    mark, still = _progress_mark(state), 0
    alone = False  # every person has finished: the results wait on the bots
    while not (state.won or state.resigned):
        # the pause before the move, watching what happens meanwhile: the end of the race (time
        # up), a kick, and whether any person still races (if none, the bot hurries)
        loop = asyncio.get_running_loop()
        end = loop.time() + seat.pacer.pause()
        # the bot thinks during its pause, as a person does: a long search shows only when it
        # takes longer than the pause (a thread keeps the connection's loop responsive)
        # (stuck, with an undo the server allows: a bot does not undo, it resigns)
        thinking = asyncio.ensure_future(
            asyncio.to_thread(seat.player.choose, state) if not state.stuck else _nothing()
        )
        thinking.add_done_callback(_quiet)  # left behind when the race ends meanwhile
        while True:
            if conn.events.empty():
                left = end - loop.time()
                if left <= 0 or seat.pacer.hurry:
                    break
                try:
                    item = await asyncio.wait_for(conn.events.get(), left)
                except TimeoutError:
                    break
            else:
                item = conn.events.get_nowait()
            if isinstance(item, Disconnected):
                conn.events.put_nowait(item)
                raise item
            if isinstance(item, Notice):
                raise _Restarting(item)
            if isinstance(item, RaceOver):
                return item
            if isinstance(item, Kicked):
                seat.kicked = True
                return False
            if isinstance(item, RoomUpdate):
                seat.room = item.room
            if isinstance(item, ProgressUpdate) and not seat.pacer.hurry:
                alone = people_finished(seat.room, item.players)
                seat.pacer.hurry = alone and not seat.room.settings.time_limit
                if seat.pacer.hurry:
                    log.info("%s: every person has finished: hurrying", seat.name)
        move = await thinking or RESIGN
        timed = bool(seat.room.settings.time_limit)
        if (seat.pacer.hurry and still >= HURRY_IDLE) or (alone and timed and still >= PACED_IDLE):
            # every person is done and the results wait on the bots: no card shown, deal or suit
            # home for this long is shuffling (it went on to the 1,500-move cap: a minute more;
            # with a time limit, at its pace, to the end of the time: ten minutes and more)
            log.info(
                "%s: nothing more to gain in %d moves: resigning so that the results come",
                seat.name,
                still,
            )
            move = RESIGN
        await seat.pacer.take()
        if resyncs > MAX_RESYNCS:
            move = RESIGN  # something is wrong with this board: give up rather than loop
        try:
            answer = await conn.request(MoveCmd(seq=0, move=to_wire(move)))
        except ServerError as exc:
            if exc.code == "rate_limited":
                await seat.pacer.backoff()
                continue
            if exc.code in ("race_not_running", "player_done", "not_a_player", "not_in_room"):
                return None
            log.warning("%s: move %s refused (%s): taking the board again", seat.name, move, exc)
            resyncs += 1
            fresh = await _resync(seat)
            if fresh is None:
                return None
            state = fresh
            continue
        assert isinstance(answer, Moved)
        if answer.stuck and not answer.can_undo:
            return None  # no move left, and no undo: the server has ended this seat's race
        try:
            apply_moved(state, answer)
            now_mark = _progress_mark(state)
            mark, still = now_mark, (still + 1 if now_mark == mark else 0)
        except Desync as exc:
            log.warning("%s: %s: taking the board again", seat.name, exc)
            resyncs += 1
            fresh = await _resync(seat)
            if fresh is None:
                return None
            state = fresh
    return None


async def _nothing() -> None:
    return None


HURRY_IDLE = 150
"""Moves without a card shown, a deal, a redeal or a card home after which a bot that hurries
(every person in the race is done) resigns."""

PACED_IDLE = 40
"""The same in a race with a time limit, where a bot keeps its pace when every person is done
(a second or more a move): 40 such moves are a minute or two of shuffling, not ten."""


def _progress_mark(state: GameState) -> tuple[int, int, int, int]:
    """What changes only when a game makes progress (as the strategy's memory counts it)."""
    return (
        sum(state.down),
        len(state.stock),
        sum(map(len, state.foundations)),
        state.redeals_left,
    )


async def _resync(seat: _Seat) -> GameState | None:
    """The seat's board as the server has it (``resume`` on this same connection)."""
    try:
        snap = await seat.conn.request(Resume(seq=0, code=seat.code, token=seat.token))
    except ServerError:
        return None
    if not isinstance(snap, Snapshot) or snap.board is None or snap.room.state != "racing":
        return None
    seat.room = snap.room
    seat.player.new_game()
    config = _config_for(seat, snap.board)
    return state_class(config).from_view(config, snap.board)


def start_bots(
    url: str,
    code: str,
    count: int,
    level: str = DEFAULT_LEVEL,
    think: float | None = None,
    *,
    first: int = 1,
    **kwargs: Any,
) -> list[asyncio.Task[None]]:
    """Seat ``count`` bots named ``Bot {first}``, ``Bot {first+1}``... in room ``code``, as tasks
    of the running loop (cancel them to take them away)."""
    return [
        asyncio.create_task(
            run_bot(url, code, name=f"Bot {i}", level=level, think=think, **kwargs),
            name=f"bot-{i}",
        )
        for i in range(first, first + count)
    ]
