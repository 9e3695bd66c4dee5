"""A stateful property test of the hub: up to six connections from three addresses send random
command sequences (the ones that make progress, and wrong ones: bad codes, others' ids, stale
and reused numbers, spectators playing, commands out of their state, random moves) while time
passes in small and large steps, and after every step the promises of docs/protocol.md and of
the hub's docstrings are checked: one direct answer per command (two for a join during a race),
a refusal or a repeat changes nothing, connections and seats point at each other, no board but
one's own and no deal number or salt before the end, bounded tables, sound standings, and what
the tick must have done (countdowns, grace periods, time limits).

The machine drives :class:`server.hub.Hub` with :class:`tests.test_hub.Harness`'s fake clock and
small limits, and a seeded ``secrets`` so that every run is the same.  The tests at the end are
cases it found, each fixed since (and tests/test_hub.py has more).
"""

from __future__ import annotations

import base64
import random
import secrets
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import protocol.config
import server.hub
import server.lifecycle
import server.race
import server.rooms
from protocol import cards
from protocol.codec import encode
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    Command,
    CreateRoom,
    Error,
    Event,
    GetRace,
    Hello,
    Joined,
    JoinRoom,
    Kick,
    Leave,
    ListRooms,
    MoveCmd,
    Moved,
    ProgressUpdate,
    RaceOver,
    RaceRecordMsg,
    RaceStart,
    Ready,
    Rematch,
    Resume,
    RoomList,
    Settings,
    Snapshot,
    Start,
    UpdateSettings,
    Welcome,
    WireMove,
    to_wire,
)
from protocol.moves import UNKNOWN
from server.outbox import Outbox
from server.race import Race
from server.rooms import MAX_KEPT_OUT, MAX_SPECTATORS, SeqCache, display_code

from .server_helpers import decode, leaves
from .test_hub import Harness

# -- the world the machine plays in -----------------------------------------------------------

LIMITS: dict[str, Any] = {
    "countdown_ms": 100,
    "grace_s": 1.0,
    "progress_interval_s": 0.1,
    "abandoned_s": 2.0,
    "hello_timeout_s": 3.0,
    "idle_timeout_s": 40.0,
    "race_idle_s": 8.0,
    "stuck_undo_s": 3.0,
    "kicked_out_s": 5.0,
    "rate": 5.0,
    "burst": 30,
    "max_limited": 20,
    "max_bad": 4,
    "max_per_address": 3,
    "connect_burst": 40,
    "connect_rate": 2.0,
    "max_rooms": 4,
    "max_rooms_per_address": 2,
    "room_create_burst": 3,
    "room_create_rate": 0.2,
    "join_burst": 5,
    "join_rate": 0.5,
    "resume_burst": 4,
    "resume_rate": 1.0,
    "race_burst": 3,
    "race_rate": 0.1,
    "record_rate": 4000.0,
    "record_burst": 30000,
}
PEERS = ("10.0.0.1", "10.0.0.2", "10.0.0.3")
MAX_OPEN = 6
NAMES = ("Ann", "Bob", "Cy", "Dee", "Eve", "ann", "Ánn", "Bot", "  ", "[x]")
SETTINGS = (
    Settings(game="spider", options={"suits": 1}),
    Settings(game="spider", options={"suits": 1}, mode="score", time_limit=4),
    Settings(game="st-helena", seats=2),
    Settings(game="louis", undo="off", time_limit=6),
    Settings(game="spider", options={"suits": 1}, deal_number=123456789012, private=True),
    Settings(game="spider", options={"suits": 1}, seats=2, private=True),
    Settings(mode="score"),  # bad_settings: score needs a time limit
    Settings(game="louis", numbering="xpat2"),  # bad_settings
    Settings(winnable=True),  # bad_settings: this hub certifies no deals
    Settings(game="spider", options={"suits": 3}),  # bad_settings
)
ANSWERS: dict[str, tuple[type[Event], ...]] = {
    "hello": (Welcome,),
    "create_room": (Joined,),
    "join_room": (Joined,),
    "resume": (Snapshot,),
    "list_rooms": (RoomList,),
    "leave": (Ack,),
    "update_settings": (Ack,),
    "kick": (Ack,),
    "ready": (Ack,),
    "start": (Ack,),
    "move": (Moved,),
    "rematch": (Ack,),
    "get_race": (RaceRecordMsg,),
}
CHECK_SEQ_ACROSS_SEATS = True
"""Resend a command after the seat it was sent in is gone (left, kicked): it found that the
seat's numbers were forgotten (test_a_number_used_in_a_seat_is_not_taken_again_after_leave)."""


