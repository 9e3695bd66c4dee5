"""Rooms and their members as plain data: who is in a room, in which role, with which seat,
and what the room looks like on the wire.  No I/O and no clock: the hub (``server.hub``) drives
them, and ``server.durable`` writes them down and reads them back."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from protocol.config import GameConfig
from protocol.messages import (
    Member,
    RaceOver,
    Role,
    RoomInfo,
    RoomState,
    RoomSummary,
    Settings,
    display_code,
)
from protocol.messages import (
    PublicSettings as PublicSettingsModel,
)

from .limits import TokenBucket
from .race import Race

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
"""Room codes: no 0/O, 1/I/L to misread; 8 of these are about 40 bits."""
CODE_LENGTH = 8
MAX_SPECTATORS = 32
MAX_KEPT_OUT = 64
"""Addresses one room keeps out after its host removed someone."""


class SeqCache:
    """The answers to the last :attr:`SIZE` commands, by sequence number, as encoded frames:
    bytes are compact and hold no references for the garbage collector to walk.  With each, the
    type and a digest of the command it answered (none for answers restored from a database
    written before they were kept),
    so that another command sent with a number already used is refused rather than answered
    with the first one's answer and silently dropped (a bot that never counts up, say)."""

    SIZE = 16

    __slots__ = ("answers", "highest", "kinds")

    def __init__(self) -> None:
        self.answers: dict[int, tuple[bytes, ...]] = {}
        self.kinds: dict[int, tuple[str, bytes]] = {}
        self.highest = -1

    def get(self, seq: int) -> tuple[bytes, ...] | None:
        return self.answers.get(seq)

    def seen(self, seq: int, kind: tuple[str, bytes]) -> tuple[bytes, ...] | str | None:
        """A command numbered ``seq`` (of ``kind``: its type and digest) as these numbers know
        it: its answer to send again, a refusal (why, for the client), or None (a new one, or a
        read-only command's, whose answer is made afresh)."""
        again = self.answers.get(seq)
        used = self.kinds.get(seq) if again is not None else None
        if used is not None and used != kind:
            what = used[0] if used[0] != kind[0] else f"another {used[0]}"
            return (
                f"sequence number {seq} was already used for {what}: a command sent again must "
                "be the same, a new one needs a new number"
            )
        if again:
            return again
        if again is None and seq <= self.highest:
            return (
                f"sequence number {seq} is not above {self.highest}, the highest used: each "
                f"command needs a higher one (one sent again is answered again while its "
                f"answer is kept: the last {self.SIZE})"
            )
        return None

    def adopt(self, other: SeqCache) -> None:
        """Take on ``other``'s numbers and answers (a seat's, once its connection is out of the
        room, or the connection's, once it takes a seat): numbers go on increasing, and a
        command sent again is still answered as it was."""
        for seq, frames in sorted(other.answers.items()):
            self.put(seq, frames, other.kinds.get(seq))
        self.highest = max(self.highest, other.highest)

    def put(
        self, seq: int, frames: tuple[bytes, ...], kind: tuple[str, bytes] | None = None
    ) -> None:
        answers = self.answers
        answers.pop(seq, None)  # (put again: it is the newest)
        answers[seq] = frames
        if kind is not None:
            self.kinds[seq] = kind
        if seq > self.highest:
            self.highest = seq
        while len(answers) > self.SIZE:
            oldest = min(answers)  # the lowest number: the oldest, whatever order they came in
            del answers[oldest]
            self.kinds.pop(oldest, None)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class MemberState:
    id: int
    name: str
    role: Role
    token_hash: str
    """sha256 of the seat's token: the token itself is given to its holder and never written down
    (only the seat's memory of its last answers holds the ``joined`` that carried it, so that a
    create or join sent again is answered again; the database keeps that answer's number only)."""
    joined_at: float
    ready: bool = False
    conn: int | None = None
    away_since: float | None = None
    """When the connection dropped (None while connected)."""
    seqs: SeqCache = field(default_factory=SeqCache)
    bot: bool = False
    rematch: bool = False
    """After the results: this player asked for a rematch."""
    wants_seat: bool = False
    """Joined to play while a race was on: seated in the next race if a seat is free."""
    peer: str = ""
    """The address of the member's last connection (kept while away: removed then, it is kept
    out all the same)."""


