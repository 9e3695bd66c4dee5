"""Rooms, members and connections: the whole server as a plain state machine.

The :class:`Hub` takes commands from connections (``handle``), connection ends (``disconnect``)
and the passing of time (``tick``), and answers each with an :class:`Outbox`: the events to send
to which connection, and the connections to close.  It never touches a socket or a clock: the
websockets layer (``server.app``) does, and tests drive the hub directly.
"""

from __future__ import annotations

import logging
import secrets
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from protocol.codec import encode
from protocol.config import ConfigError, GameConfig
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    Command,
    Countdown,
    CreateRoom,
    Error,
    Event,
    GetRace,
    Hello,
    Joined,
    JoinRoom,
    Kick,
    Kicked,
    Leave,
    ListRooms,
    Member,
    MoveCmd,
    Moved,
    Notice,
    PlayerRecord,
    ProgressUpdate,
    RaceOver,
    RaceRecord,
    RaceStart,
    Ready,
    Rematch,
    Resume,
    RoomInfo,
    RoomList,
    RoomSummary,
    RoomUpdate,
    Settings,
    Snapshot,
    Start,
    UpdateSettings,
    Welcome,
)
from protocol.messages import (
    PublicSettings as PublicSettingsModel,
)

from .limits import Limits, TokenBucket
from .race import Race, RaceError
from .store import Store

log = logging.getLogger("patience_race.server")

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
"""Room codes: no 0/O, 1/I/L to misread; 8 of these are about 40 bits."""
CODE_LENGTH = 8
MAX_NAME = 24
MAX_SPECTATORS = 32

# Close codes (docs/protocol.md)
CLOSE_BAD_INPUT = 4400
CLOSE_VERSION = 4426
CLOSE_FLOOD = 4429
CLOSE_IDLE = 4408
CLOSE_REPLACED = 4409
CLOSE_KICKED = 4403  # not used to close: a kicked member stays connected, out of the room
CLOSE_RESTART = 1012
CLOSE_FULL = 1013


class CommandError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Close:
    conn: int
    code: int
    reason: str


@dataclass
class Outbox:
    """What the hub wants done: ``sends`` in order, then ``closes``.

    A send is an event, or a frame already encoded (an answer sent again for a repeated sequence
    number).  :meth:`frame` encodes each event once, however many connections it goes to and
    whether or not it is also kept in a :class:`SeqCache`."""

    sends: list[tuple[int, Event | bytes]] = field(default_factory=list)
    closes: list[Close] = field(default_factory=list)
    replies: list[Event] = field(default_factory=list)
    """The direct answers to the command handled, kept to answer a repeated sequence number."""
    _frames: dict[int, bytes] = field(default_factory=dict, repr=False)

    def reply(self, conn: int, event: Event) -> None:
        self.sends.append((conn, event))
        self.replies.append(event)

    def send(self, conn: int, event: Event | bytes) -> None:
        self.sends.append((conn, event))

    def close(self, conn: int, code: int, reason: str) -> None:
        self.closes.append(Close(conn, code, reason))

    def frame(self, event: Event | bytes) -> bytes:
        """``event`` as it goes on the wire (encoded once per outbox)."""
        if isinstance(event, bytes):
            return event
        key = id(event)  # the event is alive in this outbox, so its id is not reused
        data = self._frames.get(key)
        if data is None:
            data = self._frames[key] = encode(event)
        return data


class SeqCache:
    """The answers to the last :attr:`SIZE` commands, by sequence number, as encoded frames:
    bytes are compact and hold no references for the garbage collector to walk."""

    SIZE = 16

    __slots__ = ("answers", "highest")

    def __init__(self) -> None:
        self.answers: dict[int, tuple[bytes, ...]] = {}
        self.highest = -1

    def get(self, seq: int) -> tuple[bytes, ...] | None:
        return self.answers.get(seq)

    def put(self, seq: int, frames: tuple[bytes, ...]) -> None:
        answers = self.answers
        answers[seq] = frames
        if seq > self.highest:
            self.highest = seq
        while len(answers) > self.SIZE:
            del answers[next(iter(answers))]  # the oldest: dicts keep insertion order


@dataclass
class MemberState:
    id: int
    name: str
    role: str
    token: str
    joined_at: float
    ready: bool = False
    conn: int | None = None
    away_since: float | None = None
    """When the connection dropped (None while connected)."""
    seqs: SeqCache = field(default_factory=SeqCache)


