"""Rooms, members and connections: the whole server as a plain state machine.

The :class:`Hub` takes commands from connections (``handle``), connection ends (``disconnect``)
and the passing of time (``tick``), and answers each with an :class:`Outbox`: the events to send
to which connection, and the connections to close.  It never touches a socket or a clock: the
websockets layer (``server.app``) does, and tests drive the hub directly.

This module keeps the connections, the rooms and their members (hello, create, join, resume,
leave, kick, settings, the public list, race records, each address's budgets).  What a room does
with its race, from ready to rematch, is :class:`server.lifecycle.RaceLifecycle`; what happens
between commands (the ticks: countdowns, grace periods, time limits, timeouts; restarts and
stopping) is :class:`server.upkeep.Upkeep`; the hub mixes both in.  The outbox, the connection
record and the close codes are in ``server.outbox``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from protocol.codec import MAX_EVENT_FRAME, encode
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    Command,
    CreateRoom,
    Error,
    ErrorCode,
    Event,
    GetRace,
    Hello,
    Joined,
    JoinRoom,
    Kick,
    Kicked,
    Leave,
    ListRooms,
    MoveCmd,
    RaceRecord,
    Ready,
    Redirect,
    Rematch,
    Resume,
    Role,
    RoomList,
    RoomSummary,
    RoomUpdate,
    Snapshot,
    Start,
    UpdateSettings,
    Welcome,
)
from protocol.names import BadName, clashes, normalize

from .durable import LiveRooms
from .host import HostCommands
from .lifecycle import RaceLifecycle
from .limits import (
    NETWORK_SHARE,
    AddressBudgets,
    BudgetKind,
    Limits,
    TokenBucket,
    count_held,
    over_share,
)
from .outbox import (
    CLOSE_BAD_INPUT,
    CLOSE_FLOOD,
    CLOSE_REPLACED,
    CLOSE_VERSION,
    CommandError,
    Conn,
    Outbox,
    Redirected,
)
from .pool import DealPool
from .records import ByteBudget, RecordCache
from .rooms import (
    CODE_ALPHABET,
    CODE_LENGTH,
    MAX_SPECTATORS,
    MemberState,
    Room,
    SeqCache,
    display_code,
    log_label,
    normalize_code,
)
from .store import Store
from .upkeep import Upkeep

__all__ = ["Hub", "MemberState", "Room", "check_name", "display_code", "normalize_code"]

if TYPE_CHECKING:
    from .cluster import Cluster  # (which knows the hub: set by the server, not imported)

log = logging.getLogger("patience_race.server")


MAX_LISTED = 100
"""Public rooms in one list."""
MAX_LISTED_PER_ADDRESS = 5
"""Public rooms of one address (the one that opened them) in one list: a few addresses holding
rooms open filled the whole list, and no room opened after theirs was ever listed."""
ROOM_LIST_S = 1.0
"""How long a list of the public rooms is given out again before it is made anew."""
RECORD_MISS_BYTES = 16 * 1024
"""What a race-record lookup that finds nothing costs its address's record budget."""


def check_name(name: str) -> str:
    """``name`` normalized (``protocol.names``), or ``bad_name`` saying what is wrong with it."""
    try:
        return normalize(name)
    except BadName as exc:
        raise CommandError("bad_name", str(exc)) from None


def _digest(cmd: Command) -> bytes:
    """What tells a command sent again from another one with its number: its fields but the
    number, hashed short."""
    return hashlib.blake2b(encode(cmd.model_copy(update={"seq": 0})), digest_size=8).digest()


def _try_again(bucket: TokenBucket, now: float) -> str:
    """When a budget refused now has room again, in words."""
    return f"try again in {max(1, math.ceil(bucket.wait(now)))} s"