class Room:
    def __init__(
        self, code: str, settings: Settings, config: GameConfig, now: float, owner: str = ""
    ) -> None:
        self.code = code
        self.owner = owner
        """The address that created the room: it counts toward that address's room budget."""
        self.settings = settings
        self.config = config
        self.created = now
        self.members: dict[int, MemberState] = {}
        self.host: int | None = None
        self.state: RoomState = "lobby"
        self.race: Race | None = None
        self.countdown_end: float | None = None
        self.next_id = 1
        self.progress_dirty = False
        self.progress_sent = 0.0
        self.updates: TokenBucket | None = None
        """The room's budget of room updates (the hub's ``room_update_rate``), made at the
        first update."""
        self.update_pending = False
        self.wait_told = False
        """Its members were told why its countdown waits (once, until a countdown starts)."""
        """A change not yet sent: over that budget, it goes out with the next update."""
        self.state_sent: RoomState | None = None
        """The state the last room update sent (a change of state is sent at once, whatever
        the budget: the events that follow it, a countdown or a race start, need it first)."""
        self.last_over: RaceOver | None = None
        self.removed: OrderedDict[str, float] = OrderedDict()
        """Addresses the host removed someone from, and until when they may not join again
        (at most :data:`MAX_KEPT_OUT`, the oldest forgotten first)."""
        self.kicked: OrderedDict[str, float] = OrderedDict()
        """The seats the host removed (their tokens' sha256), and until when a resume with one
        is told so rather than that the seat is unknown (at most :data:`MAX_KEPT_OUT`)."""
        self.restored_at = 0.0
        """When the room was brought back after a restart (0: it was not)."""
        self.held_until = 0.0
        """After a restart, the room waits this long for its members before it counts as
        abandoned."""
        self.away: set[int] = set()
        """Members whose connection dropped: the clock tick looks only at these."""

    # -- members --------------------------------------------------------------------------

    def players(self) -> list[MemberState]:
        return [m for m in self.members.values() if m.role == "player"]

    def spectators(self) -> list[MemberState]:
        return [m for m in self.members.values() if m.role == "spectator"]

    def add(self, name: str, role: Role, now: float, bot: bool = False) -> tuple[MemberState, str]:
        """A new member, and the secret token of their seat (for their ``joined`` only)."""
        token = secrets.token_urlsafe(24)
        member = MemberState(self.next_id, name, role, token_hash(token), now, bot=bot)
        self.next_id += 1
        self.members[member.id] = member
        if self.host is None and role == "player":
            self.host = member.id
        return member, token

    def holder(self, token: str) -> MemberState | None:
        """The member whose seat ``token`` holds, if any (compared in constant time)."""
        digest = token_hash(token)
        found = None
        for m in self.members.values():
            if secrets.compare_digest(m.token_hash, digest):
                found = m
        return found

    def remove(self, member_id: int) -> None:
        self.members.pop(member_id, None)
        self.away.discard(member_id)
        if self.host == member_id:
            # a person who plays, connected first; never a bot while a person is left (a bot
            # host cannot start, change or remove anything: the room was stuck)
            people = [m for m in self.members.values() if not m.bot]
            ranked = sorted(
                people or list(self.members.values()),
                key=lambda m: (m.role != "player", m.conn is None, m.id),
            )
            self.host = ranked[0].id if ranked else None

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
            title=self.config.title + (", winnable" if s.winnable else ""),
            winnable=s.winnable,
        )

    def keep_out(self, address: str, until: float) -> None:
        self.removed[address] = until
        self.removed.move_to_end(address)
        while len(self.removed) > MAX_KEPT_OUT:
            self.removed.popitem(last=False)

    def was_kicked(self, token: str, now: float) -> bool:
        """Whether ``token`` held a seat the host removed (lately: see :attr:`kicked`)."""
        digest = token_hash(token)
        for held, until in list(self.kicked.items()):
            if now >= until:
                del self.kicked[held]
            elif secrets.compare_digest(held, digest):
                return True
        return False

    def kept_out(self, address: str, now: float) -> float | None:
        """Until when ``address`` may not join (None: it may)."""
        until = self.removed.get(address)
        if until is None or now >= until:
            self.removed.pop(address, None)
            return None
        return until

    def info(self) -> RoomInfo:
        race = self.race
        return RoomInfo(
            code=self.code,
            state=self.state,
            settings=self.public_settings(),
            members=[
                Member(
                    id=m.id,
                    name=m.name,
                    role=m.role,
                    ready=m.ready,
                    connected=m.conn is not None,
                    host=m.id == self.host,
                    bot=m.bot,
                    rematch=m.rematch,
                    to_race=m.wants_seat,
                )
                for m in self.members.values()
            ],
            race_id=race.race_id if race else None,
            commitment=race.commitment if race else None,
        )

    def summary(self) -> RoomSummary:
        return RoomSummary(
            code=self.code,
            state=self.state,
            title=self.config.title,
            mode=self.settings.mode,
            players=len(self.players()),
            seats=self.settings.seats,
            spectators=len(self.spectators()),
            time_limit=self.settings.time_limit,
        )


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def log_label(code: str, private: bool, key: bytes) -> str:
    """How the logs name a room: a public room by its code (it is listed for all to see), a
    private one by ``private-`` and a keyed hash of its code, the same for the room's whole life
    and across restarts (``key`` is kept in the database), that nobody can turn back into the
    code: a private code is what lets a stranger in, and logs go where the database does not
    (journald, log shippers, whoever reads them)."""
    if not private:
        return display_code(code)
    return "private-" + hmac.new(key, code.encode(), hashlib.sha256).hexdigest()[:10]