@dataclass
class Conn:
    id: int
    opened_at: float
    bucket: TokenBucket
    peer: str = ""
    hello: bool = False
    room: Room | None = None
    member: MemberState | None = None
    seqs: SeqCache = field(default_factory=SeqCache)
    bad: int = 0
    limited: int = 0
    last_seen: float = 0.0


class Room:
    def __init__(self, code: str, settings: Settings, config: GameConfig, now: float) -> None:
        self.code = code
        self.settings = settings
        self.config = config
        self.created = now
        self.members: dict[int, MemberState] = {}
        self.host: int | None = None
        self.state = "lobby"
        self.race: Race | None = None
        self.countdown_end: float | None = None
        self.next_id = 1
        self.progress_dirty = False
        self.progress_sent = 0.0
        self.last_over: RaceOver | None = None
        self.away: set[int] = set()
        """Members whose connection dropped: the clock tick looks only at these."""

    # -- members --------------------------------------------------------------------------

    def players(self) -> list[MemberState]:
        return [m for m in self.members.values() if m.role == "player"]

    def spectators(self) -> list[MemberState]:
        return [m for m in self.members.values() if m.role == "spectator"]

    def add(self, name: str, role: str, now: float) -> MemberState:
        member = MemberState(self.next_id, name, role, secrets.token_urlsafe(24), now)
        self.next_id += 1
        self.members[member.id] = member
        if self.host is None and role == "player":
            self.host = member.id
        return member

    def remove(self, member_id: int) -> None:
        self.members.pop(member_id, None)
        self.away.discard(member_id)
        if self.host == member_id:
            players = self.players()
            others = players or list(self.members.values())
            self.host = others[0].id if others else None

    def connected(self) -> Iterator[MemberState]:
        return (m for m in self.members.values() if m.conn is not None)

    # -- views ----------------------------------------------------------------------------

    def public_settings(self) -> PublicSettingsModel:
        s = self.settings
        return PublicSettingsModel(
            game=s.game,
            options=dict(self.config.options),
            numbering=s.numbering,
            mode=s.mode,
            time_limit=s.time_limit,
            undo=s.undo,
            seats=s.seats,
            private=s.private,
            fixed_deal=s.deal_number is not None,
            title=self.config.title,
        )

    def info(self) -> RoomInfo:
        race = self.race
        return RoomInfo(
            code=self.code,
            state=self.state,  # type: ignore[arg-type]
            settings=self.public_settings(),
            members=[
                Member(
                    id=m.id,
                    name=m.name,
                    role=m.role,  # type: ignore[arg-type]
                    ready=m.ready,
                    connected=m.conn is not None,
                    host=m.id == self.host,
                )
                for m in self.members.values()
            ],
            race_id=race.race_id if race else None,
            commitment=race.commitment if race else None,
        )

    def summary(self) -> RoomSummary:
        return RoomSummary(
            code=self.code,
            state=self.state,  # type: ignore[arg-type]
            title=self.config.title,
            mode=self.settings.mode,
            players=len(self.players()),
            seats=self.settings.seats,
            spectators=len(self.spectators()),
        )


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def display_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


def check_name(name: str) -> str:
    name = unicodedata.normalize("NFC", " ".join(name.split()))
    if not name:
        raise CommandError("bad_name", "a name needs at least one visible character")
    if len(name) > MAX_NAME:
        raise CommandError("bad_name", f"a name has at most {MAX_NAME} characters")
    if not name.isprintable() or any(unicodedata.category(c) in ("Cf", "Co", "Cs") for c in name):
        raise CommandError("bad_name", "a name may hold only printable characters")
    return name


