"""What the hub's handlers answer with: the :class:`Outbox` of events and closes, the record of
a connection (:class:`Conn`), the errors a command can end in, and the close codes
(docs/protocol.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.codec import encode
from protocol.messages import ErrorCode, Event, RoomUpdate

from .limits import TokenBucket
from .rooms import MemberState, Room, SeqCache

# Close codes (docs/protocol.md)
CLOSE_BAD_INPUT = 4400
CLOSE_VERSION = 4426
CLOSE_FLOOD = 4429
CLOSE_IDLE = 4408
CLOSE_REPLACED = 4409
CLOSE_RESTART = 1012
CLOSE_FULL = 1013
CLOSE_SLOW = 4413
"""The connection's output stayed over its bound: the peer does not read."""


class CommandError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Redirected(Exception):
    """The room (or finished race) ``code`` is held by another node of the cluster, at ``url``."""

    def __init__(self, code: str, node: str, url: str) -> None:
        super().__init__(f"{code} is on node {node}")
        self.code = code
        self.node = node
        self.url = url


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
    whether or not it is also kept in a :class:`SeqCache`.  A ``room`` event that would follow
    another to the same connection with nothing between them takes its place: the room as it
    is now says all the first did (a removal sent the host the room twice: a trial of a client
    written from the docs)."""

    sends: list[tuple[int, Event | bytes]] = field(default_factory=list)
    closes: list[Close] = field(default_factory=list)
    replies: list[Event] = field(default_factory=list)
    """The direct answers to the command handled, kept to answer a repeated sequence number."""
    _frames: dict[int, tuple[Event, bytes]] = field(default_factory=dict, repr=False)
    """id -> the event (held, so that its id is not reused while here) and its frame."""
    rooms_sent: set[str] = field(default_factory=set)
    """The rooms whose ``room`` event this outbox holds (a second one of the same command is
    the same update, made later: it costs the room's budget of updates nothing more)."""
    _room_last: dict[int, int] = field(default_factory=dict, repr=False)
    """Connection -> where in ``sends`` the ``room`` event is that is the last thing sent to it."""

    def reply(self, conn: int, event: Event) -> None:
        self.send(conn, event)
        self.replies.append(event)

    def send(self, conn: int, event: Event | bytes) -> None:
        if isinstance(event, RoomUpdate):
            at = self._room_last.get(conn)
            if at is not None:
                self.sends[at] = (conn, event)
                return
            self._room_last[conn] = len(self.sends)
        else:
            self._room_last.pop(conn, None)
        self.sends.append((conn, event))

    def close(self, conn: int, code: int, reason: str) -> None:
        self.closes.append(Close(conn, code, reason))

    def frame(self, event: Event | bytes) -> bytes:
        """``event`` as it goes on the wire (encoded once per outbox)."""
        if isinstance(event, bytes):
            return event
        kept = self._frames.get(id(event))
        if kept is None:
            kept = self._frames[id(event)] = (event, encode(event))
        return kept[1]


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
    """Bad messages not yet forgiven (one each :attr:`~server.limits.Limits.bad_forget_s`)..."""
    bad_at: float = 0.0
    """...counted from then."""
    limited: int = 0
    last_seen: float = 0.0