@dataclass
class Sent:
    seq: int
    cmd: Command
    frames: tuple[bytes, ...]
    domain: tuple[Any, ...]
    """Whose numbers the seq was: the connection's, or a seat's (docs/protocol.md)."""


@dataclass
class ConnModel:
    cid: int
    peer: str
    next_seq: int = 0
    sent: list[Sent] = field(default_factory=list)
    race_overs: set[str] = field(default_factory=set)


class SeededSecrets:
    """``secrets`` for the hub's modules, from a seeded generator: room codes, tokens, race ids,
    salts and deals the same on every run, so that hypothesis can replay and shrink a run."""

    compare_digest = staticmethod(secrets.compare_digest)

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choice(self, seq: Any) -> Any:
        return self.rng.choice(seq)

    def randbelow(self, n: int) -> int:
        return self.rng.randrange(n)

    def token_bytes(self, n: int = 32) -> bytes:
        return self.rng.randbytes(n)

    def token_hex(self, n: int = 32) -> str:
        return self.token_bytes(n).hex()

    def token_urlsafe(self, n: int = 32) -> str:
        return base64.urlsafe_b64encode(self.token_bytes(n)).rstrip(b"=").decode()


SEEDED = (server.hub, server.rooms, server.race, server.lifecycle, protocol.config)


class HubMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        fake = SeededSecrets(0)
        self._saved = [(m, m.secrets) for m in SEEDED]  # type: ignore[attr-defined]
        for m in SEEDED:
            m.secrets = fake  # type: ignore[attr-defined]
        self.h = Harness(**LIMITS)
        self.hub = self.h.hub
        self.open: dict[int, ConnModel] = {}
        self.tokens: list[tuple[str, str]] = []
        self.races: dict[str, Race] = {}
        """Every race seen, by id: even one dropped in its countdown (never to be revealed)."""
        self.tokens_seen = 0
        self.history: dict[int, list[Command]] = {}
        """Every command answered by the hub's handlers, by number: what a number already used
        may be answered as again."""

    def teardown(self) -> None:
        for m, real in self._saved:
            m.secrets = real  # type: ignore[attr-defined]

    # -- plumbing ---------------------------------------------------------------------------

    def _pick(self, i: int, only: Any = None) -> ConnModel | None:
        conns = [c for c in sorted(self.open.values(), key=lambda c: c.cid) if not only or only(c)]
        return conns[i % len(conns)] if conns else None

    def _member(self, c: ConnModel) -> Any:
        conn = self.hub.conns.get(c.cid)
        return None if conn is None else conn.member

    def _room_of(self, c: ConnModel) -> Any:
        conn = self.hub.conns.get(c.cid)
        return None if conn is None else conn.room

    def _domain(self, c: ConnModel) -> tuple[Any, ...]:
        conn = self.hub.conns[c.cid]
        if conn.member is not None and conn.room is not None:
            return ("seat", conn.room.code, conn.member.id)
        return ("conn", c.cid)

    def _scan_races(self) -> None:
        for room in self.hub.rooms.values():
            if room.race is not None:
                self.races.setdefault(room.race.race_id, room.race)

    def _visible(self) -> Any:
        """What members can see of every room, and who is bound where."""
        rooms = {}
        for code, r in self.hub.rooms.items():
            race = r.race
            rooms[code] = (
                r.state,
                r.host,
                r.settings.model_dump(),
                tuple(
                    (
                        m.id,
                        m.name,
                        m.role,
                        m.ready,
                        m.conn,
                        m.bot,
                        m.rematch,
                        m.wants_seat,
                    )
                    for m in r.members.values()
                ),
                race.race_id if race else None,
                tuple(
                    (s.id, s.status, s.state.moves, s.state.undos, s.state.resigned)
                    for s in race.seats.values()
                )
                if race
                else (),
            )
        bound = {
            cid: (c.room.code if c.room else None, c.member.id if c.member else None)
            for cid, c in self.hub.conns.items()
        }
        return rooms, bound

    def _deliver(self, out: Outbox) -> list[tuple[int, Event]]:
        """Check every event of ``out`` and close what it closes (as server.app does: the
        connection ends, and the hub hears of it)."""
        self._scan_races()
        sent: list[tuple[int, Event]] = []
        for cid, ev in out.sends:
            if isinstance(ev, bytes):
                event: Event = decode(ev)  # type: ignore[assignment]
            else:
                encode(ev)  # everything the hub sends can go on the wire
                event = ev
            sent.append((cid, event))
            self._check_event(cid, event, cached=isinstance(ev, bytes))
        for close in out.closes:
            if close.conn in self.open:
                del self.open[close.conn]
                more = self.hub.disconnect(close.conn, self.h.now)
                sent += self._deliver(more)
        return sent

    def _check_event(self, cid: int, event: Event, cached: bool = False) -> None:
        """``cached``: an answer sent again as it was (its board is the one of then)."""
        assert cid in self.open or cid in self.hub.conns, f"{event.type} sent to closed {cid}"
        # no deal number or salt before that race is over
        dump = event.model_dump()
        revealed = None
        if isinstance(event, RaceOver | Snapshot) and event.reveal is not None:
            revealed = event.reveal
            dump.pop("reveal")
        if isinstance(event, RaceRecordMsg):
            revealed = event.record.reveal
            dump = {}
        if revealed is not None:
            race = next(
                (r for r in self.races.values() if r.salt == revealed.salt),
                None,
            )
            assert race is not None and race.ended_at is not None, "a reveal before the end"
        secrets_ = {}
        for r in self.races.values():
            if r.ended_at is None:
                secrets_[r.salt] = r.race_id
                if r.number >= 10**6:
                    secrets_[str(r.number)] = r.race_id
        if secrets_:
            for leaf in leaves(dump):  # (field names too: none is a salt)
                if isinstance(leaf, int) and not isinstance(leaf, bool):
                    leaf = str(leaf)
                if isinstance(leaf, str):
                    for s in secrets_:
                        assert s not in leaf, (
                            f"{event.type} to {cid} tells race {secrets_[s]}'s deal"
                        )
        # a board only to its own player, as their own view
        board = getattr(event, "board", None)
        if isinstance(event, RaceStart | Snapshot):
            conn = self.hub.conns.get(cid)
            member = conn.member if conn is not None else None
            room = conn.room if conn is not None else None
            race = room.race if room is not None else None
            if board is not None and not cached:
                assert member is not None and race is not None and member.id in race.seats
                assert board == race.seats[member.id].state.view(), "not the player's board"
                assert member.role == "player"
        if isinstance(event, Moved) and not cached:  # (a repeat: the board of then)
            conn = self.hub.conns[cid]
            assert conn.member is not None and conn.room is not None
            race = conn.room.race or self.races.get(
                conn.room.last_over.race_id if conn.room.last_over else ""
            )
            assert race is not None
            state = race.seats[conn.member.id].state
            visible = {
                cards.name(c) for p, d in zip(state.piles, state.down, strict=True) for c in p[d:]
            }
            visible |= {cards.name(c) for f in state.foundations for c in f if c != UNKNOWN}
            for s in event.shown:
                assert s.card in visible, f"moved showed {s.card}, which is not face up"
        if isinstance(event, RaceOver):
            race = self.races[event.race_id]
            ids = [s.id for s in event.standings]
            assert sorted(ids) == sorted(race.seats), "standings are not the race's players"
            assert [s.rank for s in event.standings] == list(range(1, len(ids) + 1))
            model = self.open.get(cid)
            if model is not None:
                assert event.race_id not in model.race_overs, "race_over twice"
                model.race_overs.add(event.race_id)
        if isinstance(event, ProgressUpdate):
            conn = self.hub.conns.get(cid)
            room = conn.room if conn is not None else None
            if room is not None and room.race is not None:  # (else it closed since)
                assert {p.id for p in event.players} <= set(room.race.seats)

    def _send(self, c: ConnModel, cmd: Command, *, repeat: Sent | None = None) -> list[Event]:
        """Send ``cmd``; check the answer count, its kind, and that a refusal (or a repeat)
        changed nothing."""
        cid = c.cid
        domain = self._domain(c)
        self._scan_races()
        before_rooms, before_bound = self._visible()
        out = self.hub.handle(cid, cmd, self.h.now)
        after_rooms, after_bound = self._visible()  # (before the closes it asks for are done)
        sent = self._deliver(out)
        answers = [e for to, e in sent if to == cid and getattr(e, "seq", None) == cmd.seq]
        answers_raw = [encode(e) for e in answers]
        assert answers, f"no answer to {cmd.type} seq {cmd.seq}"
        kinds = [type(a) for a in answers]
        if len(answers) == 2:
            assert kinds == [Joined, Snapshot], f"two answers to {cmd.type}: {kinds}"
            assert answers[1].room.state != "lobby"  # type: ignore[attr-defined]
        else:
            assert len(answers) == 1, f"{len(answers)} answers to {cmd.type}: {kinds}"
        first = answers[0]
        assert isinstance(first, ANSWERS[cmd.type] + (Error,)), f"{cmd.type} answered {first.type}"
        limited = isinstance(first, Error) and first.message.startswith("too many messages")
        if isinstance(first, Error) or (repeat is not None and answers_raw == list(repeat.frames)):
            member = self._member(c)
            skip = None
            if isinstance(first, Error) and first.code == "not_ready" and member is not None:
                skip = member.id  # (the host's start is their ready too, refused or not)
            before_rooms = self._visible_masked(before_rooms, skip)
            after_rooms = self._visible_masked(after_rooms, skip)
            assert after_rooms == before_rooms, (
                f"{cmd.type} answered {first.type} {getattr(first, 'code', '')} "
                f"{getattr(first, 'message', '')!r} changed a room: {before_rooms} -> {after_rooms}"
            )
            assert after_bound == before_bound, f"{cmd.type} refused or repeated changed a binding"
        if not limited and cid in self.open:
            c.sent.append(Sent(cmd.seq, cmd, tuple(answers_raw), domain))
            del c.sent[:-40]
        if not limited and repeat is None:
            self.history.setdefault(cmd.seq, []).append(cmd)
        if repeat is None:
            c.next_seq = max(c.next_seq, cmd.seq + 1)
        if isinstance(first, Snapshot) and cid in self.open:
            c.next_seq = max(c.next_seq, first.next_seq)
        if isinstance(first, Joined):
            self.tokens.append((first.room.code, first.token))
        return answers

    def _visible_masked(self, visible: Any, skip: int | None) -> Any:
        if skip is None:
            return visible
        rooms = {}
        for code, (state, host, s, members, rid, seats) in visible.items():
            members = tuple((*m[:3], None if m[0] == skip else m[3], *m[4:]) for m in members)
            rooms[code] = (state, host, s, members, rid, seats)
        return rooms

    def _cmd(self, c: ConnModel, cls: type[Command], **kw: Any) -> list[Event]:
        return self._send(c, cls(seq=c.next_seq, **kw))

    # -- rules: connections and time ---------------------------------------------------------

    @precondition(lambda self: len(self.open) < MAX_OPEN)
    @rule(peer=st.integers(0, len(PEERS) - 1), hello=st.sampled_from([True, True, True, False]))
    def connect(self, peer: int, hello: bool) -> None:
        cid = self.hub.connect(self.h.now, PEERS[peer])
        if cid is None:
            return
        c = self.open[cid] = ConnModel(cid, PEERS[peer])
        if hello:
            self._cmd(c, Hello, version=PROTOCOL_VERSION)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), version=st.sampled_from([PROTOCOL_VERSION, "1.0", "2.0"]))
    def hello(self, i: int, version: str) -> None:
        c = self._pick(i)
        assert c is not None
        self._cmd(c, Hello, version=version)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5))
    def disconnect(self, i: int) -> None:
        c = self._pick(i)
        assert c is not None
        del self.open[c.cid]
        self._deliver(self.hub.disconnect(c.cid, self.h.now))

    @rule(dt=st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.5, 7.0]))
    def tick(self, dt: float) -> None:
        settled = {code for code, r in self.hub.rooms.items() if r.state in ("lobby", "results")}
        self.h.now += dt
        self._deliver(self.hub.tick(self.h.now))
        self._check_after_tick(settled)

    # -- rules: the next natural step, for progress --------------------------------------

    def _advance(self, i: int, pick: int) -> None:
        c = self._pick(i)
        assert c is not None
        conn = self.hub.conns[c.cid]
        room, member = conn.room, conn.member
        if not conn.hello:
            self._cmd(c, Hello, version=PROTOCOL_VERSION)
        elif room is None or member is None:
            codes = sorted(self.hub.rooms)
            if codes and pick % 4:
                name = NAMES[pick % 5]
                self._cmd(c, JoinRoom, code=codes[pick % len(codes)], name=name, bot=pick % 7 == 0)
            else:
                self._cmd(c, CreateRoom, name=NAMES[pick % 5], settings=SETTINGS[pick % 6])
        elif room.state == "lobby":
            if member.id == room.host and pick % 3 == 0:
                self._cmd(c, Start)
            else:
                self._cmd(c, Ready, ready=True)
        elif room.state == "countdown":
            self.tick(0.1)
        elif room.state == "racing":
            if self._racer(c) and pick % 6 == 0:
                self._cmd(c, MoveCmd, move=WireMove(kind="resign"))
            elif self._racer(c):
                self.play(i, pick, 3)
            else:
                self.tick(0.3)
        else:
            self._cmd(c, Rematch if pick % 5 else Start)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), pick=st.integers(0, 1000))
    def advance(self, i: int, pick: int) -> None:
        self._advance(i, pick)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), pick=st.integers(0, 1000))
    def advance_more(self, i: int, pick: int) -> None:
        self._advance(i, pick)

    # -- rules: rooms ------------------------------------------------------------------------

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), s=st.integers(0, len(SETTINGS) - 1), n=st.integers(0, 9))
    def create_room(self, i: int, s: int, n: int) -> None:
        c = self._pick(i)
        assert c is not None
        self._cmd(c, CreateRoom, name=NAMES[n], settings=SETTINGS[s])

    @precondition(lambda self: self.open and self.hub.rooms)
    @rule(
        i=st.integers(0, 5),
        r=st.integers(0, 4),
        n=st.integers(0, 9),
        spectate=st.booleans(),
        bot=st.booleans(),
        wrong=st.sampled_from([None, None, None, None, None, "ZZZZ-ZZZZ", "abcd"]),
    )
    def join_room(
        self, i: int, r: int, n: int, spectate: bool, bot: bool, wrong: str | None
    ) -> None:
        c = self._pick(i)
        assert c is not None
        codes = sorted(self.hub.rooms)
        code = wrong or display_code(codes[r % len(codes)]).lower()
        self._cmd(c, JoinRoom, code=code, name=NAMES[n], spectate=spectate, bot=bot)

    @precondition(lambda self: self.open and self.tokens)
    @rule(i=st.integers(0, 5), t=st.integers(0, 30), bad=st.integers(0, 5))
    def resume(self, i: int, t: int, bad: int) -> None:
        c = self._pick(i)
        assert c is not None
        code, token = self.tokens[-1 - t % len(self.tokens)]
        if bad == 1:
            token = "x" * 20
        elif bad == 2:
            code = "ZZZZZZZZ"
        self._cmd(c, Resume, code=code, token=token)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5))
    def leave(self, i: int) -> None:
        c = self._pick(i)
        assert c is not None
        self._cmd(c, Leave)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), who=st.integers(0, 8))
    def kick(self, i: int, who: int) -> None:
        c = self._pick(i, lambda c: self._room_of(c) is not None) or self._pick(i)
        assert c is not None
        self._cmd(c, Kick, id=who)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), s=st.integers(0, len(SETTINGS) - 1))
    def update_settings(self, i: int, s: int) -> None:
        c = self._pick(i, lambda c: self._room_of(c) is not None) or self._pick(i)
        assert c is not None
        self._cmd(c, UpdateSettings, settings=SETTINGS[s])

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5))
    def list_rooms(self, i: int) -> None:
        c = self._pick(i)
        assert c is not None
        answers = self._cmd(c, ListRooms)
        if isinstance(answers[0], RoomList):
            for s in answers[0].rooms:
                room = self.hub.rooms.get(s.code)
                assert room is not None and not room.settings.private, "listed: gone or private"

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), r=st.integers(0, 10))
    def get_race(self, i: int, r: int) -> None:
        c = self._pick(i)
        assert c is not None
        ids = list(self.hub.finished)
        live = [rid for rid, race in self.races.items() if race.ended_at is None]
        pool = ids + live + ["0123456789ab"]
        race_id = pool[r % len(pool)]
        answers = self._cmd(c, GetRace, race_id=race_id)
        if race_id in live and race_id not in self.hub.finished:
            assert isinstance(answers[0], Error), "a record of a race not over"

    # -- rules: the race ---------------------------------------------------------------------

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5), ready=st.sampled_from([True, True, False]))
    def ready(self, i: int, ready: bool) -> None:
        c = self._pick(i, lambda c: self._room_of(c) is not None) or self._pick(i)
        assert c is not None
        self._cmd(c, Ready, ready=ready)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5))
    def start(self, i: int) -> None:
        c = self._pick(i, lambda c: self._room_of(c) is not None) or self._pick(i)
        assert c is not None
        self._cmd(c, Start)

    @precondition(lambda self: self.open)
    @rule(i=st.integers(0, 5))
    def rematch(self, i: int) -> None:
        c = self._pick(i, lambda c: self._room_of(c) is not None) or self._pick(i)
        assert c is not None
        self._cmd(c, Rematch)

    def _racer(self, c: ConnModel) -> bool:
        room, member = self._room_of(c), self._member(c)
        return (
            room is not None
            and room.state == "racing"
            and member is not None
            and room.race is not None
            and member.id in room.race.seats
            and room.race.seats[member.id].status == "playing"
        )

    @precondition(lambda self: any(self._racer(c) for c in self.open.values()))
    @rule(i=st.integers(0, 5), pick=st.integers(0, 10**6), n=st.integers(1, 6))
    def play(self, i: int, pick: int, n: int) -> None:
        """A few legal moves of the player's own game (an undo now and then)."""
        c = self._pick(i, self._racer)
        assert c is not None
        for k in range(n):
            if not self._racer(c):
                return
            room, member = self._room_of(c), self._member(c)
            state = room.race.seats[member.id].state
            moves = [to_wire(m) for m in state.legal_moves()]
            moves.append(WireMove(kind="undo"))
            wire = moves[(pick + 7 * k) % len(moves)]
            self._cmd(c, MoveCmd, move=wire)

    @precondition(lambda self: self.open)
    @rule(
        i=st.integers(0, 5),
        kind=st.sampled_from(["tableau", "foundation", "deal", "redeal", "undo", "resign"]),
        src=st.integers(-1, 15),
        dst=st.integers(-1, 15),
        count=st.integers(0, 14),
    )
    def random_move(self, i: int, kind: Any, src: int, dst: int, count: int) -> None:
        """Any move, by anyone (spectators, players done, outside a race)."""
        c = self._pick(i)
        assert c is not None
        self._cmd(c, MoveCmd, move=WireMove(kind=kind, src=src, dst=dst, count=count))

    # -- rules: sequence numbers -------------------------------------------------------------

    @precondition(lambda self: any(c.sent for c in self.open.values()))
    @rule(i=st.integers(0, 5), k=st.integers(0, 40))
    def repeat(self, i: int, k: int) -> None:
        """A command sent again with its own number: its first answer, never done twice (or
        bad_message once it is forgotten)."""
        c = self._pick(i, lambda c: bool(c.sent))
        assert c is not None
        domain = self._domain(c)
        mine = [s for s in c.sent if s.domain == domain]
        if not mine:
            return
        old = mine[-1 - k % len(mine)]
        answers = self._send(c, old.cmd, repeat=old)
        first = answers[0]
        if isinstance(old.cmd, ListRooms | GetRace):
            return  # answered afresh
        if isinstance(first, Error) and first.message.startswith("too many messages"):
            return
        got = [encode(a) for a in answers]
        # one of the last two this connection sent, here, is still remembered (16 are): the
        # same answer (not "the last two sent here": numbers a seat used, taken on after a
        # leave, push out the connection's older ones)
        forgotten = (
            isinstance(first, Error) and first.code == "bad_message" and old not in c.sent[-2:]
        )
        assert got == [encode(decode(f)) for f in old.frames] or forgotten, (
            f"{old.cmd.type} seq {old.seq} sent again: {[a.type for a in answers]}, first "
            f"{[decode(f).type for f in old.frames]}"
        )

    @precondition(lambda self: CHECK_SEQ_ACROSS_SEATS and any(c.sent for c in self.open.values()))
    @rule(i=st.integers(0, 5), k=st.integers(0, 40))
    def repeat_across_seats(self, i: int, k: int) -> None:
        """As :meth:`repeat`, whatever seat the connection had then."""
        c = self._pick(i, lambda c: bool(c.sent))
        assert c is not None
        old = c.sent[-1 - k % len(c.sent)]
        if isinstance(old.cmd, ListRooms | GetRace):
            return
        answers = self._send(c, old.cmd, repeat=old)
        first = answers[0]
        if isinstance(first, Error) and first.message.startswith("too many messages"):
            return
        forgotten = isinstance(first, Error) and first.code == "bad_message"
        got = [encode(a) for a in answers]
        assert got == [encode(decode(f)) for f in old.frames] or forgotten, (
            f"{old.cmd.type} seq {old.seq} sent again: {[a.type for a in answers]}"
        )

    @precondition(lambda self: any(c.next_seq > 1 for c in self.open.values()))
    @rule(i=st.integers(0, 5), back=st.integers(1, 30))
    def stale_seq(self, i: int, back: int) -> None:
        """Another command with a number already used: refused, and not done."""
        c = self._pick(i, lambda c: c.next_seq > 1)
        assert c is not None
        seq = max(0, c.next_seq - back)
        cmd = Ready(seq=seq, ready=True)
        # the same command with this number sent before (by any connection: numbers are small
        # and shared, so this is loose) may be a true repeat: then its Ack must change nothing,
        # as a repeat's answer (checked by _send), and a new command never runs
        same = cmd in self.history.get(seq, [])
        repeat = Sent(seq, cmd, (encode(Ack(seq=seq)),), self._domain(c)) if same else None
        answers = self._send(c, cmd, repeat=repeat)
        first = answers[0]
        assert isinstance(first, Error) or same, f"a number used ({seq}) ran a new command"

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def bindings_are_consistent(self) -> None:
        hub = self.hub
        assert set(hub.conns) == set(self.open), "the hub's connections are not the open ones"
        for cid, conn in hub.conns.items():
            assert (conn.room is None) == (conn.member is None)
            if conn.room is not None:
                assert hub.rooms.get(conn.room.code) is conn.room, "bound to a closed room"
                assert conn.room.members.get(conn.member.id) is conn.member, "bound to a gone seat"
                assert conn.member.conn == cid, "the seat points to another connection"
        for room in hub.rooms.values():
            conns = [m.conn for m in room.members.values() if m.conn is not None]
            assert len(conns) == len(set(conns)), "one connection on two seats"
            for m in room.members.values():
                if m.conn is not None:
                    conn = hub.conns.get(m.conn)
                    assert conn is not None, "a seat bound to a closed connection"
                    assert conn.member is m, "a seat's connection is elsewhere"
            away = {m.id for m in room.members.values() if m.conn is None}
            assert room.away == away, f"away {room.away} but unconnected {away}"

    @invariant()
    def tables_are_bounded(self) -> None:
        hub, limits = self.hub, self.hub.limits
        assert len(hub.rooms) <= limits.max_rooms
        per_address: dict[str, int] = {}
        for c in self.open.values():
            per_address[c.peer] = per_address.get(c.peer, 0) + 1
        assert hub.per_address == per_address
        assert all(n <= limits.max_per_address for n in per_address.values())
        owned: dict[str, int] = {}
        for room in hub.rooms.values():
            if room.owner:
                owned[room.owner] = owned.get(room.owner, 0) + 1
        assert hub.rooms_per_address == owned
        assert all(n <= limits.max_rooms_per_address for n in owned.values())
        for conn in hub.conns.values():
            assert len(conn.seqs.answers) <= SeqCache.SIZE
        for room in hub.rooms.values():
            assert room.members, "an empty room stays open"
            assert len(room.spectators()) <= MAX_SPECTATORS
            assert len(room.players()) <= room.settings.seats, "more players than seats"
            assert len(room.removed) <= MAX_KEPT_OUT
            for m in room.members.values():
                assert len(m.seqs.answers) <= SeqCache.SIZE
                assert set(m.seqs.kinds) <= set(m.seqs.answers)
        assert len(hub.finished) <= 256

    @invariant()
    def rooms_are_sound(self) -> None:
        for room in self.hub.rooms.values():
            assert room.host in room.members, "the host is not in the room"
            host = room.members[room.host]
            people = [m for m in room.members.values() if not m.bot]
            assert not host.bot or not people, "a bot hosts while a person is in the room"
            if room.state in ("lobby", "results"):
                assert people, "a room of bots alone, out of a race"
            if room.state == "lobby":
                assert any(m.role == "player" or m.wants_seat for m in people), (
                    "a lobby nobody can start"
                )
                assert room.race is None
            if room.state in ("countdown", "racing", "results"):
                assert room.race is not None
            if room.state == "results":
                assert room.race is not None and room.race.ended_at is not None
            if room.state == "racing":
                assert room.race is not None and room.race.running
            # everyone connected ready, two at least: the countdown started (or waits, said so)
            players = room.players()
            # (a player who dropped unready holds the start until a ready or the grace:
            # test_the_last_player_not_ready_dropping_holds_the_start_until_the_grace; one
            # ready and gone for a while would not race, and is not counted)
            ready = [p for p in players if p.ready and p.conn is not None]
            waiting = [p for p in players if not p.ready]
            if room.state == "lobby" and len(ready) >= 2 and not waiting:
                assert room.code in self.hub.awaiting_start, (
                    "every connected player is ready and the countdown did not start"
                )
            # every connected player asked for the rematch: back to the lobby
            if room.state == "results":
                connected = [p for p in players if p.conn is not None]
                if connected:
                    assert not all(p.rematch for p in connected), "everyone asked: no rematch"

    def _check_after_tick(self, settled: set[str]) -> None:
        """What the tick must have done; ``settled``: the rooms in their lobby or results
        before it (a race that ended in this tick has its away members removed at the next:
        test_hub's own test)."""
        now, limits = self.h.now, self.hub.limits
        for room in self.hub.rooms.values():
            assert not (
                room.state == "countdown"
                and room.countdown_end is not None
                and now >= room.countdown_end
            ), "a countdown past its end"
            race = room.race
            if room.state == "racing" and race is not None:
                assert race.deadline is None or now < race.deadline, "a race past its time limit"
                for s in race.seats.values():
                    m = room.members.get(s.id)
                    if s.status == "playing" and m is not None and m.away_since is not None:
                        assert now - m.away_since < limits.grace_s, "a racer away past the grace"
            if room.state in ("lobby", "results") and room.code in settled:
                for m in room.members.values():
                    if m.away_since is not None:
                        assert now - m.away_since < limits.grace_s, "a member away past the grace"