class Hub:
    """Every room and connection of one server process."""

    def __init__(
        self,
        limits: Limits | None = None,
        store: Store | None = None,
        wall: Callable[[], float] = time.time,
        server_name: str = "patience-race",
    ) -> None:
        self.limits = limits or Limits()
        self.store = store
        self.wall = wall
        self.server_name = server_name
        self.rooms: dict[str, Room] = {}
        self.conns: dict[int, Conn] = {}
        self.per_address: dict[str, int] = {}
        self.finished: OrderedDict[str, RaceRecord] = OrderedDict()
        from .records import ByteBudget, RecordCache  # (here: hub.py's imports are not mine)

        self.records = RecordCache(self.limits.record_cache_bytes)
        self.record_budget = ByteBudget(self.limits.record_rate, self.limits.record_burst)
        self.draining = False
        self.metrics: dict[str, int] = {}
        self._next_conn = 1
        self._next_sweep = 0.0
        """No connection can reach its hello or idle timeout before this time."""

    def count(self, name: str, by: int = 1) -> None:
        self.metrics[name] = self.metrics.get(name, 0) + by

    # -- connections ------------------------------------------------------------------------

    def connect(self, now: float, peer: str = "") -> int | None:
        """A new connection's id, or None if the server is full or draining."""
        if self.draining or len(self.conns) >= self.limits.max_connections:
            return None
        if peer and self.per_address.get(peer, 0) >= self.limits.max_per_address:
            self.count("refused_per_address")
            return None
        if peer:
            self.per_address[peer] = self.per_address.get(peer, 0) + 1
        cid = self._next_conn
        self._next_conn += 1
        self._next_sweep = min(self._next_sweep, now + self.limits.hello_timeout_s)
        self.conns[cid] = Conn(
            cid, now, TokenBucket(self.limits.rate, self.limits.burst, now), peer, last_seen=now
        )
        return cid

    def disconnect(self, cid: int, now: float) -> Outbox:
        out = Outbox()
        conn = self.conns.pop(cid, None)
        if conn is not None and conn.peer:
            left = self.per_address.get(conn.peer, 1) - 1
            if left > 0:
                self.per_address[conn.peer] = left
            else:
                self.per_address.pop(conn.peer, None)
        if conn is None or conn.room is None or conn.member is None:
            return out
        room, member = conn.room, conn.member
        if member.conn == cid:
            member.conn = None
            member.away_since = now
            room.away.add(member.id)
            if room.race is not None:
                room.race.set_connected(member.id, False)
                room.progress_dirty = True
            self._event("disconnected", room, member)
            self._room_update(room, out)
        return out

    def bad_input(self, cid: int, code: str, message: str, seq: int | None = None) -> Outbox:
        """A frame that could not be read (``seq`` None), or a message refused before it is
        handled: an error, and the connection closed if it goes on."""
        out = Outbox()
        conn = self.conns.get(cid)
        if conn is None:
            return out
        conn.bad += 1
        self.count(f"bad_input_{code}")
        out.send(cid, Error(seq=seq, code=code, message=message))  # type: ignore[arg-type]
        if conn.bad >= self.limits.max_bad:
            out.close(cid, CLOSE_BAD_INPUT, "too many bad messages")
        return out

    # -- commands --------------------------------------------------------------------------

    def handle(self, cid: int, cmd: Command | Event, now: float) -> Outbox:
        out = Outbox()
        conn = self.conns.get(cid)
        if conn is None:
            return out
        conn.last_seen = now
        if not conn.bucket.take(now):
            conn.limited += 1
            self.count("rate_limited")
            seq = getattr(cmd, "seq", None)
            out.send(
                cid, Error(seq=seq, code="rate_limited", message="too many messages: slow down")
            )
            if conn.limited >= self.limits.max_limited:
                out.close(cid, CLOSE_FLOOD, "flooding")
            return out
        if not isinstance(cmd, Command):
            return self.bad_input(
                cid, "unknown_type", f"{cmd.type} is a server event, not a command"
            )  # type: ignore[attr-defined]
        if not conn.hello and not isinstance(cmd, Hello):
            return self.bad_input(
                cid, "hello_first", "say hello first, with your protocol version", cmd.seq
            )
        cache = conn.member.seqs if conn.member else conn.seqs
        again = cache.get(cmd.seq)
        if again is not None:
            for frame in again:
                out.send(cid, frame)
            self.count("commands_repeated")
            return out
        if cmd.seq <= cache.highest:
            out.send(
                cid,
                Error(
                    seq=cmd.seq,
                    code="bad_message",
                    message=f"sequence number {cmd.seq} was already used: they must increase",
                ),
            )
            return out
        handler = self._handlers.get(type(cmd))
        try:
            assert handler is not None
            handler(self, conn, cmd, now, out)
        except CommandError as exc:
            out.reply(cid, Error(seq=cmd.seq, code=exc.code, message=exc.message))  # type: ignore[arg-type]
            self.count(f"rejected_{exc.code}")
        cache.put(cmd.seq, tuple(out.frame(e) for e in out.replies))
        if isinstance(cmd, CreateRoom | JoinRoom) and conn.member is not None:
            # a new seat: its numbers go on from this connection's, so that a create or join
            # sent again (its answer lost) is answered again rather than refused
            for seq, answers in cache.answers.items():
                conn.member.seqs.put(seq, answers)
        return out

    def _hello(self, conn: Conn, cmd: Hello, now: float, out: Outbox) -> None:
        major = PROTOCOL_VERSION.split(".")[0]
        if cmd.version.split(".")[0] != major:
            out.reply(
                conn.id,
                Error(
                    seq=cmd.seq,
                    code="version_mismatch",
                    message=f"this server speaks protocol {PROTOCOL_VERSION}; you speak {cmd.version[:16]}: update your client",
                ),
            )
            out.close(conn.id, CLOSE_VERSION, "protocol version mismatch")
            return
        conn.hello = True
        out.reply(
            conn.id,
            Welcome(
                seq=cmd.seq,
                version=PROTOCOL_VERSION,
                server=self.server_name,
                max_frame=self.limits.max_frame,
                rate=self.limits.rate,
                burst=self.limits.burst,
            ),
        )

    def _check_settings(self, settings: Settings, players: int) -> GameConfig:
        try:
            config = GameConfig(settings.game, settings.options, settings.numbering)
            if settings.deal_number is not None:
                config.check_number(settings.deal_number)
        except ConfigError as exc:
            raise CommandError("bad_settings", str(exc)) from None
        if settings.mode == "score" and not settings.time_limit:
            raise CommandError("bad_settings", "mode score needs a time limit")
        if players > settings.seats:
            raise CommandError(
                "bad_settings", f"{players} players are seated: seats cannot be fewer"
            )
        return config

    def _create_room(self, conn: Conn, cmd: CreateRoom, now: float, out: Outbox) -> None:
        if conn.room is not None:
            raise CommandError("already_in_room", "leave your room first")
        if self.draining:
            raise CommandError("shutting_down", "the server is restarting: no new rooms")
        if len(self.rooms) >= self.limits.max_rooms:
            raise CommandError(
                "too_many_rooms", "the server holds as many rooms as it can: try later"
            )
        name = check_name(cmd.name)
        config = self._check_settings(cmd.settings, 1)
        code = self._new_code()
        room = Room(code, cmd.settings, config, now)
        self.rooms[code] = room
        member = room.add(name, "player", now)
        self._bind(conn, room, member)
        self.count("rooms_created")
        self._event("room_created", room, member, game=config.title, private=cmd.settings.private)
        out.reply(
            conn.id,
            Joined(seq=cmd.seq, you=member.id, role="player", token=member.token, room=room.info()),
        )

    def _new_code(self) -> str:
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if code not in self.rooms:
                return code

    def _room(self, code: str) -> Room:
        room = self.rooms.get(normalize_code(code))
        if room is None:
            raise CommandError("room_not_found", f"no room {code[:16]!r}: check the code")
        return room

    def _join_room(self, conn: Conn, cmd: JoinRoom, now: float, out: Outbox) -> None:
        if conn.room is not None:
            raise CommandError("already_in_room", "leave your room first")
        room = self._room(cmd.code)
        name = check_name(cmd.name)
        if any(m.name.casefold() == name.casefold() for m in room.members.values()):
            raise CommandError("name_taken", f"someone in this room is already called {name}")
        seat_free = room.state == "lobby" and len(room.players()) < room.settings.seats
        role = "player" if seat_free and not cmd.spectate else "spectator"
        if role == "spectator" and len(room.spectators()) >= MAX_SPECTATORS:
            raise CommandError("room_full", "this room is full")
        member = room.add(name, role, now)
        self._bind(conn, room, member)
        self._event("joined", room, member, role=role)
        out.reply(
            conn.id,
            Joined(seq=cmd.seq, you=member.id, role=role, token=member.token, room=room.info()),
        )  # type: ignore[arg-type]
        if room.state != "lobby":
            out.reply(conn.id, self._snapshot(room, member, cmd.seq, now))
        self._room_update(room, out, skip=member.id)

    def _resume(self, conn: Conn, cmd: Resume, now: float, out: Outbox) -> None:
        room = self._room(cmd.code)
        member = next(
            (m for m in room.members.values() if secrets.compare_digest(m.token, cmd.token)), None
        )
        if member is None:
            raise CommandError("bad_token", "that token holds no seat in this room")
        if conn.room is not None and conn.member is not member:
            raise CommandError("already_in_room", "leave your room first")
        if member.conn is not None and member.conn != conn.id:
            old = self.conns.get(member.conn)
            if old is not None:
                old.room = old.member = None
                out.close(old.id, CLOSE_REPLACED, "this seat was resumed on another connection")
        self._bind(conn, room, member)
        member.away_since = None
        room.away.discard(member.id)
        if room.race is not None:
            room.race.set_connected(member.id, True)
            room.progress_dirty = True
        self._event("resumed", room, member)
        out.reply(conn.id, self._snapshot(room, member, cmd.seq, now))
        self._room_update(room, out, skip=member.id)

    def _list_rooms(self, conn: Conn, cmd: ListRooms, now: float, out: Outbox) -> None:
        rooms = [r.summary() for r in self.rooms.values() if not r.settings.private][:100]
        out.reply(conn.id, RoomList(seq=cmd.seq, rooms=rooms))

    def _leave(self, conn: Conn, cmd: Leave, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        out.reply(conn.id, Ack(seq=cmd.seq))
        conn.room = conn.member = None
        self._remove_member(room, member, "left", now, out)

    def _remove_member(
        self, room: Room, member: MemberState, why: str, now: float, out: Outbox
    ) -> None:
        if room.race is not None and room.state in ("countdown", "racing"):
            room.race.drop(member.id, "left" if why != "disconnected" else "disconnected", now)
            room.progress_dirty = True
        room.remove(member.id)
        self._event(why, room, member)
        if not room.members:
            self._close_room(room, now, out)
            return
        self._room_update(room, out)
        self._check_end(room, now, out)

    def _membership(self, conn: Conn) -> tuple[Room, MemberState]:
        if conn.room is None or conn.member is None:
            raise CommandError("not_in_room", "you are not in a room")
        return conn.room, conn.member

    def _host_only(self, conn: Conn) -> tuple[Room, MemberState]:
        room, member = self._membership(conn)
        if room.host != member.id:
            raise CommandError("not_host", "only the host can do that")
        return room, member

    def _update_settings(self, conn: Conn, cmd: UpdateSettings, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        if room.state != "lobby":
            raise CommandError("wrong_state", "settings change only in the lobby, before the start")
        room.config = self._check_settings(cmd.settings, len(room.players()))
        room.settings = cmd.settings
        for m in room.members.values():
            m.ready = False
        self._event("settings_changed", room, member, game=room.config.title)
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._room_update(room, out)

    def _kick(self, conn: Conn, cmd: Kick, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        target = room.members.get(cmd.id)
        if target is None:
            raise CommandError("not_in_room", f"nobody with id {cmd.id} is in this room")
        if target is member:
            raise CommandError("bad_message", "you cannot remove yourself: leave instead")
        if room.state in ("countdown", "racing"):
            raise CommandError(
                "wrong_state", "players can be removed before or after a race, not during one"
            )
        out.reply(conn.id, Ack(seq=cmd.seq))
        if target.conn is not None:
            out.send(
                target.conn,
                Kicked(message=f"the host removed you from room {display_code(room.code)}"),
            )
            tconn = self.conns.get(target.conn)
            if tconn is not None:
                tconn.room = tconn.member = None
        self._remove_member(room, target, "kicked", now, out)

    def _ready(self, conn: Conn, cmd: Ready, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        if member.role != "player":
            raise CommandError("not_a_player", "spectators have no seat to get ready in")
        if room.state != "lobby":
            raise CommandError("wrong_state", "ready is for the lobby, before the start")
        member.ready = cmd.ready
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._countdown_if_all_ready(room, now, out)

    def _countdown_if_all_ready(self, room: Room, now: float, out: Outbox) -> None:
        """Two players or more, all ready: the countdown starts; else everyone sees who is."""
        players = room.players()
        if len(players) >= 2 and all(p.ready for p in players):
            self._start_countdown(room, now, out)
        else:
            self._room_update(room, out)

    def _start(self, conn: Conn, cmd: Start, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        if room.state != "lobby":
            raise CommandError("wrong_state", "the race has already started")
        if self.draining:
            raise CommandError("shutting_down", "the server is restarting: no new races")
        member.ready = True
        waiting = [p.name for p in room.players() if not p.ready]
        if waiting:
            raise CommandError("not_ready", f"waiting for {', '.join(waiting)} to be ready")
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._start_countdown(room, now, out)

    def _start_countdown(self, room: Room, now: float, out: Outbox) -> None:
        settings = room.settings
        race_id = secrets.token_hex(6)
        room.race = Race(
            race_id,
            room.config,
            [(p.id, p.name) for p in room.players()],
            mode=settings.mode,
            time_limit_s=settings.time_limit,
            undo=settings.undo,
            number=settings.deal_number,
        )
        room.state = "countdown"
        room.countdown_end = now + self.limits.countdown_ms / 1000
        room.last_over = None
        self._event("countdown", room, None, race=race_id, players=len(room.players()))
        self._room_update(room, out)
        self._broadcast(
            room,
            Countdown(
                race_id=race_id, ms=self.limits.countdown_ms, commitment=room.race.commitment
            ),
            out,
        )

    def _move(self, conn: Conn, cmd: MoveCmd, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        race = room.race
        if race is None or room.state not in ("countdown", "racing"):
            self.count("moves_race_not_running")
            raise CommandError("race_not_running", "there is no race running in this room")
        if member.role != "player" or member.id not in race.seats:
            self.count("moves_not_a_player")
            raise CommandError("not_a_player", "you are watching this race, not playing in it")
        try:
            result = race.move(member.id, cmd.move, now)
        except RaceError as exc:
            self.count(f"moves_{exc.code}")
            raise CommandError(exc.code, exc.message) from None
        self.count("moves_ok")
        if self.store is not None:
            self.store.add_move(race.race_id, member.id, result.index, result.notation, result.t_ms)
        seat = race.seats[member.id]
        state = seat.state
        out.reply(
            conn.id,
            Moved(
                seq=cmd.seq,
                move=result.move,
                undone=result.undone,
                shown=result.shown,
                score=seat.score,
                score2=seat.score2,
                won=state.won,
                stuck=seat.status == "stuck",
                can_undo=state.can_undo and race.undo != "off",
            ),
        )
        room.progress_dirty = True
        if seat.status != "playing":
            self._event(seat.status, room, member, score=seat.score, ms=seat.finish_ms)
        self._check_end(room, now, out)

    def _rematch(self, conn: Conn, cmd: Rematch, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        if room.state == "results":
            room.state = "lobby"
            room.race = None
            room.countdown_end = None
            if room.settings.deal_number is not None:
                room.settings = room.settings.model_copy(update={"deal_number": None})
            seats = room.settings.seats
            ordered = room.players() + room.spectators()
            for i, m in enumerate(ordered):
                m.role = "player" if i < seats else "spectator"
                m.ready = False
            if room.host is None or room.members[room.host].role != "player":
                room.host = room.players()[0].id if room.players() else room.host
            self._event("rematch", room, member)
        elif room.state != "lobby":
            raise CommandError("wrong_state", "a rematch comes after the results")
        out.reply(conn.id, Ack(seq=cmd.seq))
        if member.role == "player":
            member.ready = True
        self._countdown_if_all_ready(room, now, out)

    def _get_race(self, conn: Conn, cmd: GetRace, now: float, out: Outbox) -> None:
        """A finished race's record, from the encoded-record cache, within the address's byte
        budget (server/records.py)."""
        from protocol.codec import MAX_EVENT_FRAME

        entry = self.records.lookup(cmd.race_id, self.finished, self.store)
        if entry is None:
            raise CommandError("race_not_found", f"no finished race {cmd.race_id[:64]!r}")
        frame = entry.frame(cmd.seq)
        if len(frame) > MAX_EVENT_FRAME:
            raise CommandError(
                "record_too_large",
                f"that record is {len(frame)} bytes, over a frame's {MAX_EVENT_FRAME}: "
                f"fetch it over HTTP, GET /races/{cmd.race_id}",
            )
        if not self.record_budget.take(conn.peer, len(frame), now):
            self.count("record_budget_refused")
            wait = self.record_budget.wait_s(conn.peer, now)
            raise CommandError(
                "rate_limited",
                f"race records to your address are limited to {self.limits.record_rate / 1024:.0f}"
                f" KiB a second: try again in {wait:.0f} s",
            )
        out.reply(conn.id, frame)  # type: ignore[arg-type]  # bytes: sent as they are

    _handlers: ClassVar[dict[type, Callable[..., None]]] = {
        Hello: _hello,
        CreateRoom: _create_room,
        JoinRoom: _join_room,
        Resume: _resume,
        ListRooms: _list_rooms,
        Leave: _leave,
        UpdateSettings: _update_settings,
        Kick: _kick,
        Ready: _ready,
        Start: _start,
        MoveCmd: _move,
        Rematch: _rematch,
        GetRace: _get_race,
    }

    # -- time ------------------------------------------------------------------------------

    def tick(self, now: float) -> Outbox:
        """The passing of time: countdowns, grace periods, time limits, progress, timeouts.

        It runs many times a second, so it looks only at what can be due: members who are away,
        races with a deadline, rooms whose progress changed, and the connections only once the
        earliest of their timeouts can have come."""
        out = Outbox()
        limits = self.limits
        for room in list(self.rooms.values()):
            race = room.race
            if (
                room.state == "countdown"
                and room.countdown_end is not None
                and now >= room.countdown_end
            ):
                self._start_race(room, now, out)
                self._check_end(room, now, out)  # everyone may have left during the countdown
            if room.away and not self._grace(room, now, out):
                continue  # the room closed
            if race is not None and room.state == "racing":
                deadline = race.deadline
                if deadline is not None and now >= deadline:
                    self._check_end(room, now, out)
            if (
                room.progress_dirty
                and race is not None
                and now - room.progress_sent >= limits.progress_interval_s
            ):
                self._send_progress(room, now, out)
        if now >= self._next_sweep:
            self._sweep(now, out)
        return out

    def _grace(self, room: Room, now: float, out: Outbox) -> bool:
        """Seats kept past the grace period are dropped; False if that closed the room."""
        grace = self.limits.grace_s
        dropped = False
        for mid in list(room.away):
            m = room.members.get(mid)
            if m is None or m.away_since is None:
                room.away.discard(mid)
                continue
            if now - m.away_since < grace:
                continue
            race = room.race
            if room.state in ("countdown", "racing") and race is not None and m.id in race.seats:
                # the seat stays, out of the race; after the results the member is removed
                if race.seats[m.id].status == "playing":
                    race.drop(m.id, "disconnected", now)
                    room.progress_dirty = True
                    dropped = True
                    self._event("grace_over", room, m)
            else:
                self._remove_member(room, m, "disconnected", now, out)
                if room.code not in self.rooms:
                    return False
        if dropped:
            self._check_end(room, now, out)
        return True

    def _sweep(self, now: float, out: Outbox) -> None:
        """Close connections that never said hello or stayed idle outside a race; note when the
        next one can be due (a connection's timeouts only move later as it sends)."""
        limits = self.limits
        due = now + min(limits.hello_timeout_s, limits.idle_timeout_s)
        for conn in list(self.conns.values()):
            if not conn.hello:
                at = conn.opened_at + limits.hello_timeout_s
                if now >= at:
                    out.close(conn.id, CLOSE_IDLE, "no hello")
                    continue
                due = min(due, at)
            at = conn.last_seen + limits.idle_timeout_s
            if now >= at:
                if conn.room is None or conn.room.state != "racing":
                    out.close(conn.id, CLOSE_IDLE, "idle")
                    continue
                at = now + 1.0  # racing: look again later, the race will end
            due = min(due, at)
        self._next_sweep = due

    def _start_race(self, room: Room, now: float, out: Outbox) -> None:
        race = room.race
        assert race is not None
        race.start(now)
        room.state = "racing"
        room.countdown_end = None
        for seat in race.seats.values():
            member = room.members.get(seat.id)
            race.set_connected(seat.id, member is not None and member.conn is not None)
        race.wall_started = self.wall()
        if self.store is not None:
            self.store.start_race(race, room.code, room.public_settings(), race.wall_started)
        self.count("races_started")
        self._event("race_started", room, None, race=race.race_id)
        self._room_update(room, out)
        limit = race.time_limit_s * 1000 or None
        for m in room.connected():
            board = race.seats[m.id].state.view() if m.id in race.seats else None
            assert m.conn is not None
            out.send(
                m.conn,
                RaceStart(
                    race_id=race.race_id,
                    commitment=race.commitment,
                    time_limit_ms=limit,
                    board=board,
                ),
            )
        self._send_progress(room, now, out)

    def _check_end(self, room: Room, now: float, out: Outbox) -> None:
        race = room.race
        if race is None or room.state != "racing":
            return
        reason = race.check_end(now)
        if reason is None:
            return
        race.end(now, reason)
        room.state = "results"
        for m in room.members.values():
            m.ready = False
        standings = race.standings()
        over = RaceOver(
            race_id=race.race_id, reason=reason, standings=standings, reveal=race.reveal()
        )  # type: ignore[arg-type]
        room.last_over = over
        record = RaceRecord(
            race_id=race.race_id,
            room=room.code,
            settings=room.public_settings(),
            started_at=race.wall_started if race.wall_started is not None else self.wall(),
            ended_at=self.wall(),
            reveal=over.reveal,
            standings=standings,
            players=[
                PlayerRecord(
                    id=s.id, name=s.name, moves=s.moves, times_ms=s.times_ms, board=s.state.view()
                )
                for s in race.seats.values()
            ],
        )
        self.finished[race.race_id] = record
        while len(self.finished) > 256:
            self.finished.popitem(last=False)
        if self.store is not None:
            self.store.finish_race(record, reason)
        self.count("races_finished")
        self._event(
            "race_over",
            room,
            None,
            race=race.race_id,
            reason=reason,
            winner=standings[0].name if standings else None,
        )
        self._send_progress(room, now, out)
        self._broadcast(room, over, out)
        self._room_update(room, out)

    def _send_progress(self, room: Room, now: float, out: Outbox) -> None:
        race = room.race
        if race is None:
            return
        room.progress_dirty = False
        room.progress_sent = now
        self._broadcast(
            room, ProgressUpdate(elapsed_ms=race.elapsed_ms(now), players=race.progress()), out
        )

    # -- shutdown ---------------------------------------------------------------------------

    def drain(self, retry_ms: int = 5000) -> Outbox:
        """SIGTERM: no new rooms or races; everyone is told to come back; every connection closes 1012."""
        self.draining = True
        out = Outbox()
        for conn in self.conns.values():
            out.send(
                conn.id,
                Notice(
                    code="shutdown",
                    message="the server is restarting: come back in a few seconds (a race in progress cannot go on; finished races are kept)",
                    retry_ms=retry_ms,
                ),
            )
            out.close(conn.id, CLOSE_RESTART, "server restarting")
        return out

    # -- helpers -----------------------------------------------------------------------------

    def _bind(self, conn: Conn, room: Room, member: MemberState) -> None:
        conn.room = room
        conn.member = member
        member.conn = conn.id

    def _close_room(self, room: Room, now: float, out: Outbox) -> None:
        if room.race is not None and room.state == "racing":
            for sid in room.race.seats:
                room.race.drop(sid, "left", now)
            self._check_end(room, now, out)
        self.rooms.pop(room.code, None)
        self._event("room_closed", room, None)

    def _snapshot(self, room: Room, member: MemberState, seq: int, now: float) -> Snapshot:
        race = room.race
        board = None
        if race is not None and member.id in race.seats and room.state != "countdown":
            board = race.seats[member.id].state.view()
        countdown_ms = None
        if room.state == "countdown" and room.countdown_end is not None:
            countdown_ms = max(0, int((room.countdown_end - now) * 1000))
        over = room.last_over if room.state == "results" else None
        return Snapshot(
            seq=seq,
            you=member.id,
            role=member.role,  # type: ignore[arg-type]
            room=room.info(),
            board=board,
            elapsed_ms=race.elapsed_ms(now)
            if race is not None and race.started_at is not None
            else None,
            time_limit_ms=(race.time_limit_s * 1000 or None) if race is not None else None,
            countdown_ms=countdown_ms,
            progress=race.progress() if race is not None and race.started_at is not None else [],
            standings=over.standings if over else None,
            reveal=over.reveal if over else None,
        )

    def _room_update(self, room: Room, out: Outbox, skip: int | None = None) -> None:
        self._broadcast(room, RoomUpdate(room=room.info()), out, skip)

    def _broadcast(self, room: Room, event: Event, out: Outbox, skip: int | None = None) -> None:
        for m in room.members.values():
            if m.conn is not None and m.id != skip:
                out.send(m.conn, event)

    def _event(self, name: str, room: Room, member: MemberState | None, **fields: object) -> None:
        extra = {"event": name, "room": room.code}
        if member is not None:
            extra["player"] = f"{member.id}:{member.name}"
        extra.update({k: v for k, v in fields.items() if v is not None})  # type: ignore[misc]
        log.info(name, extra={"fields": extra})
