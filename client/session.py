"""The network side of a player's client: one room, its events, and reconnection.

A :class:`Session` feeds every server event to its :class:`~client.model.RaceModel`, sends the
player's commands, and when the connection drops, says so, reconnects with backoff and resumes the
seat with its token, redrawing from the snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import ssl
import time
from collections.abc import Callable

from pydantic import ValidationError
from websockets.exceptions import InvalidHandshake

from protocol.messages import (
    Command,
    CreateRoom,
    Error,
    Event,
    GetRace,
    Joined,
    JoinRoom,
    Kicked,
    Leave,
    MoveCmd,
    Notice,
    RaceRecord,
    RaceRecordMsg,
    Ready,
    Rematch,
    Resume,
    RoomInfo,
    RoomUpdate,
    Settings,
    Snapshot,
    Start,
    UpdateSettings,
    display_code,
    to_wire,
)
from protocol.moves import Move

from .model import RaceModel
from .net import DEFAULT_URL, TRANSIENT, Connection, Disconnected, ServerError
from .seats import (
    HeldSeat,
    SeatsError,
    claim_seat,
    forget_gone,
    forget_seat,
    hold_seat,
    name_key,
    room_key,
    save_seat,
    saved_seat,
)
from .terminal import program
from .text import plural, safe, sentence

log = logging.getLogger("patience_race.client")

FINAL_CLOSES = {4409, 4426}
"""Close codes after which reconnecting would not help."""

CLOSE_RESTART = 1012
RESTARTING = "Server restarting: reconnecting..."
LOST = "Connection lost: reconnecting..."
STALLED = "No answer from the server: reconnecting..."
RESTART_RETRY_S = 1.0
"""How often a client tries again while its server restarts (any other loss: 0.5 s doubling
to :data:`RETRY_MAX_S`)."""
RETRY_MAX_S = 5.0
"""The longest wait between tries: a room nobody is connected to closes after 30 s, and at
10 s apart a host's fifth try came 15 s after a drop of 9 s."""
RESTART_QUICK_S = 120.0
"""For how long: a server not back by then is retried as any other loss, unless a race (or its
countdown) is on: its clock goes on the moment the server is back, and after a restart of more
than two minutes the players who waited 5 s between tries lost seconds to one who did not (a
race-night trial)."""


def retry_wait(backoff: float, restarting: bool, racing: bool, down_s: float) -> float:
    """Seconds before the next try to reconnect: ``backoff`` (0.5 s doubling to
    :data:`RETRY_MAX_S`), but every :data:`RESTART_RETRY_S` while the server restarts, for
    :data:`RESTART_QUICK_S`, or :data:`RESTART_RACING_S` while a race is on."""
    quick = restarting and down_s < (RESTART_RACING_S if racing else RESTART_QUICK_S)
    return min(backoff, RESTART_RETRY_S) if quick else backoff


RESTART_RACING_S = 900.0
"""...and during a race, for this long (a node that never comes back is not knocked on every
second for ever)."""

RELEASED = "You were away too long: your seat in this race was released; you are watching."
SAT_OUT = "Welcome back: this race started without you; you watch it and race the next one."


def join_command(code: str, url: str, embedded: bool = False) -> str:
    """``patience-race join CODE``, with ``--server URL`` unless the URL is the default one (a
    server inside this process listens on a port of its own: always named)."""
    shown = code[:4] + "-" + code[4:] if len(code) == 8 else code
    if embedded or url != DEFAULT_URL:
        return f"{program()} join {shown} --server {url}"
    return f"{program()} join {shown}"


def released_again(role: str, state: str) -> str:
    """What one whose seat was released after the grace is told, joined again as ``role`` in a
    room in ``state``."""
    if role != "spectator":
        return f"Your old seat was released: you joined again as a new {role}."
    # (it said "a new spectator" and no more: will they race again? a bad-network trial)
    if state == "lobby":  # every seat taken: not in the race about to start
        return (
            "Your old seat was released: you joined again; every seat is taken, so you watch "
            "(a seat next race if one is free)."
        )
    return (
        "Your old seat was released: you joined again, and watch until the next race "
        "(a seat then if one is free)."
    )