TestHubMachine = HubMachine.TestCase
TestHubMachine.settings = settings(
    derandomize=True,
    max_examples=120,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


# -- what the machine found, as plain repros ------------------------------------------------------


def test_a_number_used_in_a_seat_is_not_taken_again_after_leave() -> None:
    """After leave (or kick) a connection's numbers fell back to its own cache, which never saw
    the numbers its seat used: one already used was taken for a new command."""
    h = Harness()
    _code, (_ann, bob), _ = h.room(None, "Ann", "Bob")
    assert isinstance(h.cmd(bob, Ready(seq=5)), Ack)
    assert isinstance(h.cmd(bob, Leave(seq=6)), Ack)
    # docs/protocol.md: "another command sent with a number already answered is refused with
    # bad_message ... and not done"; seq 5 was answered (ready), on this very connection
    again = h.cmd(bob, CreateRoom(seq=5, name="Bob", settings=Settings()))
    assert isinstance(again, Error) and again.code == "bad_message"
    assert h.hub.conns[bob].room is None  # and no room was opened


def test_a_leave_sent_again_is_answered_the_same() -> None:
    """A leave sent again (its ack lost) was handled afresh: not_in_room, not the same ack."""
    h = Harness()
    _code, (_ann, bob), _ = h.room(None, "Ann", "Bob")
    first = h.cmd(bob, Leave(seq=6))
    assert isinstance(first, Ack)
    # "A command sent again with a seq the server has already answered ... is answered again
    # with the same answer and never applied twice"
    assert h.cmd(bob, Leave(seq=6)) == first


def test_the_last_player_not_ready_dropping_holds_the_start_until_the_grace() -> None:
    """A player who drops while not ready may be back in a moment: the others wait for the next
    ready, or for the seat to be let go after the grace (docs/protocol.md, ``ready``)."""
    h = Harness(grace_s=60.0)
    code, (ann, bob, cy), _ = h.room(None, "Ann", "Bob", "Cy")
    h.cmd(ann, Ready(seq=0))
    h.cmd(bob, Ready(seq=0))
    h.take(h.hub.disconnect(cy, h.now))
    h.tick(30.0)
    assert h.hub.rooms[code].state == "lobby"
    h.tick(31.0)
    assert h.hub.rooms[code].state in ("countdown", "racing")