class Hub(Upkeep, HostCommands):
    """Every room and connection of one server process."""

    def __init__(
        self,
        limits: Limits | None = None,
        store: Store | None = None,
        wall: Callable[[], float] = time.time,
        server_name: str = "patience-race",
        pool: DealPool | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.store = store
        self.log_key = store.secret("log-labels") if store is not None else secrets.token_bytes(16)
        """What names private rooms in the logs (:func:`~server.rooms.log_label`)."""
        self.pool = pool
        """Deals certified winnable (``server.pool``), or None: rooms cannot ask for one."""
        self.awaiting_start: set[str] = set()
        """Rooms whose players are all ready, waiting for a certified deal or for their address's
        race budget (:meth:`_race_wait`): the countdown starts by itself then."""
        self.held_by_restart: dict[str, bool] = {}
        """Lobbies ready to start but for players not back yet from a restart: room code ->
        whether one player may race alone; looked at again when the restart's hold is over."""
        self.wall = wall
        self.server_name = server_name
        self.rooms: dict[str, Room] = {}
        self.conns: dict[int, Conn] = {}
        self.per_address: dict[str, int] = {}
        self.rooms_per_address: dict[str, int] = {}
        self.refused_why = ""
        """Why :meth:`connect` last refused a connection."""
        self._rooms_listed: tuple[float, list[RoomSummary]] = (-1.0, [])
        """When the public rooms were last listed, and the list (:meth:`_public_rooms`)."""
        self.budgets = AddressBudgets(self.limits)
        """Each address's budgets for creating rooms, joining them and starting races (bounded)."""
        self.finished: OrderedDict[str, RaceRecord] = OrderedDict()
        """The latest finished races' records (at most :data:`~server.lifecycle.FINISHED_KEPT`,
        and :data:`~server.lifecycle.FINISHED_MOVES` moves in all), the oldest dropped first."""
        self.finished_moves = 0
        self.unannounced: deque[str] = deque(maxlen=4096)
        """Races finished here that a cluster has not yet told the other nodes of (their own
        queue: the records kept in memory may be fewer, bounded by their moves)."""
        self.clock = 0.0
        """The latest time the hub was given (by a command, a connection, a tick): what a room
        update's budget is counted at."""
        self.records = RecordCache(self.limits.record_cache_bytes)
        self.record_budget = ByteBudget(self.limits.record_rate, self.limits.record_burst)
        self.draining = False
        self.metrics: dict[str, int] = {}
        self.live = LiveRooms(store) if store is not None else None
        """Live rooms written down as they change, read back by :meth:`restore`."""
        self.cluster: Cluster | None = None
        """A cluster node's view of the other nodes, or None."""
        self._alive_written = 0.0
        self._wall_offset: float | None = None
        """The wall clock less the monotonic one, as last seen (a step of the wall clock is
        followed: :meth:`~server.upkeep.Upkeep._follow_clock_step`)."""
        self._next_prune = 0.0
        """When the retention next looks for old races to delete (``--keep-days``)."""
        self._next_conn = 1
        self._next_sweep = 0.0
        """No connection can reach its hello or idle timeout before this time."""

    def count(self, name: str, by: int = 1) -> None:
        self.metrics[name] = self.metrics.get(name, 0) + by

    # -- connections ------------------------------------------------------------------------

    def connect(self, now: float, peer: str = "", charged: bool = False) -> int | None:
        """A new connection's id, or None if the server is full or draining, or ``peer`` has as
        many connections as it may (or its IPv6 /48 has) or opens them too fast
        (:attr:`refused_why` says which).  ``charged``: its handshake was charged to the
        address's budget of connections already (as every HTTP request is)."""
        self.clock = now
        if self.draining or len(self.conns) >= self.limits.max_connections:
            self.refused_why = "restarting" if self.draining else "server_full"
            return None
        if peer and over_share(self.per_address, peer, self.limits.max_per_address):
            self.count("refused_per_address")
            # (its IPv6 /48 full, not this /64: said, and logged, as the network's)
            mine = self.per_address.get(peer, 0) >= self.limits.max_per_address
            self.refused_why = "too_many_connections" if mine else "network_full"
            return None
        if peer and not charged and not self.budget(peer, now, "connects").take(now):
            self.count("refused_connect_rate")
            self.refused_why = "connecting_too_fast"
            return None
        if peer:
            count_held(self.per_address, peer, 1)
        cid = self._next_conn
        self._next_conn += 1
        self._next_sweep = min(self._next_sweep, now + self.limits.hello_timeout_s)
        self.conns[cid] = Conn(
            cid, now, TokenBucket(self.limits.rate, self.limits.burst, now), peer, last_seen=now
        )
        return cid

    def disconnect(self, cid: int, now: float) -> Outbox:
        self.clock = now
        out = Outbox()
        conn = self.conns.pop(cid, None)
        if conn is not None and conn.peer:
            count_held(self.per_address, conn.peer, -1)
        if conn is None or conn.room is None or conn.member is None:
            return out
        room, member = conn.room, conn.member
        if member.conn == cid:
            member.conn = None
            member.away_since = now
            room.away.add(member.id)
            if room.race is not None:
                room.race.set_connected(member.id, False, now)
                room.progress_dirty = True
            self._event("disconnected", room, member)
            self._room_update(room, out)
            if room.state == "results" and not self.draining:
                self._rematch_if_agreed(room, now, out)
        return out

    def bad_input(
        self, cid: int, code: ErrorCode, message: str, seq: int | None, now: float
    ) -> Outbox:
        """A frame that could not be read (``seq`` None), or a message refused before it is
        handled: an error, and the connection closed if it goes on (``max_bad`` of them, each
        forgiven after ``bad_forget_s``)."""
        out = Outbox()
        conn = self.conns.get(cid)
        if conn is None:
            return out
        forget = self.limits.bad_forget_s
        if conn.bad and now - conn.bad_at >= forget:
            forgiven = int((now - conn.bad_at) / forget)
            conn.bad = max(0, conn.bad - forgiven)
            conn.bad_at += forgiven * forget
        if not conn.bad:
            conn.bad_at = now
        conn.bad += 1
        self.count(f"bad_input_{code}")
        out.send(cid, Error(seq=seq, code=code, message=message))
        if conn.bad >= self.limits.max_bad:
            out.close(cid, CLOSE_BAD_INPUT, "too many bad messages")
        return out

    # -- commands --------------------------------------------------------------------------

    def handle(self, cid: int, cmd: Command | Event, now: float) -> Outbox:
        self.clock = now
        out = Outbox()
        conn = self.conns.get(cid)
        if conn is None:
            return out
        conn.last_seen = now
        if not conn.bucket.take(now):
            self._rate_limited(conn, getattr(cmd, "seq", None), now, out)
            return out
        if not isinstance(cmd, Command):  # (docs/protocol.md: bad_message, with its seq)
            return self.bad_input(
                cid,
                "bad_message",
                f"{cmd.type} is a server event, not a command",
                getattr(cmd, "seq", None),
                now,
            )
        if not conn.hello and not isinstance(cmd, Hello):
            return self.bad_input(
                cid, "hello_first", "say hello first, with your protocol version", cmd.seq, now
            )
        cache = conn.member.seqs if conn.member else conn.seqs
        kind = (cmd.type, _digest(cmd))
        seen = cache.seen(cmd.seq, kind)
        if isinstance(seen, str):  # a number used, for another command or too long ago
            self.count("rejected_bad_message")
            out.send(cid, Error(seq=cmd.seq, code="bad_message", message=seen))
            return out
        if seen:  # sent again: answered again, never done twice
            for frame in seen:
                out.send(cid, frame)
            self.count("commands_repeated")
            return out
        handler = self._handlers.get(type(cmd))
        try:
            assert handler is not None
            handler(self, conn, cmd, now, out)
        except CommandError as exc:
            out.reply(cid, Error(seq=cmd.seq, code=exc.code, message=exc.message))
            self.count(f"rejected_{exc.code}")
        except Redirected as exc:
            out.reply(cid, Redirect(seq=cmd.seq, code=exc.code, node=exc.node, url=exc.url))
            self.count("redirected")
        self._keep_answer(conn, cmd, cache, kind, out)
        return out

    def _rate_limited(self, conn: Conn, seq: int | None, now: float, out: Outbox) -> None:
        """A command over the connection's budget: refused, not done; past
        ``max_limited`` refusals the connection is closed as flooding."""
        conn.limited += 1
        self.count("rejected_rate_limited")
        wait_ms = max(1, round(conn.bucket.wait(now) * 1000))
        left = self.limits.max_limited - conn.limited
        out.send(
            conn.id,
            Error(
                seq=seq,
                code="rate_limited",
                message=f"too many messages: this one was not done; wait {wait_ms} ms "
                f"(at most {self.limits.rate:g} a second, {self.limits.burst} at once); "
                + (
                    f"{left} more refused and this connection is closed"
                    if left > 0
                    else "this connection is closed"
                ),
            ),
        )
        if conn.limited >= self.limits.max_limited:
            out.close(conn.id, CLOSE_FLOOD, "flooding")

    def _keep_answer(
        self, conn: Conn, cmd: Command, cache: SeqCache, kind: tuple[str, bytes], out: Outbox
    ) -> None:
        """Keep the answer to ``cmd`` under its number (in memory, and written down with the
        seat), so that the same command sent again is answered again, never done twice."""
        if isinstance(cmd, ListRooms | GetRace):
            # read-only and safe to run again: a repeat of its number is answered afresh, and
            # its answer (a list of rooms, a whole race record) is not kept 16 times over
            frames: tuple[bytes, ...] = ()
        else:
            frames = tuple(out.frame(e) for e in out.replies)
        cache.put(cmd.seq, frames, kind)
        member = conn.member
        if self.live is not None and member is not None and conn.room is not None:
            # answers carrying a token or a whole snapshot are not written down, only their number
            # (a read-only command's empty answer is kept as such: after a restart its number
            # is still answered afresh, not refused as used)
            keep = not isinstance(cmd, CreateRoom | JoinRoom | Resume)
            self.live.answer(
                conn.room.code, member.id, cmd.seq, frames if keep else None, kind if keep else None
            )
        if isinstance(cmd, CreateRoom | JoinRoom) and conn.member is not None:
            # a new seat: its numbers go on from this connection's, so that a create or join
            # sent again (its answer lost) is answered again rather than refused
            conn.member.seqs.adopt(cache)
        elif isinstance(cmd, Resume) and conn.member is not None:
            # a seat taken back: its numbers go on past the resume's (the snapshot's next_seq),
            # so that one below it is refused as used, not run as new
            conn.member.seqs.highest = max(conn.member.seqs.highest, cache.highest)
        elif cache is not conn.seqs and conn.member is None:
            # out of the room (left, kicked, closed): the seat's numbers stay this connection's
            # (a leave sent again was not_in_room, and a number the seat used ran again)
            conn.seqs.adopt(cache)

    def _hello(self, conn: Conn, cmd: Hello, now: float, out: Outbox) -> None:
        if conn.hello:
            raise CommandError("bad_message", "hello is said once, as a connection's first command")
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
                grace_ms=round(self.limits.grace_s * 1000),
            ),
        )

    def _create_room(self, conn: Conn, cmd: CreateRoom, now: float, out: Outbox) -> None:
        if conn.room is not None:
            raise CommandError("already_in_room", "leave your room first")
        if self.draining:
            raise CommandError("shutting_down", "the server is restarting: no new rooms")
        if len(self.rooms) >= self.limits.max_rooms:
            raise CommandError(
                "too_many_rooms", "the server holds as many rooms as it can: try later"
            )
        peer = conn.peer
        most = self.limits.max_rooms_per_address
        if peer and over_share(self.rooms_per_address, peer, most):
            self.count("rooms_refused_per_address")
            if self.rooms_per_address.get(peer, 0) < most:  # its IPv6 /48's share
                most, whose = NETWORK_SHARE * most, "your network (its IPv6 /48)"
            else:
                whose = "your address"
            held = "1 open room" if most == 1 else f"{most} open rooms"
            raise CommandError("too_many_rooms", f"{whose} already holds {held}: leave one first")
        name = check_name(cmd.name)
        config = self._check_settings(cmd.settings, 1)
        if peer and not (rooms := self.budget(peer, now)).take(now):
            self.count("rooms_refused_rate")
            raise CommandError(
                "rate_limited",
                f"your address is opening rooms too fast: {_try_again(rooms, now)}",
            )
        code = self._new_code()
        room = Room(code, cmd.settings, config, now, owner=peer)
        self.rooms[code] = room
        self._rooms_listed = (-1.0, [])  # a new room is listed at once
        if peer:
            count_held(self.rooms_per_address, peer, 1)
        member, token = room.add(name, "player", now)
        self._bind(conn, room, member)
        self.count("rooms_created")
        self._event(
            "room_created",
            room,
            member,
            game=config.title,
            private=cmd.settings.private,
            address=peer or None,
        )
        out.reply(
            conn.id,
            Joined(seq=cmd.seq, you=member.id, role="player", token=token, room=room.info()),
        )

    def budget(self, peer: str, now: float, kind: BudgetKind = "rooms") -> TokenBucket:
        """The client address ``peer``'s budget of one ``kind`` (:class:`AddressBudgets`)."""
        return self.budgets.get(peer, now, kind)

    def _new_code(self) -> str:
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if code not in self.rooms and (
                self.cluster is None or code not in self.cluster.directory.where
            ):
                return code

    def _room(self, code: str) -> Room:
        room = self.rooms.get(normalize_code(code))
        if room is None and self.cluster is not None:
            held = self.cluster.locate(normalize_code(code))
            if held is not None:
                raise Redirected(normalize_code(code), *held)
        if room is None:
            raise CommandError("room_not_found", f"no room {code[:16]!r}: check the code")
        return room

    def _join_room(self, conn: Conn, cmd: JoinRoom, now: float, out: Outbox) -> None:
        if conn.room is not None:
            raise CommandError("already_in_room", "leave your room first")
        # the budget is charged before the code is looked up: a wrong code costs as much as a
        # right one (misses were free: 550 guesses a second at private codes from one address)
        joins = self.budget(conn.peer, now, "joins") if conn.peer else None
        if joins is not None and not joins.take(now):
            self.count("joins_refused_rate")
            raise CommandError(
                "rate_limited",
                f"your address is joining rooms too fast: {_try_again(joins, now)}",
            )
        room = self._room(cmd.code)
        try:
            self._join_found(conn, room, cmd, now, out)
        except CommandError:
            # the code was right: a name taken or a full room costs no join (a bot trying Bot,
            # Bot 2, Bot 3... spent one on each, and the next room's bots were refused)
            if joins is not None:
                joins.give_back()
            raise

    def _join_found(self, conn: Conn, room: Room, cmd: JoinRoom, now: float, out: Outbox) -> None:
        until = room.kept_out(conn.peer, now)
        if until is not None:
            raise CommandError(
                "rate_limited",
                "the host removed you from this room: you may join it again in "
                f"{max(1, round((until - now) / 60))} min",
            )
        name = check_name(cmd.name)
        taken = clashes(name, [m.name for m in room.members.values()])
        ghost = next((m for m in room.members.values() if m.name == taken), None)
        if (
            ghost is not None
            and ghost.role == "spectator"
            and ghost.conn is None
            and not ghost.wants_seat
            and not ghost.bot
            and ghost.peer == conn.peer
        ):
            # a watcher gone (a terminal closed) and back from the same address under the same
            # name: the old one goes (it held the name and a watcher's place for the grace:
            # "hal 2", or refused with --name; a watcher's token is not kept, nothing to lose)
            self._remove_member(room, ghost, "left", now, out)
            if room.code not in self.rooms:
                raise CommandError("room_not_found", "this room has just closed")
            taken = clashes(name, [m.name for m in room.members.values()])
        if taken is not None:
            # (names quoted: a name may end in punctuation, "Ann." came out as "as Ann..")
            what = f"“{taken}”" + ("" if taken == name else f", which looks the same as “{name}”")
            raise CommandError("name_taken", f"someone in this room is already called {what}")
        seat_free = room.state == "lobby" and len(room.players()) < room.settings.seats
        role: Role = "player" if seat_free and not cmd.spectate else "spectator"
        if role == "spectator" and len(room.spectators()) >= MAX_SPECTATORS:
            if seat_free:  # (a watcher told "full" with a seat free: a spectators trial)
                raise CommandError(
                    "room_full",
                    f"this room has {MAX_SPECTATORS} watchers, the most it takes: a seat is "
                    "free (join to race)",
                )
            raise CommandError("room_full", "this room is full")
        member, token = room.add(name, role, now, bot=cmd.bot)
        member.wants_seat = role == "spectator" and not cmd.spectate
        self._bind(conn, room, member)
        self._event("joined", room, member, role=role, address=conn.peer or None)
        out.reply(
            conn.id,
            Joined(seq=cmd.seq, you=member.id, role=role, token=token, room=room.info()),
        )
        if room.state != "lobby":
            out.reply(conn.id, self._snapshot(room, member, cmd.seq, now))
        self._room_update(room, out, skip=member.id)

    def _resume(self, conn: Conn, cmd: Resume, now: float, out: Outbox) -> None:
        peer = conn.peer
        if peer and not (resumes := self.budget(peer, now, "resumes")).take(now):
            # each resume tells the whole room (a room event): 300 a second from one address
            # got the others cut for not reading fast enough
            self.count("resumes_refused_rate")
            raise CommandError(
                "rate_limited",
                f"your address is taking seats back too fast: {_try_again(resumes, now)}",
            )
        try:
            room = self._room(cmd.code)
            member = room.holder(cmd.token)
            if member is None and room.was_kicked(cmd.token, now):
                until = room.kept_out(conn.peer, now)
                # (how long is said, as to a join: a verification trial)
                left = (
                    f": you may join it again in {max(1, round((until - now) / 60))} min"
                    if until is not None
                    else ""
                )
                raise CommandError(
                    "bad_token", f"the host removed you from room {display_code(room.code)}{left}"
                )
            if member is None:
                raise CommandError("bad_token", "that token holds no seat in this room")
        except CommandError:
            # a resume that misses is a guess at a code or a token: charged as a join, and
            # once the address has no join left its misses say nothing (a resume that finds its
            # seat is never refused for joins: a club behind one address joined together)
            if peer and not (joins := self.budget(peer, now, "joins")).take(now):
                self.count("resumes_refused_rate")
                raise CommandError(
                    "rate_limited",
                    f"your address is guessing at seats too fast: {_try_again(joins, now)}",
                ) from None
            raise
        if conn.room is not None and conn.member is not member:
            raise CommandError("already_in_room", "leave your room first")
        if member.conn is not None and member.conn != conn.id:
            old = self.conns.get(member.conn)
            if old is not None:
                self._unbind(old)
                out.close(old.id, CLOSE_REPLACED, "this seat was resumed on another connection")
        self._bind(conn, room, member)
        member.away_since = None
        room.away.discard(member.id)
        if room.race is not None:
            room.race.set_connected(member.id, True)
            room.progress_dirty = True
        self._event("resumed", room, member, address=conn.peer or None)
        out.reply(conn.id, self._snapshot(room, member, cmd.seq, now))
        if room.state == "lobby" and member.role == "player" and member.ready:
            # back and ready: a start that waited on those away may go now (with everyone
            # ready and back it waited for ever); its room update goes to everyone
            self._countdown_if_all_ready(room, now, out)
        else:
            self._room_update(room, out, skip=member.id)

    def _list_rooms(self, conn: Conn, cmd: ListRooms, now: float, out: Outbox) -> None:
        out.reply(conn.id, RoomList(seq=cmd.seq, rooms=self._public_rooms(now)))

    def _public_rooms(self, now: float) -> list[RoomSummary]:
        """Up to 100 public rooms, those one can join first (a lobby with a free seat), then
        those racing, then those in their results, the newest first in each, at most
        :data:`MAX_LISTED_PER_ADDRESS` opened by one address; made at most once a second, and
        again when a room opens or closes (players and states a second old are as good to a
        person; made for each call from every room, the list let one address saturate a core)."""
        made, rooms = self._rooms_listed
        if now - made < ROOM_LIST_S and made >= 0:
            return rooms

        def order(r: Room) -> tuple[int, float]:
            if r.state == "lobby":
                rank = 0 if len(r.players()) < r.settings.seats else 1
            else:
                rank = 2 if r.state in ("countdown", "racing") else 3
            return (rank, -r.created)

        rooms = []
        per_address: dict[str, int] = {}
        for r in sorted((r for r in self.rooms.values() if not r.settings.private), key=order):
            if r.owner and per_address.get(r.owner, 0) >= MAX_LISTED_PER_ADDRESS:
                continue
            per_address[r.owner] = per_address.get(r.owner, 0) + 1
            rooms.append(r.summary())
            if len(rooms) >= MAX_LISTED:
                break
        if self.cluster is not None and len(rooms) < MAX_LISTED:
            rooms += self.cluster.remote_summaries(MAX_LISTED - len(rooms))
        self._rooms_listed = (now, rooms)
        return rooms

    def _leave(self, conn: Conn, cmd: Leave, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._unbind(conn)
        self._remove_member(room, member, "left", now, out)

    def _remove_member(
        self,
        room: Room,
        member: MemberState,
        why: str,
        now: float,
        out: Outbox,
        by: MemberState | None = None,
    ) -> None:
        if room.race is not None and room.state in ("countdown", "racing"):
            room.race.drop(member.id, "disconnected" if why == "seat_released" else "left", now)
            room.race.set_connected(member.id, False)  # gone: apart from a racer out for idling
            room.progress_dirty = True
        room.remove(member.id)
        if self.live is not None:
            self.live.forget_member(room.code, member.id)
        self._event(why, room, member, by=f"{by.id}:{by.name}" if by is not None else None)
        if not room.members:
            self._close_room(room, now, out)
            return
        self._room_update(room, out)
        self._check_end(room, now, out)
        self._close_if_only_bots(room, now, out)
        if room.code in self.rooms:
            self._after_departure(room, now, out)

    def _after_departure(self, room: Room, now: float, out: Outbox) -> None:
        """Someone left or dropped: the rest may now all have asked for the rematch (results),
        or all be ready (lobby), and must not wait for the one who went."""
        if room.state == "results":
            self._rematch_if_agreed(room, now, out)
        elif room.state == "lobby":
            if self._seat_waiting(room):
                self._room_update(room, out)
            self._countdown_if_all_ready(room, now, out)

    def _seat_waiting(self, room: Room) -> list[MemberState]:
        """Spectators who came to play (joined, not watching) take the seats free now, not
        ready (back in the lobby after a race, someone gone, or seats added); those seated."""
        players = len(room.players())
        seated: list[MemberState] = []
        for m in room.spectators():
            if m.wants_seat and players < room.settings.seats:
                m.role = "player"
                m.wants_seat = False
                m.ready = False
                players += 1
                seated.append(m)
        return seated

    def _close_if_only_bots(self, room: Room, now: float, out: Outbox) -> None:
        """A room left with no person to play, out of a race, closes: only bots, or bots and
        people who only watch, where nobody could start a race
        (the room stayed listed, and whoever joined it watched for ever; left in a countdown, a
        watcher became host and raced nobody).  The deal of a countdown is never revealed."""
        if room.state == "racing" or room.code not in self.rooms:
            return
        if not room.members:
            return
        if all(m.bot for m in room.members.values()):
            self._close_room(room, now, out, "only bots were left in the room")
        elif not any(
            not m.bot and (m.role == "player" or m.wants_seat) for m in room.members.values()
        ):
            # on the results too: a room of watchers (and bots) stayed listed, its next race
            # promised to those who joined, and no one there could start it (a spectators
            # trial); the watchers' results stay on their screens
            self._close_room(room, now, out, "no player was left in the room")

    def _membership(self, conn: Conn) -> tuple[Room, MemberState]:
        if conn.room is None or conn.member is None:
            raise CommandError("not_in_room", "you are not in a room")
        return conn.room, conn.member

    def _host_only(self, conn: Conn) -> tuple[Room, MemberState]:
        room, member = self._membership(conn)
        if room.host != member.id:
            raise CommandError("not_host", "only the host can do that")
        return room, member

    def _get_race(self, conn: Conn, cmd: GetRace, now: float, out: Outbox) -> None:
        """A finished race's record, from the encoded-record cache, within the address's byte
        budget (server/records.py); one held by another node of a cluster is redirected there."""
        if not self.record_budget.open(conn.peer, now):  # before any lookup: it costs
            self.count("record_budget_refused")
            raise CommandError("rate_limited", self._record_wait(conn.peer, now))
        entry = self.records.lookup(cmd.race_id, self.finished, self.store)
        if entry is None and self.cluster is not None:
            held = self.cluster.locate_race(cmd.race_id)
            if held is not None:
                raise Redirected(cmd.race_id, *held)
        if entry is None:
            # a lookup that finds nothing still read the database: charged as a small record
            self.record_budget.take(conn.peer, RECORD_MISS_BYTES, now)
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
            raise CommandError("rate_limited", self._record_wait(conn.peer, now))
        out.reply(conn.id, frame)  # type: ignore[arg-type]  # bytes: sent as they are

    def _record_wait(self, peer: str, now: float) -> str:
        wait = self.record_budget.wait_s(peer, now)
        return (
            f"race records to your address are limited to {self.limits.record_rate / 1024:.0f}"
            f" KiB a second: try again in {wait:.0f} s"
        )

    _handlers: ClassVar[dict[type, Callable[..., None]]] = {
        Hello: _hello,
        CreateRoom: _create_room,
        JoinRoom: _join_room,
        Resume: _resume,
        ListRooms: _list_rooms,
        Leave: _leave,
        UpdateSettings: HostCommands._update_settings,
        Kick: HostCommands._kick,
        Ready: RaceLifecycle._ready,
        Start: RaceLifecycle._start,
        MoveCmd: RaceLifecycle._move,
        Rematch: RaceLifecycle._rematch,
        GetRace: _get_race,
    }

    # -- helpers -----------------------------------------------------------------------------

    def _unbind(self, conn: Conn) -> None:
        """``conn`` is out of its room: the numbers its seat used stay used (see :meth:`handle`)."""
        if conn.member is not None:
            conn.seqs.adopt(conn.member.seqs)
        conn.room = conn.member = None

    def _bind(self, conn: Conn, room: Room, member: MemberState) -> None:
        conn.room = room
        conn.member = member
        member.conn = conn.id
        member.peer = conn.peer

    def _close_room(self, room: Room, now: float, out: Outbox, why: str = "") -> None:
        self._give_back_deal(room)  # (a countdown's: its race never began)
        if room.race is not None and room.state == "racing":
            # stopped as it stands, its players still racing "playing" (docs/protocol.md): it
            # was "everyone has finished", each dropped as "left", shown "idle" (a records trial)
            self._check_end(room, now, out, "aborted")
        self._rooms_listed = (-1.0, [])  # and a room gone is gone from the list at once
        if self.rooms.pop(room.code, None) is None:
            return
        if self.live is not None:
            self.live.forget(room.code)
        if room.owner:
            count_held(self.rooms_per_address, room.owner, -1)
        for m in list(room.members.values()):
            conn = self.conns.get(m.conn) if m.conn is not None else None
            if conn is not None and conn.room is room:
                self._unbind(conn)
                out.send(conn.id, Kicked(message=f"room {display_code(room.code)} closed: {why}"))
        self._event("room_closed", room, None, why=why or None)

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
            next_seq=max(member.seqs.highest, seq) + 1,
            you=member.id,
            role=member.role,
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
        """The room changed: written down at once, and sent to its members within the room's
        budget of updates (past it, with the next one: :meth:`_flush_room_update`)."""
        self._save(room)
        if room.updates is None:
            room.updates = TokenBucket(
                self.limits.room_update_rate, self.limits.room_update_burst, self.clock
            )
        if (
            room.code in out.rooms_sent
            or room.updates.take(self.clock)
            or room.state != room.state_sent
        ):
            self._send_room(room, out, skip)
        else:
            room.update_pending = True

    def _flush_room_update(self, room: Room, now: float, out: Outbox) -> None:
        """A change held back by the room's budget of updates, sent once the budget allows."""
        assert room.updates is not None
        if room.updates.take(now):
            self._send_room(room, out)

    def _send_room(self, room: Room, out: Outbox, skip: int | None = None) -> None:
        out.rooms_sent.add(room.code)
        room.update_pending = False
        room.state_sent = room.state
        self._broadcast(room, RoomUpdate(room=room.info()), out, skip)

    def _save(self, room: Room) -> None:
        """Write the room down (``server.durable``): every change members can see goes through
        :meth:`_room_update`, and the few they cannot (a seat dropped) call this."""
        if self.live is not None and room.code in self.rooms:
            self.live.save(room, room.code in self.awaiting_start)

    def _broadcast(self, room: Room, event: Event, out: Outbox, skip: int | None = None) -> None:
        for m in room.members.values():
            if m.conn is not None and m.id != skip:
                out.send(m.conn, event)

    def _event(self, name: str, room: Room, member: MemberState | None, **fields: object) -> None:
        # (a public room's code as players see and type it; a private room's label)
        label = log_label(room.code, room.settings.private, self.log_key)
        extra: dict[str, object] = {"event": name, "room": label}
        if member is not None:
            extra["player"] = f"{member.id}:{member.name}"
        extra.update({k: v for k, v in fields.items() if v is not None})
        log.info(name, extra={"fields": extra})
