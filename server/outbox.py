"""What the hub's handlers answer with: the :class:`Outbox` of events and closes, the record of
a connection (:class:`Conn`), the errors a command can end in, and the close codes
(docs/protocol.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.codec import encode
from protocol.messages import ErrorCode, Event

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