class SeatInUse(Exception):
    """The saved seat asked for is held by another running client of this account."""


class Session:
    def __init__(
        self, url: str, model: RaceModel, on_change: Callable[[], None] = lambda: None
    ) -> None:
        self.url = url
        self.model = model
        self.on_change = on_change
        self.conn: Connection | None = None
        self.code: str | None = None
        self.node_url: str | None = None
        """The cluster node holding the room, once a redirect led there: reconnections go
        straight to it (seats are still saved under :attr:`url`)."""
        self.seqs = itertools.count(int(time.time() * 1000))
        self.connected = False
        self.join_seq: int | None = None
        """The seq of our last join: a room not in its lobby answers it twice (joined, then
        its snapshot), and only that snapshot is taken from the events."""
        self.stopped = False
        self._runner: asyncio.Task[None] | None = None
        self.remember = True
        """Save the seat on disk (and look it up): off for a server inside this process."""
        self.restarting = False
        """The server said it is restarting (a ``notice`` or a 1012 close)."""
        self.seat_problem: str | None = None
        """Why the seat could not be saved on disk (or the saved seats read): quitting then
        loses it, and the farewell says so."""
        self._held: HeldSeat | None = None
        """This client's mark on the seat it sits in, so that another terminal of this account
        does not take it (:func:`client.seats.hold_seat`)."""
        self._members: set[int] = set()
        """The member ids of the room as last seen (a seat saved for one gone is forgotten)."""
        self.stalled = False
        """The connection was given up for want of an answer (:meth:`_drop`), not lost."""
        self.answer_timeout = 10.0
        """Seconds a command waits for its answer before the link counts as stalled."""
        self.unsettled: tuple[int, int, bool] | None = None
        """A move sent whose answer never came (the link stalled or dropped): the board's
        moves and undos when it was sent, to tell from the snapshot after the reconnection
        whether it was made."""
        self.typed_dropped = 0
        """Keys typed after a move left without an answer, not sent: said once back."""
        self.unsettled_key: tuple[Ready | Rematch | Start, str] | None = None
        """A ready, rematch or start sent whose answer never came, and the room's state then:
        the snapshot says whether it was done (it went unmentioned, the screen saying you were
        ready when you were not: a bad-network trial)."""

    # -- set-up ---------------------------------------------------------------------------

    async def connect(self) -> None:
        self.conn = Connection(self.node_url or self.url, seqs=self.seqs)
        await self.conn.open()
        self.connected = True
        welcome = self.conn.welcome
        if welcome is not None and welcome.grace_ms is not None:
            self.model.grace_s = welcome.grace_ms / 1000

    async def create(self, name: str, settings: Settings) -> Joined:
        joined = await self._request(CreateRoom(seq=0, name=name, settings=settings))
        assert isinstance(joined, Joined)
        self._joined(joined, name)
        self._say_seat_problem()
        return joined

    async def join(self, code: str, name: str, spectate: bool = False) -> Event:
        """Join by code, or resume the seat saved for ``name`` in that room.

        A spectator (``watch``) never takes or resumes a saved seat.  A resume tells the truth:
        a seat dropped after the grace is watching; a seat gone after the results (``bad_token``)
        is forgotten and the room joined afresh as a new member."""
        seat = None
        if self.remember and not spectate:
            try:
                seat = saved_seat(self.url, code, name)
            except SeatsError as exc:
                self.seat_problem = str(exc)
        claim = None
        if seat is not None:
            # held before it is taken back: another terminal's bare join at the same moment
            # must find it in use, not resume it too and cut this one off
            claim = claim_seat(self.url, code, name)
            if claim is None:
                raise SeatInUse(
                    f"the seat of {name!r} in this room is in use in another terminal: "
                    "join with another name (--name), or leave it there first"
                )
        released = False
        if seat is not None:
            try:
                resume = Resume(seq=0, code=room_key(code), token=seat["token"])
            except ValidationError:  # a damaged file: no seat to resume
                forget_seat(self.url, code, name)
                seat = None
        if seat is not None:
            try:
                snap = await self._request(resume)
            except ServerError as exc:
                if claim is not None:
                    claim.release()
                if exc.code not in ("bad_token", "room_not_found"):
                    raise
                forget_seat(self.url, code, name)
                if "removed you" in exc.message:
                    raise  # the host removed this seat: not joined again behind their back
                released = exc.code == "bad_token"
            except BaseException:
                if claim is not None:
                    claim.release()
                raise
            else:
                assert isinstance(snap, Snapshot)
                self.code = room_key(code)
                self.model.token = seat["token"]
                self.model.name = seat.get("name") or name
                if name_key(self.model.name) == name_key(name) and claim is not None:
                    self._release()
                    self._held = claim
                else:
                    if claim is not None:
                        claim.release()
                    self._hold(self.model.name)
                self._resumed(snap, "Welcome back: your seat was kept.")
                return snap
        elif claim is not None:
            claim.release()
        try:
            joined = await self._request(JoinRoom(seq=0, code=code, name=name, spectate=spectate))
        except ServerError as exc:
            if exc.code == "room_not_found" and seat is not None:
                # its code was right: the room closed (or the server lost it) since
                raise ServerError(
                    Error(
                        seq=0,
                        code="room_not_found",
                        message=f"room {display_code(room_key(code))} has closed since you "
                        "were in it",
                    )
                ) from None
            raise
        assert isinstance(joined, Joined)
        self._joined(joined, name)
        if joined.role == "spectator" and not spectate:
            state = joined.room.state
            self.model.status = (
                "Every seat is taken: you watch (a seat next race if one is free)."
                if state == "lobby"
                else "The race is over: you get a seat in the next one if one is free."
                if state == "results"
                else "You watch this race, and race the next if a seat is free."
            )
        if released:
            self.model.status = released_again(joined.role, joined.room.state)
        self._say_seat_problem()
        return joined

    def _say_seat_problem(self) -> None:
        """Add to the status line that the seat could not be saved, if it could not."""
        if self.seat_problem:
            said = f"Your seat could not be saved: {self.seat_problem}."
            self.model.status = f"{self.model.status} {said}" if self.model.status else said

    def _joined(self, joined: Joined, name: str) -> None:
        self.join_seq = joined.seq  # a room racing sends its snapshot after, with this seq
        self.code = joined.room.code
        self._members = {m.id for m in joined.room.members}
        self.model.name = name
        self.model.apply(joined)
        if self.remember:
            # held whatever the role: a member watching until the next race is seated then,
            # and a bare join in another terminal must not take it meanwhile
            try:
                save_seat(self.url, joined.room.code, joined.token, name, member=joined.you)
            except SeatsError as exc:
                self.seat_problem = str(exc)
            else:
                self.seat_problem = None  # (saved after all: quitting loses nothing)
            self._hold(name)

    def _hold(self, name: str) -> None:
        """Mark the seat as in use by this client (the mark of any seat held before goes)."""
        self._release()
        if self.remember and self.code is not None:
            self._held = hold_seat(self.url, self.code, name)

    def _release(self, forget: bool = False) -> None:
        if self._held is not None:
            self._held.release(forget)
            self._held = None

    def _resumed(self, snap: Snapshot, welcome: str) -> None:
        """Apply a resume's snapshot; the status says whether the seat is still racing, and
        whether a move left without an answer was made."""
        self._seq_from(snap.next_seq)
        self.model.back_status = ""  # (a window of an earlier return is over)
        # the release already said in this terminal, of this race (not of the one before it)
        told = self.model.seat_released and self.model.race_id == snap.room.race_id
        self.model.apply(snap)
        unsettled, self.unsettled = self.unsettled, None
        state = self.model.state
        note = self._key_settled(snap)
        me = self.model.my_progress()
        resigned_then = unsettled is not None and unsettled[2]
        if resigned_then and self.model.phase == "results" and self.model.standings:
            # the race ended meanwhile: its standings say whether the resignation counted (it
            # said nothing: a bad-network trial)
            mine = next((s for s in self.model.standings if s.id == self.model.you), None)
            if mine is not None and mine.status == "resigned":
                note = " You have resigned, as you asked."
            elif mine is not None:
                note = " Your resignation did not reach the server before the race ended."
        if unsettled is not None and state is not None and self.model.phase == "racing":
            moves, undos, resigning = unsettled
            if resigning:
                # a resignation changes no count: the server's word on this seat says it (it
                # said "did not reach the server" of one made: a bad-network trial)
                made = me is not None and me.status == "resigned"
                note = (
                    " You have resigned, as you asked."
                    if made
                    else " Your resignation did not reach the server: x x again to resign."
                )
            else:
                made = (state.moves, state.undos) != (moves, undos)
                note = (
                    " Your last move was made."
                    if made
                    else " Your last move did not reach the server: make it again."
                )
        dropped, self.typed_dropped = self.typed_dropped, 0
        if dropped:
            note += f" {plural(dropped, 'key')} typed after it {'was' if dropped == 1 else 'were'} not sent."
        released = snap.role == "player" and me is not None and me.status == "disconnected"
        if released and not told:
            self.model.status = RELEASED
        elif released:
            # said once: back again after a restart in the results, it was said again as news,
            # or "your seat is back" (a race-night trial)
            racing = snap.room.state == "racing"
            said = "Reconnected: you watch this race out." if racing else "Reconnected."
            self.model.back_together(said, time.monotonic())
        elif snap.role == "player" and me is None and self.model.phase == "racing":
            # away when the others started this race (their rematch went on without you)
            self.model.status = SAT_OUT
        else:
            # the others coming back too (a restart) are added to that line, not put in its
            # place: the note with it (it was lost when another came back at that moment)
            self.model.back_together(welcome + note, time.monotonic())

    def _key_settled(self, snap: Snapshot) -> str:
        """Whether a ready, rematch or start left without an answer was done, as the snapshot
        shows the room (a sentence to add to the welcome back), or nothing to say."""
        unsettled, self.unsettled_key = self.unsettled_key, None
        me = self.model.me_member(snap.room)
        if unsettled is None or me is None:
            return ""
        sent, then = unsettled
        state = snap.room.state
        if then == "results":
            # n or the host's s on the results: done if the room has moved on, or asked
            moved = state != "results"
            if isinstance(sent, Rematch):
                if state == "lobby" and not me.ready:
                    # the room moved on, and this player is not ready: the rematch was lost,
                    # or the host changed the settings since (everyone then presses ready
                    # again): said as it is ("You asked for a rematch", of one the server
                    # never had: a flaky-network trial; which of the two: a review)
                    return " You are not ready in the lobby: press r."
                if me.rematch or state == "lobby":
                    return " You asked for a rematch."
                if moved:
                    return ""  # a countdown or a race: the screen says whether you are in it
                return " Your rematch did not reach the server: press n again."
            if isinstance(sent, Start):
                if moved:
                    return ""  # the room is in the lobby (or racing): the screen says so
                return " Your s did not reach the server: press s again."
            return ""
        if then == "countdown" and isinstance(sent, Ready) and not sent.ready:
            if state == "lobby":
                return " The countdown stopped: you are not ready."
            if state == "racing":
                return " Your r did not reach the server in time: the race has started."
            return ""
        if then == "lobby" and state == "lobby" and isinstance(sent, Ready | Start):
            ready = sent.ready if isinstance(sent, Ready) else True
            if me.ready == ready:
                if isinstance(sent, Start):
                    return " You are ready: the race starts when the others are."
                return " You are ready." if ready else " You are not ready."
            key = "s" if isinstance(sent, Start) else "r"
            return f" Your {key} did not reach the server: press {key} again."
        return ""

    def _seq_from(self, lowest: int) -> None:
        """Number the next commands from ``lowest`` at least (the snapshot's ``next_seq``)."""
        self.seqs = itertools.count(max(next(self.seqs), lowest))
        if self.conn is not None:
            self.conn._seq = self.seqs

    # -- commands -----------------------------------------------------------------------------

    async def _request(self, command: Command) -> Event:
        assert self.conn is not None
        answer = await self.conn.request(command, self.answer_timeout)
        if self.conn.url != (self.node_url or self.url):
            self.node_url = self.conn.url  # followed a redirect
        return answer

    async def race_record(self, race_id: str) -> RaceRecord | None:
        """A finished race's public record (None if it cannot be had now: nothing is said)."""
        if self.conn is None or not self.connected:
            return None
        try:
            answer = await self.conn.request(GetRace(seq=0, race_id=race_id), self.answer_timeout)
        except (ServerError, TimeoutError, Disconnected):
            return None
        return answer.record if isinstance(answer, RaceRecordMsg) else None

    async def command(self, command: Command) -> Event | None:
        """Send a command; a refusal goes to the status line (None is returned).

        A command left without an answer (10 s) is on a link that has stalled, however open it
        looks: the connection is dropped and the seat taken back at once, and the snapshot then
        says whether the move was made.  (It said "reconnecting" and let the next key through:
        a deal typed again was dealt twice once the link came back.)"""
        state = self.model.state
        resigning = isinstance(command, MoveCmd) and command.move.kind == "resign"
        board = (state.moves, state.undos, resigning) if state is not None else None
        sent_on = self.conn
        try:
            answer = await self._request(command)
        except ServerError as exc:
            self.model.status = sentence(exc.message)
            self.on_change()
            return None
        except (TimeoutError, Disconnected) as exc:
            if isinstance(command, MoveCmd) and board is not None:
                self.unsettled = board
            if isinstance(command, Ready | Rematch | Start):
                room = self.model.room
                # (the results still on screen are the results, whatever the room has done)
                where = "results" if self.model.holding else room.state if room else ""
                self.unsettled_key = (command, where)
            if isinstance(exc, TimeoutError) and sent_on is self.conn:
                self.model.status = STALLED
                self._drop()
            else:
                self.model.status = "Not connected: reconnecting..."
            self.on_change()
            return None
        self.model.apply(answer)
        self.on_change()
        return answer

    def _drop(self, stalled: bool = True) -> None:
        """Give up on a connection that stopped answering: closed at once, without the closing
        handshake a stalled link would not carry, so that :meth:`run` reconnects."""
        self.connected = False
        self.stalled = stalled
        ws = self.conn.ws if self.conn is not None else None
        if ws is not None:
            ws.transport.abort()

    async def move(self, move: Move) -> Event | None:
        return await self.command(MoveCmd(seq=0, move=to_wire(move)))

    async def ready(self, ready: bool = True) -> None:
        await self.command(Ready(seq=0, ready=ready))

    async def take_seat(self, remember: bool) -> bool:
        """A watcher takes a free seat in the lobby (its ``ready``); with ``remember`` (a
        server of its own, not ``play``'s) the seat is saved as a join's is, so that a drop or
        a quit can take it back.  True if it was taken."""
        answer = await self.command(Ready(seq=0, ready=True))
        if answer is None or self.code is None or self.model.token is None:
            return False
        if remember and not self.remember:
            self.remember = True
            try:
                save_seat(
                    self.url, self.code, self.model.token, self.model.name, member=self.model.you
                )
            except SeatsError as exc:
                self.seat_problem = str(exc)
            self._hold(self.model.name)
        return True

    async def start(self) -> None:
        await self.command(Start(seq=0))

    async def rematch(self) -> Event | None:
        return await self.command(Rematch(seq=0))

    def speaks(self, version: str) -> bool:
        """The server speaks protocol ``version`` or a later minor one of its major (its
        ``welcome`` says which)."""
        welcome = self.conn.welcome if self.conn is not None else None
        if welcome is None:
            return False
        try:
            theirs = tuple(int(p) for p in welcome.version.split(".")[:2])
            wanted = tuple(int(p) for p in version.split(".")[:2])
        except ValueError:
            return False
        return theirs[0] == wanted[0] and theirs >= wanted

    async def update_settings(self, settings: Settings, keep_deal: bool = False) -> None:
        await self.command(UpdateSettings(seq=0, settings=settings, keep_deal=keep_deal))

    async def leave(self) -> None:
        if self.conn is not None and self.connected:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._request(Leave(seq=0)), 2)
        if self.code is not None and self.remember:
            forget_seat(self.url, self.code, self.model.name)
        self._release(forget=True)

    # -- the event loop -------------------------------------------------------------------------

    def start_events(self) -> None:
        self._runner = asyncio.create_task(self.run())

    async def run(self) -> None:
        backoff = 0.5
        while not self.stopped:
            assert self.conn is not None
            try:
                event = await self.conn.next_event(timeout=None)
            except Disconnected as exc:
                self.connected = False
                if (
                    self.stopped
                    or exc.code in FINAL_CLOSES
                    or self.model.phase in ("kicked", "gone")
                ):
                    if self.model.phase != "kicked":  # a kick has said why already
                        self.model.phase = "gone"
                        self.model.status = f"Disconnected: {exc.reason}"
                    self.on_change()
                    return
                restarting = self.restarting or exc.code == CLOSE_RESTART
                lost = time.monotonic()
                self.model.status = RESTARTING if restarting else STALLED if self.stalled else LOST
                self.stalled = False
                self.on_change()
                while not self.stopped:
                    # a server that said it is restarting is back in seconds and the race's
                    # clock goes on as soon as it is: tried every second, not after up to 10 s;
                    # spread a little so that a room's clients do not all knock at once
                    racing = self.model.phase in ("racing", "countdown")
                    wait = retry_wait(backoff, restarting, racing, time.monotonic() - lost)
                    await asyncio.sleep(wait * random.uniform(0.8, 1.2))
                    backoff = min(backoff * 2, RETRY_MAX_S)
                    if await self._reconnect():
                        backoff = 0.5
                        self.restarting = False
                        break
                continue
            if isinstance(event, Snapshot) and event.seq == self.join_seq:
                self.join_seq = None  # the room's state, second answer to our join: once
            elif isinstance(event, Snapshot | Joined):
                # only ever an answer to our own resume or join (those are read as answers,
                # not here): one sent unasked would reset the board and stop the check of
                # every card shown after it
                log.warning("ignored an unasked %s from the server", event.type)
                continue
            self.model.apply(event)
            if isinstance(event, RoomUpdate):
                self._forget_gone(event.room)
            if isinstance(event, Kicked) and self.remember and self.code is not None:
                # removed (or the room closed): no seat is left to take back, and the saved
                # one stayed for a bare join to find (a verification trial)
                forget_seat(self.url, self.code, self.model.name)
                self._release(forget=True)
            if isinstance(event, Notice) and event.code == "shutdown":
                self.restarting = True
                self.model.status = RESTARTING
            if self.model.needs_resync:
                await self._resync()
            self.on_change()

    def _forget_gone(self, room: RoomInfo) -> None:
        """Someone left the room (a seat released, removed, given up): a seat this account saved
        for them, in any terminal, is forgotten (looked at only when the room loses members)."""
        members = {m.id for m in room.members}
        gone = self._members - members
        self._members = members
        if gone and self.remember and self.code == room.code:
            forget_gone(self.url, room.code, members)

    async def _reconnect(self) -> bool:
        try:
            await self.connect()
            # no key goes out before the seat is back (it was refused: not in a room)
            self.connected = False
            assert self.code is not None and self.model.token is not None
            snap = await self._request(Resume(seq=0, code=self.code, token=self.model.token))
        except ServerError as exc:
            if exc.code == "bad_token" and "removed you" in exc.message:
                # removed by the host while away: not back in behind their back
                if self.remember and self.code is not None:
                    forget_seat(self.url, self.code, self.model.name)
                self._release(forget=True)
                self.model.apply(Kicked(message=exc.message))
                self.stopped = True
                self.on_change()
                return True
            if exc.code == "bad_token" and await self._join_again():
                return True
            if exc.code in TRANSIENT:
                # the server is busy or stopping, or this address is over a budget (a club
                # behind one address, all back at once): the seat is still there, try again
                self.model.status = f"Still reconnecting: {exc.message}"
                self._drop(stalled=False)  # the next try opens its own
                self.on_change()
                return False
            self.model.status = (
                # (not why: nobody connected, or its server's operator ended it: an operator's
                # --forget-rooms was said as "nobody was connected to it": a verification trial)
                "Could not take your seat back: the room is gone from the server (it closed "
                "while you were away)"
                if exc.code == "room_not_found"
                else f"Could not take your seat back: {exc.message}"
            )
            self.model.phase = "gone"
            self.stopped = True
            self.on_change()
            return True
        except ssl.SSLCertVerificationError as exc:
            # the server's certificate changed (or expired) while we were away: trying again
            # cannot help until someone acts, so say what is wrong (it said "reconnecting")
            self.model.status = (
                "Still reconnecting: the server's certificate is not trusted "
                f"({safe(exc.verify_message or str(exc))}); SSL_CERT_FILE names one to trust (docs/operations.md)."
            )
            self.on_change()
            return False
        except (TimeoutError, Disconnected, OSError, InvalidHandshake) as exc:
            if isinstance(exc, TimeoutError) and self.conn is not None:
                # its resume unanswered: this connection is given up too, not left open to
                # take the seat later, behind the next try's back
                self._drop(stalled=False)
            if self.model.status in (LOST, STALLED):
                self.model.status = "Still reconnecting..."
            # anything else said meanwhile stays (a key typed: "not sent"; the restart): each
            # try, every second during a restart, put its own line over it
            self.on_change()
            return False
        assert isinstance(snap, Snapshot)
        self.connected = True
        # (a watcher has no seat: it said "your seat is back" to one: club-night trial)
        back = "you are watching again" if snap.role == "spectator" else "your seat is back"
        self._resumed(snap, f"Reconnected: {back}.")
        self.on_change()
        await self._check_missed()
        return True

    async def _check_missed(self) -> None:
        """A race played whose end never came (the room went on to another meanwhile): its
        record fetched and checked against every card this client was shown in it."""
        missed = self.model.missed
        if missed is None:
            return
        record = await self.race_record(missed.race_id)
        if record is None:
            self.model.missed = None
            self.model.say(
                "Your last race ended while you were away; its record could not be had now "
                "(patience-race replay checks it)."
            )
        else:
            self.model.say(self.model.missed_result(record))
        self.on_change()

    async def _join_again(self) -> bool:
        """The seat is gone (the results are over): join the room again as a new member."""
        assert self.code is not None
        # what the old seat left without an answer is not the new one's to be told of
        self.unsettled = self.unsettled_key = None
        if self.remember:
            forget_seat(self.url, self.code, self.model.name)
        # a watcher comes back to watch (one who only watched was seated on a free seat after a
        # drop past the grace, to race unasked: a spectators trial), unless they came to race
        me = self.model.me_member()
        watching = self.model.role == "spectator" and not (me is not None and me.to_race)
        try:
            joined = await self._request(
                JoinRoom(seq=0, code=self.code, name=self.model.name, spectate=watching)
            )
        except (ServerError, TimeoutError, Disconnected):
            return False
        assert isinstance(joined, Joined)
        self.connected = True
        self._joined(joined, self.model.name)
        self.model.status = (
            "You were away too long, and joined again: you watch."
            if watching
            else released_again(joined.role, joined.room.state)
        )
        self._say_seat_problem()
        self.on_change()
        await self._check_missed()
        return True

    async def _resync(self) -> None:
        if self.code is None or self.model.token is None:
            return
        with contextlib.suppress(ServerError, Disconnected, asyncio.TimeoutError):
            snap = await self._request(Resume(seq=0, code=self.code, token=self.model.token))
            self.model.apply(snap)

    async def close(self) -> None:
        self.stopped = True
        self._release()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        if self.conn is not None:
            await self.conn.close()
